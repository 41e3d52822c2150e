"""The MCP tools: wire schema in, one graph call, result out.

`base` defines what a tool is and `budget` keeps read answers within what a client
can take; each other module holds one family of tools. `ALL_TOOLS` lists every tool
graphmem has; the toolsets choose which of them a server lists.
"""

from graphmem.tools.base import ToolContext, ToolOutput, ToolSpec, dump_json
from graphmem.tools.context import CONTEXT_TOOLS
from graphmem.tools.export import EXPORT_TOOLS
from graphmem.tools.history import HISTORY_TOOLS
from graphmem.tools.maintenance import MAINTENANCE_TOOLS
from graphmem.tools.navigation import NAVIGATION_TOOLS
from graphmem.tools.official import OFFICIAL_TOOLS
from graphmem.tools.projects import PROJECT_TOOLS
from graphmem.tools.quality import QUALITY_TOOLS
from graphmem.tools.query import QUERY_TOOLS
from graphmem.tools.traversal import TRAVERSAL_TOOLS

# Every family appends its tuple here.
ALL_TOOLS: tuple[ToolSpec, ...] = (
    OFFICIAL_TOOLS
    + QUALITY_TOOLS
    + CONTEXT_TOOLS
    + NAVIGATION_TOOLS
    + QUERY_TOOLS
    + TRAVERSAL_TOOLS
    + MAINTENANCE_TOOLS
    + EXPORT_TOOLS
    + PROJECT_TOOLS
    + HISTORY_TOOLS
)

__all__ = ["ALL_TOOLS", "OFFICIAL_TOOLS", "ToolContext", "ToolOutput", "ToolSpec", "dump_json"]

"""The MCP tools: wire schema in, one graph call, result out.

`base` defines what a tool is; each other module holds one family of tools.
"""

from graphmem.tools.base import ToolContext, ToolOutput, ToolSpec, dump_json
from graphmem.tools.official import OFFICIAL_TOOLS

TOOLS = OFFICIAL_TOOLS

__all__ = ["OFFICIAL_TOOLS", "TOOLS", "ToolContext", "ToolOutput", "ToolSpec", "dump_json"]

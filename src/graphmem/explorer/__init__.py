"""The explorer: a page in the browser to see the memory and correct it, served by `serve --http`.

`routes` serves the page (`static/`, with its vendored Cytoscape.js and fCoSE) and its JSON
routes; `views` answers the reads, each bounded whatever the memory's size; `edits` turns each
correction into the tool call an agent would make; `scopes` decides which projects a request
sees. It sits beside the transports: the HTTP transport mounts it, and it reaches the memory
through the server's state as the tools do.
"""

from graphmem.explorer.routes import Explorer

__all__ = ["Explorer"]

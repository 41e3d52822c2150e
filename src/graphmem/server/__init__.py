"""The MCP server: what it is built from and what it answers, whatever transport carries it.

build.py           build_server(settings): the tools, resources, prompts and logging
store_access.py    how calls reach the store, and wait for another process's lock
request_errors.py  refusals of requests the server cannot serve
instructions.py    the server instructions, naming only the tools it lists
prompts.py         the prompts it offers
client_log.py      log records on their way to the clients that asked for them
notices.py         resource updates and log messages, on the stream each revision expects
"""

from graphmem.server.build import GRAPH_URI, AppState, build_server, end_listen_streams, initialization_options

__all__ = ["GRAPH_URI", "AppState", "build_server", "end_listen_streams", "initialization_options"]

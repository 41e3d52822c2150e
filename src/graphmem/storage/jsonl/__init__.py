"""The JSONL backend: the drop-in store over the official server's memory file.

store.py   JsonlStore
format.py  the official JSONL file format, read and written byte for byte
"""

from graphmem.storage.jsonl.store import JsonlStore

__all__ = ["JsonlStore"]

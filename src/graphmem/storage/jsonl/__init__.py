"""The JSONL backend: the drop-in store over the official server's memory file.

store.py     JsonlStore: opening, the file lock, loading and saving the file, transactions and their scope
tables.py    the rows in memory, their indexes, and the journal a rollback undoes
reads.py     reads and searches over the rows in memory
writes.py    inserts, updates and deletes on the rows in memory
projects.py  moving entities and relations between projects, counting and deleting a project
format.py    the official JSONL file format, read and written byte for byte
"""

from graphmem.storage.jsonl.store import JsonlStore

__all__ = ["JsonlStore"]

"""The values every layer shares, importing nothing else from graphmem.

models.py      the knowledge graph's value types: frozen dataclasses with no I/O
errors.py      every exception graphmem raises, under `GraphmemError`
identity.py    who is calling: a token's name and whether it may write
limits.py      the documented limits on what one call may send
paths.py       how long a memory path may be: the system's limits, checked before opening
timestamps.py  times as the metadata writes them: ISO 8601 in UTC, to the millisecond
validation.py  the quality rules that keep what a model saves atomic and connected
"""

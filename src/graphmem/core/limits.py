"""The documented limits on what one call may send, so no request can exhaust the server.

They are generous enough that no sensible use of the official tools meets them, and
the docs list them (Serving many clients, Limits). Past a limit the call fails with a
message naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-call limits, in characters (strings) and items (lists)."""

    max_name_length: int = 1000
    """Entity names, entity types and relation types."""

    max_observation_length: int = 10_000
    """One observation's text."""

    max_query_length: int = 2048
    """`search_nodes` query (the limit upstream adopted); each one of a list of queries."""

    max_search_queries: int = 100
    """Queries in one `search_nodes` call that passes a list."""

    max_page_size: int = 1000
    """The largest `limit` a paged read takes."""

    max_offset: int = 1_000_000_000
    """The largest `offset` of a paged read, and its `limit` where the page size has no
    smaller cap (past 2^63 SQLite cannot even take the number)."""

    max_query_offset: int = 100_000
    """The largest `offset` query_nodes takes: a database walks every entity an offset skips,
    and its filters are the way to narrow a look-up further."""

    max_batch_items: int = 1000
    """Entities, relations, names or deletions in one call."""

    max_observations_per_item: int = 1000
    """Observations given for one entity in one call."""

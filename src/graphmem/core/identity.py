"""Who is calling: the name of the token a client presented, and whether it may write."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Identity"]


@dataclass(frozen=True, slots=True)
class Identity:
    """The holder of one token of the network server.

    Attributes:
        name: the token's name in the tokens file, recorded as the author of each change;
            None for the single token of --token-file / GRAPHMEM_TOKEN, whose changes
            record no author (as over stdio).
        can_write: whether the token may call tools that change the memory.
        projects: the projects the token may reach (each sees the shared space too), the first
            its default; None for every project, the server's by default.
    """

    name: str | None
    can_write: bool = True
    projects: tuple[str, ...] | None = None

    @property
    def access(self) -> str:
        """`write` or `read`, as the tokens file spells it."""
        return "write" if self.can_write else "read"

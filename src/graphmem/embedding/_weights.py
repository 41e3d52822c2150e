"""Tensors of a .safetensors file, mapped read-only instead of read.

The format is an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
shape and byte range, then the raw bytes. Mapping the file (rather than loading it) means the
pages are the page cache's: several graphmem processes share them, and of the 30522 x 384
word-embedding table only the rows of words actually seen are ever read from disk.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["map_tensors"]

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def map_tensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """Every tensor of the file at `path`, as read-only arrays backed by one shared mapping.

    The file is trusted: graphmem checks its sha256 before mapping it, so its layout is known.
    """
    with path.open("rb") as stream:
        (header_length,) = struct.unpack("<Q", stream.read(8))
        header: dict[str, Any] = json.loads(stream.read(header_length))
    data_start = 8 + header_length
    mapped = np.memmap(path, dtype=np.uint8, mode="r")
    tensors: dict[str, npt.NDArray[Any]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        dtype = np.dtype(_DTYPES[entry["dtype"]])
        shape = tuple(entry["shape"])
        # A view into the one mapping: no copy, no read until a page is touched.
        tensors[name] = np.asarray(mapped[data_start + begin : data_start + end]).view(dtype).reshape(shape)
    return tensors

"""Tensors of a .safetensors file, mapped read-only, or read where the caller asks.

The format is an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
shape and byte range, then the raw bytes. Mapping the file (rather than loading it) means the
pages are the page cache's: several graphmem processes share them, and of the 30522 x 384
word-embedding table only the rows of words actually seen are ever read from disk. A tensor the
caller will rearrange anyway (a layer's weights, transposed once for speed) is read instead, so
that its pages never enter the process's mapping and are not counted twice.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["load_tensors"]

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def load_tensors(path: Path, read: Callable[[str], bool]) -> dict[str, npt.NDArray[Any]]:
    """Every tensor of the file at `path`: read into memory where `read(name)`, else mapped read-only.

    The file is trusted: graphmem checks its sha256 before loading it, so its layout is known.
    """
    tensors: dict[str, npt.NDArray[Any]] = {}
    with path.open("rb") as stream:
        (header_length,) = struct.unpack("<Q", stream.read(8))
        header: dict[str, Any] = json.loads(stream.read(header_length))
        data_start = 8 + header_length
        mapped = np.memmap(path, dtype=np.uint8, mode="r")
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            begin, end = entry["data_offsets"]
            dtype = np.dtype(_DTYPES[entry["dtype"]])
            shape = tuple(entry["shape"])
            if read(name):
                stream.seek(data_start + begin)
                raw = np.fromfile(stream, dtype=np.uint8, count=end - begin)
            else:
                # A view into the one mapping: no copy, no read until a page is touched.
                raw = np.asarray(mapped[data_start + begin : data_start + end])
            tensors[name] = raw.view(dtype).reshape(shape)
    return tensors

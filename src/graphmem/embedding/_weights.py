"""Tensors of a .safetensors file: mapped read-only, read into memory, or read by the row.

The format is an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
shape and byte range, then the raw bytes. A small tensor is mapped (its pages are the page
cache's, shared by every graphmem process). A tensor the caller rearranges anyway (a layer's
weights, transposed once for speed) is read, so that its pages never enter the process's
mapping and are not counted twice. The 30522 x 384 word-embedding table, of which a text needs
a few rows, is read a few rows at a time (`FileRows`).
"""

from __future__ import annotations

import json
import os
import struct
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["FileRows", "load_tensors"]

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def _header(path: Path) -> tuple[int, dict[str, Any]]:
    with path.open("rb") as stream:
        (header_length,) = struct.unpack("<Q", stream.read(8))
        return 8 + header_length, json.loads(stream.read(header_length))


class FileRows:
    """The rows of a 2-D tensor, left in the file and read when asked for.

    For the word-embedding table (47 MB, of which a text needs a few rows): read with
    `pread`, the rows' pages stay the page cache's and never count as the process's memory,
    where a mapping counts every page it has touched for as long as the process lives, and a
    server that has embedded a varied memory has touched most of them. A read of a few
    hundred rows costs well under a millisecond beside the model's work. Where `pread` does
    not exist (Windows), the rows are read through a mapping instead.
    """

    def __init__(self, path: Path, name: str) -> None:
        data_start, header = _header(path)
        entry = header[name]
        self.dtype = np.dtype(_DTYPES[entry["dtype"]])
        rows, self.width = entry["shape"]
        self._row_bytes = self.width * self.dtype.itemsize
        self._start = data_start + entry["data_offsets"][0]
        self._mapped: npt.NDArray[Any] | None = None
        if not hasattr(os, "pread"):  # pragma: no cover - Windows
            self._mapped = np.memmap(path, dtype=self.dtype, mode="r", offset=self._start, shape=(rows, self.width))
            return
        self._fd = os.open(path, os.O_RDONLY)
        weakref.finalize(self, os.close, self._fd)

    def take(self, ids: npt.NDArray[np.intp]) -> npt.NDArray[Any]:
        """The rows at `ids`, in that order, as a new array of shape (len(ids), width)."""
        if self._mapped is not None:  # pragma: no cover - Windows
            return np.asarray(self._mapped[ids])
        distinct, where = np.unique(ids, return_inverse=True)
        rows = np.empty((len(distinct), self.width), dtype=self.dtype)
        for place, row in enumerate(distinct.tolist()):
            rows[place] = np.frombuffer(
                os.pread(self._fd, self._row_bytes, self._start + row * self._row_bytes), self.dtype
            )
        return rows[where.reshape(-1)]


def load_tensors(path: Path, read: Callable[[str], bool]) -> dict[str, npt.NDArray[Any]]:
    """Every tensor of the file at `path`: read into memory where `read(name)`, else mapped read-only.

    The file is trusted: graphmem checks its sha256 before loading it, so its layout is known.
    """
    tensors: dict[str, npt.NDArray[Any]] = {}
    data_start, header = _header(path)
    with path.open("rb") as stream:
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

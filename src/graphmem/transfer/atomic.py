"""Putting an output file in place atomically: a temp file beside it, fsync, rename."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

from graphmem.storage.files import fsync_directory

__all__ = ["write_atomically"]

T = TypeVar("T")


def write_atomically(path: Path, write: Callable[[IO[bytes]], T]) -> T:
    """Call `write` on a temp file beside `path`, then rename it over `path`.

    A failure (or a crash) leaves `path` as it was. A new file is readable by its owner
    only, as the memory it comes from; a file that is replaced keeps its mode. A path that
    is not a regular file (a pipe, `/dev/stdout`) cannot be replaced and is written in place.
    """
    # Through a symlink to the real file: renaming over the link would cut it.
    target = Path(os.path.realpath(path))
    try:
        status = os.stat(target)
    except FileNotFoundError:
        mode = 0o600
    else:
        if not stat.S_ISREG(status.st_mode):
            with open(target, "wb") as device:
                return write(device)
        mode = stat.S_IMODE(status.st_mode)
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as temp:
            os.fchmod(temp.fileno(), mode)
            result = write(temp)
            temp.flush()
            os.fsync(temp.fileno())
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    fsync_directory(target.parent)
    return result

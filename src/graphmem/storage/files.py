"""File-system steps that make a renamed file durable."""

from __future__ import annotations

import errno
import os
from pathlib import Path

__all__ = ["fsync_directory"]


def fsync_directory(folder: Path) -> None:
    """Flush a folder's entries, so a file just renamed into it survives a crash."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        # Some file systems cannot fsync a directory; the rename is then as durable as they allow.
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)

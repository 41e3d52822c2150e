"""How long a memory path may be: the system's limits, checked before anything opens the file.

A path past them fails deep inside the backend's open with a traceback; checked here, it is one
line naming the flag or variable it came from.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from graphmem.core.errors import ConfigError

__all__ = ["NAME_MAX", "PATH_MAX", "SIDE_FILE_ROOM", "check_path_length"]

# The system's limits on a name and a whole path (Linux and macOS: 255 and 4096 or 1024 bytes).
NAME_MAX = 255
PATH_MAX = 4096 if sys.platform != "darwin" else 1024

# The longest ending a backend adds to the memory's name for a file beside it: the vector
# index's `-ivf-<16 hex>.partial`, a JSONL backup's `.bak-<time>-<n>`, SQLite's `-journal`.
SIDE_FILE_ROOM = 32


def check_path_length(key: str, raw_path: str, path: Path) -> None:
    """Refuse a memory path the system would refuse, before anything tries to open it.

    Raises:
        ConfigError: a part of `path` is longer than NAME_MAX bytes (less the room its
            files beside it need, for the last part), or the whole is longer than PATH_MAX.
    """
    shown = raw_path if len(raw_path) <= 80 else raw_path[:60] + "…"
    parts = [os.fsencode(part) for part in path.parts]
    if len(os.fsencode(str(path))) + SIDE_FILE_ROOM > PATH_MAX:
        raise ConfigError(
            key,
            shown,
            f"The path is longer than the system allows ({PATH_MAX - SIDE_FILE_ROOM} bytes, leaving room "
            "for the files kept beside the memory); give a shorter one.",
        )
    for index, part in enumerate(parts):
        limit = NAME_MAX - SIDE_FILE_ROOM if index == len(parts) - 1 else NAME_MAX
        if len(part) > limit:
            last = index == len(parts) - 1
            what = "The file name" if last else "A folder name in the path"
            why = f"the system's {NAME_MAX}, less room for the files kept beside the memory" if last else "the system's"
            raise ConfigError(
                key, shown, f"{what} is {len(part)} bytes long, over the {limit} allowed ({why}); give a shorter one."
            )

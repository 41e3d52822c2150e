"""What import and export share about the file they read or write: progress, failures, lone surrogates."""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["LONE_SURROGATE", "PROGRESS_BYTES", "PROGRESS_RECORDS", "Progress", "StreamError"]

# Progress is reported at most once per this many bytes or records: a progress bar
# redraws on every update, which would cost more than the import itself.
PROGRESS_BYTES = 1 << 20
PROGRESS_RECORDS = 1000

LONE_SURROGATE = re.compile("[\ud800-\udfff]")

Progress = Callable[[int], None]


class StreamError(Exception):
    """Carries an OSError of the input or output file through a store transaction.

    The stores turn every OSError raised inside a transaction into a StorageError about
    the memory file; a failure of the file being imported or written is not that.
    """

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error

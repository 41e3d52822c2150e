"""JsonlStore's change log: `<file>.changes.jsonl` beside the memory file, a change a line.

The memory file stays the official server's format, so the log lives beside it. A write
transaction's changes wait in memory and are appended (and fsync'd) once the memory file has
been replaced: a crash between the two leaves the memory right and its history one change
short, never a change in the history that the memory does not hold. A write made by another
program (the official server on the same file) is not in the log.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from graphmem.core.changes import Change, ChangeFilter, ChangePage, NewChange, names_touched
from graphmem.core.projects import Scope
from graphmem.core.timestamps import now_iso
from graphmem.storage.files import fsync_directory

__all__ = ["ChangeFile", "log_path"]


def log_path(memory: Path) -> Path:
    """Where the change log of the memory file `memory` is."""
    return memory.with_name(memory.name + ".changes.jsonl")


class ChangeFile:
    """The change log of one JSONL memory, read whole when asked (a log of thousands of lines
    reads in milliseconds), appended under the memory's write lock."""

    def __init__(self, memory: Path) -> None:
        self._path = log_path(memory)

    def changes(self) -> list[Change]:
        """Every recorded change, oldest first; a line that cannot be read (cut short) is skipped."""
        try:
            text = self._path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        changes = []
        for line in text.splitlines():
            try:
                item = json.loads(line)
                changes.append(
                    Change(item["seq"], item["at"], item.get("author"), item["via"], item.get("project"), item["ops"])
                )
            except (ValueError, KeyError, TypeError):
                continue
        return changes

    def append(self, changes: list[NewChange]) -> None:
        """Number, time and append `changes` (under the memory's write lock)."""
        if not changes:
            return
        seq, last = self._last()
        lines = []
        for change in changes:
            now = now_iso()
            last = now if last is None or now > last else last
            seq += 1
            item = {"seq": seq, "at": last, "author": change.author, "via": change.via, "project": change.project}
            lines.append(json.dumps({**item, "ops": change.ops}, ensure_ascii=False) + "\n")
        fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, "".join(lines).encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)

    def history_since(self) -> str | None:
        """Where the kept history starts: the first line says so once changes were forgotten."""
        try:
            with open(self._path, encoding="utf-8") as file:
                first = json.loads(file.readline() or "{}")
        except (FileNotFoundError, ValueError):
            return None
        since = first.get("historySince") if isinstance(first, dict) else None
        return since if isinstance(since, str) else None

    def forget(self, before: str) -> int:
        """Rewrite the log without the changes made before `before` (a temporary file renamed
        over it), its first line saying where the history now starts; how many went."""
        every = self.changes()
        kept = [change for change in every if change.at >= before]
        gone = len(every) - len(kept)
        since = max(before, self.history_since() or before)
        # The numbers go on from the last one, even when no change is kept.
        last, _ = self._last()
        self._write(kept, {"historySince": since, "lastSeq": last})
        return gone

    def rewrite(self, clean: Callable[[Any], Any]) -> int:
        """Rewrite the log with each change's operations passed through `clean`; how many changed."""
        every = self.changes()
        kept = [replace(change, ops=clean(change.ops)) for change in every]
        changed = sum(after.ops != before.ops for after, before in zip(kept, every, strict=True))
        if changed:
            last, _ = self._last()
            since = self.history_since()
            self._write(kept, None if since is None else {"historySince": since, "lastSeq": last})
        return changed

    def _write(self, changes: list[Change], header: dict[str, Any] | None) -> None:
        """Replace the log by these changes, after `header` as its first line if given (a
        temporary file renamed over it)."""
        lines = [] if header is None else [json.dumps(header) + "\n"]
        for change in changes:
            item = {"seq": change.seq, "at": change.at, "author": change.author, "via": change.via}
            lines.append(json.dumps({**item, "project": change.project, "ops": change.ops}, ensure_ascii=False) + "\n")
        temporary = self._path.with_name(self._path.name + ".tmp")
        with open(temporary, "w", encoding="utf-8") as file:
            file.writelines(lines)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self._path)
        fsync_directory(self._path.parent)

    def _last(self) -> tuple[int, str | None]:
        """The number and time of the last change, read from the end of the file (a write must
        not read the whole log); (0, None) when there is none."""
        try:
            with open(self._path, "rb") as file:
                size = file.seek(0, os.SEEK_END)
                step = 4096
                while True:
                    start = max(0, size - step)
                    file.seek(start)
                    tail = file.read(size - start)
                    lines = tail.split(b"\n")
                    # The first piece may be a line cut by the read's start: only a whole file's counts.
                    for line in reversed(lines if start == 0 else lines[1:]):
                        try:
                            item = json.loads(line)
                            if "lastSeq" in item:  # the first line, once changes were forgotten
                                return int(item["lastSeq"]), None
                            return int(item["seq"]), str(item["at"])
                        except (ValueError, KeyError, TypeError):
                            continue
                    if start == 0:
                        return 0, None
                    step *= 4
        except FileNotFoundError:
            return 0, None

    def page(self, where: ChangeFilter, limit: int, scope: Scope) -> ChangePage:
        """`Store.list_changes` over the file."""
        found: list[Change] = []
        for change in reversed(self.changes()):
            if _matches(change, where, scope):
                found.append(change)
                if len(found) > limit:
                    break
        return ChangePage(found[:limit], len(found) > limit)


def _matches(change: Change, where: ChangeFilter, scope: Scope) -> bool:
    if where.since is not None and change.at < where.since:
        return False
    if where.until is not None and change.at >= where.until:
        return False
    if where.before is not None and change.seq >= where.before:
        return False
    if where.via is not None and change.via != where.via:
        return False
    if where.author is not None and change.author != (where.author or None):
        return False
    named = [(project, name) for project, name in names_touched(change.ops) if scope.sees(project)]
    if where.names:
        return any(
            name == wanted and after < change.seq and (upto is None or change.seq <= upto)
            for _, name in named
            for wanted, after, upto in where.names
        )
    return scope.every or bool(named)

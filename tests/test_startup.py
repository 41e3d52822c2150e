"""Start-up against memories that cannot be opened, and ports that are taken, as a new user's client meets them.

A client starts the server and sends `initialize` at once. When the memory cannot be
opened, the server must say so in one line on stderr (the file, the cause, what to do)
and exit 1, on stdio, HTTP and TCP alike: no hang, no traceback, no answer on stdout.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers_stdio import INITIALIZE, START_SECONDS, server_env
from tests.storage.test_sqlite_damage import damaged_memory

pytestmark = pytest.mark.slow

TRANSPORTS = {"stdio": [], "http": ["serve", "--http", "--port", "0"], "tcp": ["serve", "--tcp", "--port", "0"]}


@contextmanager
def unwritable_folder(path: Path) -> Iterator[Path]:
    """A folder nobody may create files in, root included (where the file system allows it)."""
    path.mkdir(exist_ok=True)
    if os.geteuid() != 0:
        path.chmod(0o555)
        try:
            yield path
        finally:
            path.chmod(0o755)
        return
    # Root ignores permission bits; an immutable folder refuses even root.
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"running as root and chattr +i is refused here ({made.stderr.decode().strip()})")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def _start(
    args: list[str], memory: str, cwd: Path, *, environment: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run graphmem as a client does: `initialize` written at once, stdin closed after it."""
    env = server_env(Path(memory))
    env["MEMORY_FILE_PATH"] = memory
    env.update(environment or {})
    line = json.dumps(INITIALIZE).encode() + b"\n"
    return subprocess.run(
        [sys.executable, "-m", "graphmem", *args],
        input=line,
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=START_SECONDS,
        check=False,
    )


def _assert_one_line_naming(result: subprocess.CompletedProcess[bytes], *words: str) -> str:
    assert result.returncode == 1, result.stderr.decode()
    assert result.stdout == b"", "nothing may reach stdout: a client would read it as an answer"
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, result.stderr.decode()
    assert "Traceback" not in lines[0]
    for word in words:
        assert word in lines[0]
    return lines[0]


def _random_bytes_db(tmp: Path) -> tuple[str, tuple[str, ...]]:
    path = tmp / "x.db"
    path.write_bytes(os.urandom(4096))
    return str(path), (str(path), "not a SQLite database", "--memory-file")


def _folder_in_the_way(tmp: Path) -> tuple[str, tuple[str, ...]]:
    (tmp / "notes").write_text("a file where the memory's folder should be", encoding="utf-8")
    path = tmp / "notes" / "memory.db"
    return str(path), (str(path), "is a file, not a folder")


def _folder_in_the_way_jsonl(tmp: Path) -> tuple[str, tuple[str, ...]]:
    (tmp / "notes").write_text("a file where the memory's folder should be", encoding="utf-8")
    path = tmp / "notes" / "memory.jsonl"
    return str(path), (str(path), "is a file, not a folder")


def _damaged_pages_db(tmp: Path) -> tuple[str, tuple[str, ...]]:
    path = tmp / "memory.db"
    damaged_memory(path)
    return str(path), (str(path), "the database is damaged", "backup")


BROKEN_MEMORIES: dict[str, Callable[[Path], tuple[str, tuple[str, ...]]]] = {
    "random bytes in x.db": _random_bytes_db,
    "damaged pages behind an intact header": _damaged_pages_db,
    "a file where the folder should be": _folder_in_the_way,
    "a JSONL memory under a file": _folder_in_the_way_jsonl,
}


# Every kind of broken memory over stdio, and one over each network transport: the memory
# is opened by the same code before any transport starts.
CASES = [(broken, "stdio") for broken in BROKEN_MEMORIES] + [
    ("random bytes in x.db", "http"),
    ("random bytes in x.db", "tcp"),
]


@pytest.mark.parametrize(("broken", "transport"), CASES)
def test_a_memory_that_cannot_be_opened_exits_1_with_one_line_naming_it(tmp_path: Path, broken: str, transport: str):
    memory, words = BROKEN_MEMORIES[broken](tmp_path)
    result = _start(TRANSPORTS[transport], memory, tmp_path)
    _assert_one_line_naming(result, *words)


def test_a_memory_folder_that_cannot_be_written_exits_1_saying_permission_denied(tmp_path: Path):
    with unwritable_folder(tmp_path / "locked") as folder:
        result = _start([], str(folder / "memory.db"), tmp_path)
    _assert_one_line_naming(result, str(folder / "memory.db"), "ermission denied")


def test_a_relative_jsonl_memory_in_an_unwritable_working_folder_exits_1_naming_it(tmp_path: Path):
    with unwritable_folder(tmp_path / "project") as folder:
        result = _start([], "memory.jsonl", folder)
    _assert_one_line_naming(result, str(folder / "memory.jsonl"), "ermission denied")


@pytest.mark.parametrize("transport", ["http", "tcp"])
def test_a_port_in_use_exits_1_with_one_line(tmp_path: Path, transport: str):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = ["serve", f"--{transport}", "--port", str(port)]
        result = _start(args, str(tmp_path / "m.db"), tmp_path)
    _assert_one_line_naming(result, f"port {port}", "--port")


def test_a_memory_that_opens_is_served_as_before(tmp_path: Path):
    result = _start([], str(tmp_path / "m.db"), tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    answer = json.loads(result.stdout.splitlines()[0])
    assert answer["id"] == INITIALIZE["id"]
    assert answer["result"]["serverInfo"]["name"] == "graphmem"


def test_an_address_that_is_not_this_machines_exits_1_with_one_line(tmp_path: Path):
    # 203.0.113.0/24 is reserved for documentation: no machine has it.
    args = ["serve", "--http", "--host", "203.0.113.9", "--port", "0"]
    token = {"GRAPHMEM_TOKEN": "0123456789abcdef0123"}
    result = _start(args, str(tmp_path / "m.db"), tmp_path, environment=token)
    _assert_one_line_naming(result, "203.0.113.9", "--host")

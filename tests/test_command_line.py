"""The command line behaves the same everywhere: stdio options at the top level, -h, contradictions refused.

In process through click's CliRunner where nothing is served, and a real process for what
a person sees in a terminal: the ready line on stderr, and Ctrl-C ending it quietly.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem import __version__
from graphmem.cli import cli
from tests.helpers_network import network_server
from tests.helpers_stdio import INITIALIZE, START_SECONDS, server_env
from tests.test_project_resolution import repository
from tests.test_startup import unwritable_folder


def _run(*args: object, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, [str(arg) for arg in args], env=env)


@pytest.mark.parametrize("args", [["-h"], ["serve", "-h"], ["export", "-h"]])
def test_dash_h_is_help_everywhere(args):
    result = _run(*args)
    assert result.exit_code == 0
    assert result.output.startswith("Usage: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve", "--http", "--tcp"], "--http and --tcp were both given"),
        (["serve", "--port", "9000"], "--port was given without --http or --tcp"),
        (["serve", "--host", "0.0.0.0"], "--host was given without --http or --tcp"),
    ],
)
def test_contradictions_are_refused_in_one_line_and_create_nothing(tmp_path: Path, args, message):
    result = _run(*args, "-f", tmp_path / "m.db")
    assert result.exit_code == 1
    assert result.output.count("\n") == 1, result.output
    assert message in result.output
    assert not (tmp_path / "m.db").exists()


@pytest.mark.parametrize("place", ["root", "serve", "environment"])
def test_the_log_level_is_an_option_of_graphmem_itself_of_serve_and_a_variable(tmp_path: Path, place: str):
    # An invalid level is refused before anything starts: the option is read in all three places.
    args = {"root": ["--log-level", "loud"], "serve": ["serve", "--log-level", "loud"], "environment": []}[place]
    env = {"GRAPHMEM_LOG_LEVEL": "loud"} if place == "environment" else None
    result = _run(*args, "-f", tmp_path / "m.db", env=env)
    assert result.exit_code == 2
    assert "'loud' is not one of 'debug', 'info', 'warning', 'error'" in result.output


def _start(memory: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "graphmem", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(memory) | (env or {}),
    )


@pytest.mark.slow
def test_stdio_says_it_is_ready_in_one_line_and_ctrl_c_ends_it_quietly_with_status_0(tmp_path: Path):
    memory = tmp_path / "memory.db"
    process = _start(memory)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    process.stdin.flush()
    answer = json.loads(process.stdout.readline())
    assert answer["id"] == INITIALIZE["id"]
    process.send_signal(signal.SIGINT)
    _, errors = process.communicate(timeout=START_SECONDS)
    assert process.returncode == 0
    lines = errors.decode().splitlines()
    assert lines == [f"graphmem {__version__} ready on stdio: memory {memory} (sqlite), tools default (20)"]


def test_sigterm_over_stdio_ends_the_server_with_status_0_and_keeps_what_it_answered(tmp_path: Path):
    # What a client that will not wait for stdin to close sends before it kills.
    memory = tmp_path / "memory.db"
    process = _start(memory)
    assert process.stdin is not None and process.stdout is not None
    create = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "create_entities",
            "arguments": {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]},
        },
    }
    for message in (INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}, create):
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
    answers = [json.loads(process.stdout.readline()) for _ in range(2)]
    assert answers[1]["id"] == 2 and not answers[1]["result"].get("isError")
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=START_SECONDS)
    assert process.returncode == 0
    with sqlite3.connect(memory) as conn:
        assert conn.execute("SELECT name FROM entities").fetchall() == [("Ada",)]


@pytest.mark.slow
def test_run_by_hand_in_a_terminal_it_says_it_waits_for_an_mcp_client_answers_and_stops_on_ctrl_c(tmp_path: Path):
    terminal, keyboard = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "graphmem"],
        stdin=keyboard,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(tmp_path / "memory.db"),
    )
    os.close(keyboard)
    try:
        assert process.stderr is not None
        ready = process.stderr.readline().decode()
        hint = process.stderr.readline().decode()
        # Typed in: it answers, then Ctrl-C while it waits for the next line ends it at once.
        os.write(terminal, json.dumps(INITIALIZE).encode() + b"\n")
        answer = json.loads(process.stdout.readline())
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=START_SECONDS)
    finally:
        os.close(terminal)
        if process.poll() is None:
            process.kill()
    assert ready.startswith(f"graphmem {__version__} ready on stdio")
    assert "MCP client" in hint and "Ctrl-C" in hint
    assert answer["id"] == INITIALIZE["id"]
    assert process.returncode == 0


@pytest.mark.slow
def test_a_debug_log_level_from_the_environment_reaches_stderr(tmp_path: Path):
    process = _start(tmp_path / "memory.db", env={"GRAPHMEM_LOG_LEVEL": "debug"})
    _, errors = process.communicate(json.dumps(INITIALIZE).encode() + b"\n", timeout=START_SECONDS)
    assert process.returncode == 0
    assert "graphmem DEBUG:" in errors.decode()


# -- info, stats and export read without writing -------------------------------------------------


def _memory_with_one_entity(path: Path) -> None:
    source = path.with_name("source.jsonl")
    source.write_text('{"type":"entity","name":"Ada","entityType":"person","observations":["wrote notes"]}\n')
    assert _run("import", source, "-f", path, "--no-progress").exit_code == 0
    source.unlink()


@pytest.mark.parametrize("name", ["memory.db", "memory.jsonl"])
def test_info_says_the_memory_opens_and_is_intact(tmp_path: Path, name: str):
    memory = tmp_path / name
    _memory_with_one_entity(memory)
    result = _run("info", "-f", memory)
    assert result.exit_code == 0, result.output
    assert "opens: yes (1 entities, 0 relations)" in result.output
    assert "integrity: ok (quick check)" in result.output


@pytest.mark.parametrize("name", ["memory.db", "memory.jsonl"])
def test_info_stats_and_export_read_a_memory_in_a_folder_they_cannot_write(tmp_path: Path, name: str):
    folder = tmp_path / "shared"
    folder.mkdir()
    _memory_with_one_entity(folder / name)
    before = sorted(path.name for path in folder.iterdir())
    with unwritable_folder(folder):
        info = _run("info", "-f", folder / name)
        stats = _run("stats", "-f", folder / name)
        exported = _run("export", "-f", folder / name)
        after = sorted(path.name for path in folder.iterdir())
    assert info.exit_code == 0, info.output
    assert "integrity: ok" in info.output
    assert stats.exit_code == 0 and "entities: 1" in stats.output, stats.output
    assert exported.exit_code == 0, exported.output
    assert json.loads(exported.output.splitlines()[0])["name"] == "Ada"
    assert after == before, "reading must not leave a lock, -wal or -shm file behind"


def test_info_reports_a_damaged_database_in_one_line_with_exit_1(tmp_path: Path):
    memory = tmp_path / "memory.db"
    _memory_with_one_entity(memory)
    data = bytearray(memory.read_bytes())
    # Past the header, inside the tables' pages: the file still opens as SQLite, its pages do not hold.
    data[4096 * 2 : 4096 * 6] = b"\x5a" * (4096 * 4)
    memory.write_bytes(bytes(data))
    result = _run("info", "-f", memory)
    assert result.exit_code == 1
    error = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(error) == 1
    assert "integrity" in error[0] or "damaged" in error[0] or "malformed" in error[0], error[0]


def test_info_names_the_unreadable_lines_of_a_jsonl_memory(tmp_path: Path):
    memory = tmp_path / "memory.jsonl"
    memory.write_text('{"type":"entity","name":"Ada","entityType":"p","observations":[]}\nnot json\n')
    result = _run("info", "-f", memory)
    assert result.exit_code == 1
    assert "integrity: 1 problem(s): line 2 cannot be read" in result.output


def test_info_stats_and_export_upgrade_a_memory_written_by_an_older_graphmem_as_before(tmp_path: Path):
    memory = tmp_path / "memory.db"
    _memory_with_one_entity(memory)
    with sqlite3.connect(memory) as connection:
        current = connection.execute("PRAGMA user_version").fetchone()[0]
        # As a graphmem one migration older left it (the last migration is safe to run again).
        connection.execute(f"PRAGMA user_version = {current - 1}")
    info = _run("info", "-f", memory)
    assert info.exit_code == 0, info.output
    assert "integrity: ok" in info.output
    with sqlite3.connect(memory) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == current
    assert "entities: 1" in _run("stats", "-f", memory).output


# -- the project in the ready lines -------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("where", ["repository", "home"])
def test_the_stdio_ready_line_names_the_project_or_why_auto_found_none(tmp_path: Path, where: str):
    memory, home = tmp_path / "memory.db", tmp_path / "home"
    home.mkdir()
    workspace = (
        repository(tmp_path / "api", ("origin", "git@github.com:acme/api.git")) if where == "repository" else home
    )
    process = _start(memory, "--project", "auto", "--workspace", str(workspace), env={"HOME": str(home)})
    _, errors = process.communicate(json.dumps(INITIALIZE).encode() + b"\n", timeout=START_SECONDS)
    assert process.returncode == 0
    project = {
        "repository": "project api (github.com/acme/api)",
        "home": f"no project (the workspace {home.resolve()} given by --workspace is the home directory)",
    }[where]
    assert errors.decode().splitlines() == [
        f"graphmem {__version__} ready on stdio: memory {memory} (sqlite), {project}, tools default (20)"
    ]


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_network_ready_line_names_the_project(tmp_path: Path):
    async with network_server(tmp_path / "memory.db", "--tcp", "--project", "billing") as server:
        announced = server.log()
    assert f"graphmem serving {tmp_path / 'memory.db'} for project billing at tcp://" in announced

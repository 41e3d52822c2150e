"""The command line behaves the same everywhere: stdio options at the top level, -h, contradictions refused.

In process through click's CliRunner where nothing is served, and a real process for what
a person sees in a terminal: the ready line on stderr, and Ctrl-C ending it quietly.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphmem import __version__
from graphmem.cli import cli
from tests.helpers_stdio import INITIALIZE, START_SECONDS, server_env


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


@pytest.mark.slow
def test_a_debug_log_level_from_the_environment_reaches_stderr(tmp_path: Path):
    process = _start(tmp_path / "memory.db", env={"GRAPHMEM_LOG_LEVEL": "debug"})
    _, errors = process.communicate(json.dumps(INITIALIZE).encode() + b"\n", timeout=START_SECONDS)
    assert process.returncode == 0
    assert "graphmem DEBUG:" in errors.decode()

"""A minimal MCP client over a subprocess's stdin and stdout, to time calls precisely.

No SDK sits in the measuring path: a request is one line written, an answer one line
read, so the figures are the server's round trip and nothing of the client's.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import time
from pathlib import Path
from typing import Any

__all__ = ["PROTOCOL_VERSION", "PipeClient", "peak_memory_mb"]

PROTOCOL_VERSION = "2025-11-25"


class PipeClient:
    """One server process, initialized; `cold_start` is process start to the `initialize` answer."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        started = time.perf_counter()
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        self._ids = itertools.count(1)
        self.answered_at = started
        self.request(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
        )
        self.cold_start = self.answered_at - started
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            # Taken before parsing: a 20 MB answer takes the client a while to parse,
            # and that is not the server's time.
            self.answered_at = time.perf_counter()
            if not line:
                raise RuntimeError(f"server closed the connection during {method}")
            answer: dict[str, Any] = json.loads(line)
            if answer.get("id") == request_id:
                if "error" in answer:
                    raise RuntimeError(f"{method} failed: {answer['error']}")
                return answer

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.request("tools/call", {"name": tool, "arguments": arguments})["result"]
        if result.get("isError"):
            raise RuntimeError(f"{tool} failed: {result['content'][0]['text']}")
        return result

    def peak_memory_mb(self) -> float | None:
        return peak_memory_mb(self.process.pid)

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
        self.process.stdout.close()


def peak_memory_mb(pid: int) -> float | None:
    """A live process's peak resident memory so far (Linux only), in MB."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None

"""A PostgreSQL outage under load: how long calls take to fail while the database is down, and
when the first call succeeds after it is back.

    python -m benchmarks.postgres_outage                       # 4 clients, a 20 s outage
    python -m benchmarks.postgres_outage --clients 8 --outage 60

A throw-away PostgreSQL server (tests/helpers_postgres.py) and `graphmem serve --http` on
it; `--clients` sessions call in a loop, each in turn a write (`add_observations`) and a
read (`open_nodes`). After a few seconds the database is stopped (a fast shutdown: every
session ended, new connections refused), started again after `--outage` seconds, and the
calls go on for `--after` seconds. Prints how long the calls made during the outage took
to fail (median and longest), how long after the restart the first call succeeded and the
last failed, and what the server wrote on stderr.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

import anyio
from mcp import Client
from tests.helpers_network import network_server
from tests.helpers_postgres import running_stoppable_postgres

_WARM_UP_SECONDS = 3.0


@dataclass(frozen=True)
class Call:
    """One call: when it started and ended (seconds since the outage began), and whether it failed."""

    started: float
    ended: float
    failed: bool
    message: str


async def _client(url: str, index: int, calls: list[Call], origin: list[float], until: float) -> None:
    name = f"client-{index}"
    async with Client(url, mode="legacy", read_timeout_seconds=300) as client:
        await client.call_tool("create_entities", {"entities": [{"name": name, "entityType": "t", "observations": []}]})
        n = 0
        while time.monotonic() < until:
            n += 1
            if n % 2:
                tool, arguments = (
                    "add_observations",
                    {"observations": [{"entityName": name, "contents": [f"fact {n}"]}]},
                )
            else:
                tool, arguments = "open_nodes", {"names": [name]}
            started = time.monotonic()
            result = await client.call_tool(tool, arguments)
            ended = time.monotonic()
            text = result.content[0].text if result.is_error else ""  # type: ignore[union-attr]
            calls.append(Call(started - origin[0], ended - origin[0], result.is_error, text))
            if result.is_error:
                await anyio.sleep(0.2)  # as an agent would, not a tight loop


async def measure(clients: int, outage: float, after: float) -> None:
    with running_stoppable_postgres() as database:
        url = database.create_database()
        async with network_server(url, "--http", "--log-level", "warning") as server:  # type: ignore[arg-type]
            calls: list[Call] = []
            origin = [time.monotonic() + _WARM_UP_SECONDS]
            until = origin[0] + outage + after
            async with anyio.create_task_group() as tasks:
                for index in range(clients):
                    tasks.start_soon(_client, server.url, index, calls, origin, until)
                await anyio.sleep(_WARM_UP_SECONDS)
                origin[0] = time.monotonic()
                await anyio.to_thread.run_sync(database.stop)
                await anyio.sleep(outage)
                started_again = time.monotonic()
                await anyio.to_thread.run_sync(database.start)
                back = time.monotonic() - origin[0]
                print(
                    f"database stopped at 0.0 s, started again at {started_again - origin[0]:.1f} s, up at {back:.1f} s"
                )
            log = server.stderr.decode("utf-8", errors="replace")
    _report(calls, back, log)


def _report(calls: list[Call], back: float, log: str) -> None:
    during = [call for call in calls if 0 <= call.started < back and call.failed]
    if during:
        took = [call.ended - call.started for call in during]
        print(
            f"calls failed during the outage: {len(during)}; took to fail: median {statistics.median(took):.2f} s,"
            f" longest {max(took):.2f} s"
        )
        print(f"  first message: {during[0].message}")
    unanswered = [call for call in calls if call.started < back and call.ended > back and not call.failed]
    if unanswered:
        print(f"calls started during the outage that succeeded only after it: {len(unanswered)}")
    after = [call for call in calls if call.started >= back]
    first_ok = min((call.ended for call in after if not call.failed), default=None)
    failed_after = [call for call in after if call.failed]
    if first_ok is not None:
        print(f"first call to succeed after the restart ended {first_ok - back:.2f} s after the database was up")
    if failed_after:
        print(
            f"calls failed after the restart: {len(failed_after)}, the last ending "
            f"{max(call.ended for call in failed_after) - back:.2f} s after the database was up"
        )
    else:
        print("no call failed after the restart")
    lines = [line for line in log.splitlines() if line.strip()]
    print(f"server stderr: {len(lines)} lines; {sum('Traceback' in line for line in lines)} tracebacks")
    shown = dict.fromkeys(line[:160] for line in lines if not line.startswith(("\t", "  ")))
    for line in list(shown)[:12]:
        print(f"  | {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--outage", type=float, default=20.0, help="seconds the database is down")
    parser.add_argument("--after", type=float, default=20.0, help="seconds of calls after the restart")
    args = parser.parse_args()
    anyio.run(measure, args.clients, args.outage, args.after)


if __name__ == "__main__":
    main()

"""How the server's calls reach the store, and wait for another process's lock without stopping the rest.

Calls reach the store one at a time: on a thread of its own (`_StoreThread`), or, for a
server of one client (stdio), on the event loop itself. A write that finds the memory
locked by another process (a second graphmem, an import) does not wait inside the store,
which would hold that thread, or the whole loop, for up to a minute: the store is told to
give up at once (`Store.wait_for_locks`), and the call waits here, asleep on the loop,
and tries again. Meanwhile pings and reads are answered. Writes still take effect in the
order they came: a write that arrives while another waits queues behind it.

    call ─► [writes: one at a time, in order] ─► attempt ─► busy? ─► sleep, try again (up to LOCK_WAIT_SECONDS)
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import random
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from graphmem.core.errors import StorageBusyError
from graphmem.storage import Store

__all__ = ["ATTEMPT_WAIT_SECONDS", "LOCK_WAIT_SECONDS", "StoreAccess"]

T = TypeVar("T")

LOCK_WAIT_SECONDS = 60.0
"""How long a call waits, in all, for another process to let go of the memory."""

ATTEMPT_WAIT_SECONDS = 0.005
"""How long one attempt waits inside the store: a lock held for less costs no retry."""

_LONGEST_PAUSE = 0.05


_Job = tuple[Callable[..., Any], tuple[Any, ...], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class _StoreThread:
    """One thread that runs the calls to the store, one at a time, in the order they come.

    `anyio.to_thread.run_sync` costs about twice as much per call (46 against 23 us a
    round trip here): it picks a thread from a pool under a capacity limiter and checks
    for cancellation on the way. A store has one connection and takes one call at a time
    anyway, so one thread of its own is enough, and a tool call pays only the two wake-ups.
    The transports all run on asyncio (uvloop where installed), so the answer comes back
    through the loop's own thread-safe callback.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="graphmem-store", daemon=True)
            self._thread.start()
        self._jobs.put((fn, args, loop, future))
        # As anyio's run_sync does: a cancelled call still waits for its work to end, so
        # nothing else (closing the store, say) reaches the store while it runs.
        with anyio.CancelScope(shield=True):
            result = await future
        return result

    def stop(self) -> None:
        """End the thread after the calls already queued."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join()
            self._thread = None

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, args, loop, future = job
            try:
                result = fn(*args)
            except BaseException as error:  # relayed: it is raised in the task that awaits the call
                _answer(loop, future, None, error)
            else:
                _answer(loop, future, result, None)


def _answer(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any, error: BaseException | None
) -> None:
    # RuntimeError: the loop has closed (the process is ending). Nobody waits for the
    # answer any more, and the thread must live on to take the calls after it, or `stop`.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(_settle, future, result, error)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # pragma: no cover - the waiting task is shielded from cancellation
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class StoreAccess:
    """Runs graph code against one store: on its thread or inline, waiting out other processes' locks.

    Args:
        store: the store every call uses; its own lock wait is set short here.
        inline: run calls on the event loop itself (one client, whose calls come one at
            a time anyway), not on the store's thread.
        lock_wait: how long a call waits in all for another process's lock.
    """

    def __init__(self, store: Store, *, inline: bool = False, lock_wait: float = LOCK_WAIT_SECONDS) -> None:
        self.store = store
        self.inline = inline
        self.lock_wait = lock_wait
        self._worker = _StoreThread()
        self._writes_in_order = anyio.Lock()
        self.last_call = time.monotonic()
        """When the last call started or ended: background work waits for a quiet moment."""
        store.wait_for_locks(ATTEMPT_WAIT_SECONDS)

    async def run(self, fn: Callable[..., T], *args: Any, writes: bool = True) -> T:
        """Run `fn(*args)`, trying again while another process holds the memory.

        Args:
            writes: whether the call may write. Writes wait for one another, so that
                they take effect in the order they came; reads pass a waiting write.

        Raises:
            StorageBusyError: the memory stayed locked for `lock_wait` seconds.
        """
        self.last_call = time.monotonic()
        try:
            if not writes:
                return await self._attempts(fn, args)
            async with self._writes_in_order:
                return await self._attempts(fn, args)
        finally:
            self.last_call = time.monotonic()

    def stop(self) -> None:
        """End the store's thread after the calls already queued."""
        self._worker.stop()

    async def _attempt(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        if self.inline:
            return fn(*args)
        return await self._worker.run(fn, *args)

    async def _attempts(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        deadline: float | None = None
        pause = 0.002
        while True:
            written = self.store.committed_writes()
            try:
                return await self._attempt(fn, args)
            except StorageBusyError:
                # Repeated only when it wrote nothing: a call whose first transaction
                # committed and whose second found the lock taken must not write twice.
                if self.store.committed_writes() != written:
                    raise
                now = time.monotonic()
                deadline = now + self.lock_wait if deadline is None else deadline
                if now >= deadline:
                    raise
            # Jittered: servers on one database that failed together (a deadlock, a
            # serialization failure) would otherwise retry together and collide again.
            await anyio.sleep(random.uniform(pause / 2, pause))
            pause = min(pause * 2, _LONGEST_PAUSE)

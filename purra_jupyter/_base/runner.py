"""The one background event loop of the process, and the synchronous waits on it.

Every MCP coroutine runs on an anyio blocking portal (an asyncio loop in a daemon thread), never
on the kernel's own loop: a session opened in one cell can then be used and closed from any later
cell, and a kernel interrupt only abandons the wait, not the loop.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from concurrent.futures import Future, InvalidStateError
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, Generic, TypeVar

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from .errors import McpSessionError, detached, without_groups
from .wire import INTERRUPTED

T = TypeVar("T")

_lock = threading.Lock()
_portal: BlockingPortal | None = None
_portal_cm: AbstractContextManager[BlockingPortal] | None = None
_loop: asyncio.AbstractEventLoop | None = None
_loop_thread: threading.Thread | None = None
_before_stop: list[Callable[[], None]] = []


def portal() -> BlockingPortal:
    """The process's portal, started on first use and stopped at interpreter exit."""
    global _portal, _portal_cm, _loop, _loop_thread
    with _lock:
        if _portal is None:
            _portal_cm = start_blocking_portal(name="purra-jupyter-loop")
            _portal = _portal_cm.__enter__()
            _loop, _loop_thread = _portal.call(lambda: (asyncio.get_running_loop(), threading.current_thread()))
            atexit.register(stop)
        return _portal


def on_loop_thread() -> bool:
    """Whether this code runs on the loop's own thread (a server notification, an observer it triggered)."""
    return _loop_thread is not None and threading.current_thread() is _loop_thread


def call_soon(func: Callable[..., object], *args: Any) -> None:
    """Run ``func(*args)`` on the loop: at once when already there, else as soon as the loop gets to it."""
    if on_loop_thread():
        func(*args)
        return
    portal()
    assert _loop is not None
    _loop.call_soon_threadsafe(func, *args)


def on_loop(func: Callable[..., T], *args: Any) -> T:
    """Run ``func(*args)`` on the loop thread and return its result (at once when already there): how state
    that the loop owns is changed from another thread."""
    if on_loop_thread():
        return func(*args)
    return portal().call(func, *args)


async def off_loop(func: Callable[..., T], *args: Any) -> T:
    """``func(*args)`` in a thread of its own that ends with it (imports that take seconds on a first connect),
    while the loop goes on; cancelling the wait leaves the thread to finish. (anyio's worker threads would
    stay, idle, for the process's life.)"""
    done: Future[T] = Future()

    def run() -> None:
        with contextlib.suppress(InvalidStateError):  # (the wait was cancelled)
            try:
                done.set_result(func(*args))
            except BaseException as exc:
                done.set_exception(exc)

    threading.Thread(target=run, name="purra-jupyter-off-loop", daemon=True).start()
    return await asyncio.wrap_future(done)


def on_stop(callback: Callable[[], None]) -> None:
    """Run ``callback`` (e.g. close every session) before the loop stops at exit."""
    _before_stop.append(callback)


def stop() -> None:
    """Close what registered itself, then cancel what is left and end the loop thread."""
    global _portal, _portal_cm, _loop, _loop_thread
    for callback in _before_stop:
        try:
            callback()
        except Exception:
            pass
    with _lock:
        running, cm = _portal, _portal_cm
        _portal = _portal_cm = _loop = _loop_thread = None
    if running is None or cm is None:
        return
    try:
        running.call(running.stop, True)
    except RuntimeError:
        pass
    cm.__exit__(None, None, None)


def submit(func: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> Future[T]:
    """Schedule ``func(*args)`` on the loop as a task of its own; cancelling the future cancels the task.

    ``asyncio.run_coroutine_threadsafe`` rather than the portal's ``start_task_soon``: a third less
    time crossing threads on every request. Tasks left at exit are cancelled when the loop ends."""
    portal()
    assert _loop is not None
    return asyncio.run_coroutine_threadsafe(func(*args), _loop)


def wait(future: Future[T], *, on_interrupt: Callable[[], object] | None = None, serving: Iterable[object] = ()) -> T:
    """Wait for ``future``; a KeyboardInterrupt calls ``on_interrupt`` (default: cancel the future) and
    raises ``mcp_interrupted``. A group of exceptions is unwrapped so a person sees the one that matters, and an
    ``McpSessionError`` arrives without the chain it was raised in: a traceback shows its message, never an SDK
    error that quotes what a server said.

    A wait on the main thread (a cell's) also runs what the loop asks of it meanwhile for what it waits for
    (``serving``: the keys ``in_waiting_cell`` is asked with, e.g. a call's): only there can a person be shown
    something and answer, and only what belongs to what the cell waits for reaches it."""
    try:
        if threading.current_thread() is threading.main_thread():
            _serve_until(future, frozenset(serving))
        return future.result()
    except KeyboardInterrupt:
        (on_interrupt or future.cancel)()
        raise McpSessionError(INTERRUPTED, "Interrupted; the request was abandoned and its result discarded.") from None
    except BaseExceptionGroup as group:
        error = leaf_exception(group)
    except McpSessionError as failure:
        error = detached(failure)
    raise without_groups(error)  # outside the handler, so nothing becomes its context


class NoWaitingCell(LookupError):
    """The loop asked for the waiting cell and no cell waits (the work runs after its cell ended)."""


# What the loop asks of the cell that waits: (key, func, answer) jobs, and the futures of waits that are done (the
# signal to stop serving). ``_served`` holds the keys each of the main thread's waits in progress serves (the innermost
# last); both change under ``_lock``.
Job = tuple[object, Callable[[], Any], Future[Any]]
_cell_jobs: queue.Queue[Job | Future[Any]] = queue.Queue()
_served: list[frozenset[object]] = []
# What the waiting cell does every ``WAIT_TICK_SECONDS`` besides (print a running call's progress: only the cell's
# own thread can write to its output). Changed by ``while_waiting``, on the main thread only.
_cell_ticks: list[Callable[[], object]] = []
WAIT_TICK_SECONDS = 0.25


class while_waiting:  # (a class, not a generator: every call enters one)
    """Call ``tick()`` on the cell's thread every ``WAIT_TICK_SECONDS`` while it waits for the loop in this block,
    and once more as the block ends."""

    def __init__(self, tick: Callable[[], object]) -> None:
        self._tick = tick

    def __enter__(self) -> None:
        _cell_ticks.append(self._tick)

    def __exit__(self, *exc: object) -> None:
        _cell_ticks.remove(self._tick)
        self._tick()


def _serve_until(future: Future[Any], keys: frozenset[object]) -> None:
    """Run the loop's jobs for ``keys`` until ``future`` is done (a KeyboardInterrupt ends the job and the wait), and
    the ticks of ``while_waiting`` meanwhile. A job for an outer wait's keys is left to that wait."""
    with _lock:
        _served.append(keys)
    future.add_done_callback(_cell_jobs.put)
    outer: list[Job] = []
    try:
        next_tick = time.monotonic() + WAIT_TICK_SECONDS
        while not future.done():
            try:
                job = _cell_jobs.get(timeout=max(next_tick - time.monotonic(), 0.0) if _cell_ticks else None)
                if isinstance(job, tuple) and job[0] in keys:  # else the done-signal of a wait, or an outer's job
                    _run_job(*job[1:])
                elif isinstance(job, tuple):
                    outer.append(job)
            except queue.Empty:
                pass
            if _cell_ticks and time.monotonic() >= next_tick:
                next_tick = time.monotonic() + WAIT_TICK_SECONDS
                for tick in tuple(_cell_ticks):
                    tick()
    finally:
        with _lock:
            _served.pop()
            while not _cell_jobs.empty():
                item = _cell_jobs.get_nowait()
                if isinstance(item, tuple):
                    outer.append(item)
            for job in outer:  # a job no wait serves any more: nobody will do it
                if _serves(job[0]):
                    _cell_jobs.put(job)
                elif job[2].set_running_or_notify_cancel():  # (else the loop stopped waiting for it)
                    job[2].set_exception(NoWaitingCell("the cell stopped waiting"))


def _run_job(func: Callable[[], Any], answer: Future[Any]) -> None:
    """Run a job of the loop's; one the loop stopped waiting for before the cell got to it is not run, and one it
    stops waiting for meanwhile (a server that withdrew its question) ends with nobody to tell."""
    if not answer.set_running_or_notify_cancel():
        return
    try:
        answer.set_result(func())
    except Exception as exc:
        answer.set_exception(exc)
    except BaseException:
        answer.set_exception(NoWaitingCell("interrupted"))
        raise


def _serves(key: object) -> bool:
    return any(key in keys for keys in _served)


def cell_serves(key: object) -> bool:
    """Whether a cell waits for the loop now for ``key`` (``in_waiting_cell(..., key)`` can reach it)."""
    with _lock:
        return _serves(key)


async def in_waiting_cell(func: Callable[[], T], key: object) -> T:
    """Run ``func()`` on the thread of the cell that waits for ``key`` (what it waits for: a call, a connection), e.g.
    to show a person something and take their answer; raises ``NoWaitingCell`` when no cell waits for it. A cell that
    waits for something else never sees it."""
    answer: Future[T] = Future()
    with _lock:
        if not _serves(key):
            raise NoWaitingCell("no cell is waiting for it")
        _cell_jobs.put((key, func, answer))
    return await asyncio.wrap_future(answer)


def run(func: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
    """``submit`` then ``wait``: the synchronous face of one coroutine."""
    return wait(submit(func, *args))


def leaf_exception(error: BaseException) -> BaseException:
    """The first exception inside nested groups that is not a cancellation (the loop runs asyncio)."""
    while isinstance(error, BaseExceptionGroup):
        leaves = [e for e in error.exceptions if not isinstance(e, asyncio.CancelledError)]
        error = (leaves or list(error.exceptions))[0]
    return error


class HostedContext(Generic[T]):
    """An async context manager entered and exited by one task on the loop.

    anyio cancel scopes must be exited by the task that entered them, so a transport opened in
    one cell is owned by a task that waits until ``close()`` (from any later cell, or from the loop
    thread itself) lets it leave. Once an opened context is left, however that happens, the task
    awaits ``on_end(error)`` (``None`` when it ended without an error), shielded from cancellation.
    """

    def __init__(
        self,
        make: Callable[..., AbstractAsyncContextManager[T]],
        on_end: Callable[[BaseException | None], Awaitable[None]],
    ) -> None:
        self._make = make
        self._on_end = on_end
        self._entered: Future[T] = Future()
        self._task: Future[None] | None = None
        self._stop: anyio.Event | None = None

    @property
    def running(self) -> bool:
        """Whether the owner task is still there (opening, open or leaving)."""
        return self._task is not None and not self._task.done()

    def open(self, *args: Any, serving: Iterable[object] = ()) -> T:
        """Enter ``make(*args)`` in the owner task and wait for it (``serving`` as ``wait``'s); an interrupt cancels
        the opening."""
        self._task = submit(self._own, *args)
        try:
            return wait(self._entered, on_interrupt=self._task.cancel, serving=serving)
        except BaseException:
            self._task.cancel()
            raise

    def close(self) -> None:
        """Let the owner task leave the context (graceful transport shutdown). From the loop thread this only
        starts it (the loop cannot wait for itself); from any other thread it waits until the task ended."""
        task = self._task
        if task is None or task.done():
            return
        try:
            call_soon(self._leave)
        except RuntimeError:  # loop already stopped
            return
        self.wait_left()

    def wait_left(self) -> None:
        """Wait until the owner task ended (a close begun elsewhere included); at once from the loop thread, which
        cannot wait for itself."""
        task = self._task
        if task is None or task.done() or on_loop_thread():
            return
        # A transport that fails while closing, or a close cut short by an interrupt (which cancels the
        # task and so kills a stdio child), is closed all the same.
        with contextlib.suppress(BaseException):
            wait(task)

    def _leave(self) -> None:
        if self._stop is not None:
            self._stop.set()
        elif self._task is not None:
            self._task.cancel()

    async def _own(self, *args: Any) -> None:
        self._stop = anyio.Event()
        error: BaseException | None = None
        try:
            async with self._make(*args) as value:
                self._entered.set_result(value)
                await self._stop.wait()
        except BaseException as exc:
            if not self._entered.done():
                self._entered.set_exception(exc)
                raise
            error = exc
            raise
        finally:
            if self._entered.done() and self._entered.exception() is None:
                cancelled = isinstance(error, asyncio.CancelledError)
                with anyio.CancelScope(shield=True):
                    await self._on_end(None if error is None or cancelled else leaf_exception(error))

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
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, ClassVar, Generic, TypeVar

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from .errors import McpSessionError, without_groups
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


def wait(future: Future[T], *, on_interrupt: Callable[[], None] | None = None) -> T:
    """Wait for ``future``; a KeyboardInterrupt calls ``on_interrupt`` (default: cancel the future) and
    raises ``mcp_interrupted``. A group of exceptions is unwrapped so a person sees the one that matters.

    A wait on the main thread (a cell's) also runs what the loop asks of it meanwhile (``in_waiting_cell``):
    only there can a person be shown something and answer."""
    desk = _Desk.open() if threading.current_thread() is threading.main_thread() else None
    try:
        if desk is not None:
            future.add_done_callback(desk.done)
            desk.serve()
        return future.result()
    except KeyboardInterrupt:
        (on_interrupt or future.cancel)()
        raise McpSessionError(INTERRUPTED, "Interrupted; the request was abandoned and its result discarded.") from None
    except BaseExceptionGroup as group:
        error = leaf_exception(group)
    finally:
        if desk is not None:
            desk.close()
    raise without_groups(error)  # outside the handler, so the group does not become its context


class NoWaitingCell(LookupError):
    """The loop asked for the waiting cell and no cell waits (the work runs after its cell ended)."""


class _Desk:
    """Where the loop hands work to the cell waiting in ``wait``; the innermost wait serves."""

    _open: ClassVar[list[_Desk]] = []

    def __init__(self) -> None:
        self._jobs: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()

    @classmethod
    def open(cls) -> _Desk:
        desk = cls()
        with _lock:
            cls._open.append(desk)
        return desk

    @classmethod
    def current(cls) -> _Desk | None:
        with _lock:
            return cls._open[-1] if cls._open else None

    def close(self) -> None:
        with _lock:
            self._open.remove(self)
        while not self._jobs.empty():  # asked as the wait ended: nobody will do it
            job = self._jobs.get_nowait()
            if job is not None:
                job[1].set_exception(NoWaitingCell("the cell stopped waiting"))

    def done(self, _future: Future[Any]) -> None:
        self._jobs.put(None)

    def ask(self, func: Callable[[], Any]) -> Future[Any]:
        answer: Future[Any] = Future()
        self._jobs.put((func, answer))
        return answer

    def serve(self) -> None:
        """Run each job until the waited-for future is done (a KeyboardInterrupt ends the job and the wait)."""
        while (job := self._jobs.get()) is not None:
            func, answer = job
            try:
                answer.set_result(func())
            except BaseException as exc:
                answer.set_exception(exc if isinstance(exc, Exception) else NoWaitingCell("interrupted"))
                if not isinstance(exc, Exception):
                    raise


async def in_waiting_cell(func: Callable[[], T]) -> T:
    """Run ``func()`` on the thread of the cell that waits for the loop (e.g. to show a person something and
    take their answer); raises ``NoWaitingCell`` when no cell waits."""
    desk = _Desk.current()
    if desk is None:
        raise NoWaitingCell("no cell is waiting")
    return await asyncio.wrap_future(desk.ask(func))


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

    def open(self, *args: Any) -> T:
        """Enter ``make(*args)`` in the owner task and wait for it; an interrupt cancels the opening."""
        self._task = submit(self._own, *args)
        try:
            return wait(self._entered, on_interrupt=self._task.cancel)
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
        if on_loop_thread():
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

"""The one background event loop of the process, and the synchronous waits on it.

Every MCP coroutine runs on an anyio blocking portal (an asyncio loop in a daemon thread), never
on the kernel's own loop: a session opened in one cell can then be used and closed from any later
cell, and a kernel interrupt only abandons the wait, not the loop.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, Generic, TypeVar

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from .errors import McpSessionError, without_groups
from .wire import INTERRUPTED

T = TypeVar("T")

_lock = threading.Lock()
_portal: BlockingPortal | None = None
_portal_cm: AbstractContextManager[BlockingPortal] | None = None
_loop: asyncio.AbstractEventLoop | None = None
_before_stop: list[Callable[[], None]] = []


def portal() -> BlockingPortal:
    """The process's portal, started on first use and stopped at interpreter exit."""
    global _portal, _portal_cm, _loop
    with _lock:
        if _portal is None:
            _portal_cm = start_blocking_portal(name="purra-jupyter-loop")
            _portal = _portal_cm.__enter__()
            _loop = _portal.call(asyncio.get_running_loop)
            atexit.register(stop)
        return _portal


def on_stop(callback: Callable[[], None]) -> None:
    """Run ``callback`` (e.g. close every session) before the loop stops at exit."""
    _before_stop.append(callback)


def stop() -> None:
    """Close what registered itself, then cancel what is left and end the loop thread."""
    global _portal, _portal_cm, _loop
    for callback in _before_stop:
        try:
            callback()
        except Exception:
            pass
    with _lock:
        running, cm = _portal, _portal_cm
        _portal = _portal_cm = _loop = None
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


def wait(future: Future[T], *, cancel: Future[Any] | None = None) -> T:
    """Wait for ``future``; a KeyboardInterrupt cancels ``cancel`` (default: ``future``) and raises
    ``mcp_interrupted``. A group of exceptions is unwrapped so a person sees the one that matters."""
    try:
        return future.result()
    except KeyboardInterrupt:
        (cancel or future).cancel()
        raise McpSessionError(INTERRUPTED, "Interrupted; the request was abandoned and its result discarded.") from None
    except BaseExceptionGroup as group:
        error = leaf_exception(group)
    raise without_groups(error)  # outside the handler, so the group does not become its context


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
    one cell is owned by a task that waits until ``close()`` (from any later cell) lets it leave.
    ``on_lost`` is called with the error when the context ends without ``close()``.
    """

    def __init__(
        self,
        make: Callable[[], AbstractAsyncContextManager[T]],
        on_lost: Callable[[BaseException | None], None],
    ) -> None:
        self._make = make
        self._on_lost = on_lost
        self._entered: Future[T] = Future()
        self._task: Future[None] | None = None
        self._stop: anyio.Event | None = None
        self._closing = False

    def open(self) -> T:
        self._task = submit(self._own)
        self._task.add_done_callback(self._finished)
        try:
            return wait(self._entered, cancel=self._task)
        except BaseException:
            self._closing = True
            self._task.cancel()
            raise

    def close(self) -> None:
        """Let the owner task leave the context (graceful transport shutdown) and wait for it."""
        self._closing = True
        task = self._task
        if task is None or task.done():
            return
        if self._stop is not None:
            try:
                portal().call(self._stop.set)
            except RuntimeError:  # loop already stopped
                return
        # A transport that fails while closing, or a close cut short by an interrupt (which cancels the
        # task and so kills a stdio child), is closed all the same.
        with contextlib.suppress(Exception):
            wait(task)

    async def _own(self) -> None:
        self._stop = anyio.Event()
        try:
            async with self._make() as value:
                self._entered.set_result(value)
                await self._stop.wait()
        except BaseException as exc:
            if not self._entered.done():
                self._entered.set_exception(exc)
            raise

    def _finished(self, task: Future[None]) -> None:
        if self._closing or not self._entered.done() or self._entered.exception() is not None:
            return
        error = None if task.cancelled() else task.exception()
        self._on_lost(leaf_exception(error) if error is not None else None)

"""A stdio server's process, started before the MCP SDK is imported, and its JSON-RPC lines.

A first connect imports the SDK (seconds), and a Python server imports it too as it starts: the SDK's own
``stdio_client`` can start the process only once the SDK is imported, so the two ran one after the other.
Here the process starts first and the SDK is imported in a worker thread while it starts. What goes over the
pipes is the SDK's: the same inherited environment, one JSON-RPC message per line each way, a line that is not
one handed on as an ``Exception``. Beyond the SDK, bounded as the server cannot choose:

- one line is at most ``max_message_bytes`` (what the HTTP transport holds of one message): a longer one is
  handed on as ``LineTooLong`` and nothing more is read;
- the server runs in a process group of its own, and ending it ends the group: stdin closed, ``grace`` seconds
  to exit, then SIGTERM to the whole group (what the server started too), ``grace`` seconds, SIGKILL;
- a server that exits ends its group at once, so that its output ends even when a child of its still holds the
  pipes (a launcher), and the session learns of it when it happens, not at its next timeout.

On Windows (job objects, ``.cmd`` commands) the SDK's ``stdio_client`` is used as it is.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import select
import signal
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import IO, Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, ObjectReceiveStream, ObjectSendStream, Process

from .._base import runner
from .._base.config import Scrubber, ServerConfig
from .._base.untrusted import HEAD_BYTES
from .._base.wire import EVENT_STDERR, STDIO
from .base import RequestId, TransportContext
from .ingress import Ingress

# The pinned SDK's DEFAULT_INHERITED_ENV_VARS (mcp.client.stdio) on POSIX; tests/test_stdio.py holds them equal.
INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
EXIT_SECONDS = 2.0  # the SDK's PROCESS_TERMINATION_TIMEOUT: to exit after stdin ends, and again after SIGTERM
OUTPUT_END_SECONDS = 2.0  # after the server exited and its group ended, how long its output may take to end
GROUP_POLL_SECONDS = 0.05
# What the lines need of the SDK (``mcp`` itself with it): imported while the server starts.
SDK_MODULE = "mcp.shared.message"

STDERR_LINES = 200  # the server's last stderr lines a session keeps
LINE_CHARS = 8_192  # what is kept of one stderr line (scrubbed first)

Streams = tuple[ObjectReceiveStream[Any], ObjectSendStream[Any]]


def environment(config: ServerConfig) -> dict[str, str]:
    """The server's environment, as the SDK makes it: the inherited safe names (no shell functions), then
    the config's ``env``."""
    env = {}
    for name in INHERITED_ENV:
        value = os.environ.get(name)
        if value is not None and not value.startswith("()"):  # a shell function is not inherited
            env[name] = value
    return {**env, **(config.env or {})}


class LineTooLong(Exception):
    """The server wrote a line of over ``limit`` bytes on its stdout; it was not read to its end."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"a line of over {limit} bytes on stdout")
        self.limit = limit


class StderrTail:
    """A pipe handed to a stdio server as its stderr; a thread keeps the last lines (scrubbed) and logs each.

    ipykernel's ``sys.stderr`` has no file descriptor, and a pipe read at once never blocks the server the way an
    unread one would. A line is kept whole up to what is shown of it (``LINE_CHARS``) and scrubbed before it is
    cut, however it arrives; the rest of a longer line is read and dropped. ``stop()`` ends the thread (and its
    descriptors) even when a process the kit does not know still holds the pipe.
    """

    def __init__(self, on_line: Callable[[str], None], scrub: Scrubber, max_lines: int = STDERR_LINES) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = open(write_fd, "wb", buffering=0)
        self._wake_read, self._wake = os.pipe()  # a byte here ends the thread's wait
        self._wake_lock = threading.Lock()
        self._done = False  # the thread ended and closed its descriptors
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._on_line = on_line
        self._scrub = scrub
        self._thread = threading.Thread(target=self._read, args=(read_fd,), name="purra-jupyter-stderr", daemon=True)
        self._thread.start()

    def release(self) -> None:
        """Drop our copy of the write end once the child holds its own, so EOF follows its exit."""
        self.writer.close()

    def stop(self) -> None:
        """End the thread now, whether or not the pipe reached its end."""
        with self._wake_lock:
            if not self._done:
                os.write(self._wake, b"x")

    async def ended(self, timeout: float = 2.0) -> None:
        """Wait (on the loop, without a thread of its own) until the server's stderr reached its end; after
        ``timeout`` seconds (a process holds the pipe that the server's group did not include) stop reading it."""
        with anyio.move_on_after(timeout):
            while self._thread.is_alive():
                await anyio.sleep(0.01)
        if self._thread.is_alive():
            self.stop()
            while self._thread.is_alive():
                await anyio.sleep(0.01)

    @property
    def text(self) -> str:
        return "\n".join(self._lines)

    def _read(self, fd: int) -> None:
        held = bytearray()  # the start of the line being read, as much as showing it scrubbed needs
        longer = False  # whether the line went on past that
        try:
            for chunk in self._chunks(fd):
                *ends, rest = chunk.split(b"\n")
                for part in ends:
                    longer = self._hold(held, part) or longer
                    self._keep(bytes(held), longer)
                    held.clear()
                    longer = False
                longer = self._hold(held, rest) or longer
            if held:
                self._keep(bytes(held), longer)
        finally:
            with self._wake_lock:
                self._done = True
                for descriptor in (fd, self._wake_read, self._wake):
                    os.close(descriptor)

    def _chunks(self, fd: int) -> Iterator[bytes]:
        """What the server writes, until the pipe's end or ``stop()`` (Windows cannot wait on pipes: there the
        pipe's end alone ends it)."""
        while True:
            if sys.platform != "win32":
                ready, _, _ = select.select([fd, self._wake_read], [], [])
                if self._wake_read in ready:
                    return
            chunk = os.read(fd, 65_536)
            if not chunk:
                return
            yield chunk

    def _hold(self, held: bytearray, part: bytes) -> bool:
        """Add what ``held`` still has room for of ``part``; ``True`` if some of it did not fit."""
        room = self._scrub.margin(LINE_CHARS) - len(held)
        held += part[: max(room, 0)]
        return len(part) > room

    def _keep(self, raw: bytes, longer: bool) -> None:
        line = self._scrub(raw.decode("utf-8", "replace").rstrip("\r"))  # whole, then cut
        if longer or len(line) > LINE_CHARS:
            line = line[:LINE_CHARS] + f"… (cut at {LINE_CHARS} characters)"
        self._lines.append(line)
        self._on_line(line)


class StdioTransport:
    """A server process started from its config, spoken to over its stdin and stdout, its stderr kept."""

    kind = STDIO

    def __init__(self, config: ServerConfig) -> None:
        self._config = config
        self._stderr: StderrTail | None = None

    @property
    def stderr(self) -> str:
        return self._stderr.text if self._stderr is not None else ""

    @asynccontextmanager
    async def open(self, context: TransportContext) -> AsyncIterator[Streams]:
        tail = self._stderr = StderrTail(lambda line: context.note(EVENT_STDERR, line), context.scrub)
        stdio = open_stdio(self._config, tail.writer, context.ingress, max_message_bytes=context.max_message_bytes(),
                           grace=context.grace)  # fmt: skip
        async with contextlib.AsyncExitStack() as stack:
            try:
                streams = await stack.enter_async_context(stdio)
            finally:
                tail.release()
            yield streams

    async def ended(self) -> None:
        if self._stderr is not None:
            await self._stderr.ended()

    def drop(self, request_id: RequestId) -> None:
        """(A request has no exchange of its own on a pipe.)"""

    async def forget_authorization(self) -> None:
        """(A stdio server takes no authorization of the kit's.)"""


@asynccontextmanager
async def open_stdio(
    config: ServerConfig, errlog: IO[bytes], ingress: Ingress, *, max_message_bytes: int, grace: Callable[[], float]
) -> AsyncIterator[Streams]:
    """Start the server with ``errlog`` as its stderr and yield the SDK's message streams over its stdin and
    stdout (each line read through ``ingress``); on leaving, however that happens, the server's process group ends,
    each step given ``grace()`` seconds (asked when it ends: a failed connect has only what is left of its
    deadline)."""
    if sys.platform == "win32":
        async with _sdk_stdio(config, errlog) as (read, write), ingress.admit_all(read) as admitted:
            yield admitted, write
        return
    process = await anyio.open_process(
        [config.command or "", *config.args],
        env=environment(config),
        cwd=config.cwd,
        stderr=errlog,
        start_new_session=True,  # its own process group, so ending it ends what it started
    )
    try:
        await runner.off_loop(importlib.import_module, SDK_MODULE)
        async with _lines(process, ingress, max_message_bytes) as streams:
            yield streams
    finally:
        await _end(process, grace())


@asynccontextmanager
async def _lines(process: Process, ingress: Ingress, max_bytes: int) -> AsyncIterator[Streams]:
    assert process.stdin is not None and process.stdout is not None
    to_session, read = anyio.create_memory_object_stream[Any](0)
    write, from_session = anyio.create_memory_object_stream[Any](0)
    async with anyio.create_task_group() as tasks, to_session, read, write, from_session:
        reading = anyio.CancelScope()
        tasks.start_soon(_read, process.stdout, to_session, ingress, max_bytes, reading)  # its end ends the read stream
        tasks.start_soon(_write, from_session, process.stdin)
        tasks.start_soon(_after_exit, process, reading)
        try:
            yield read, write
        finally:
            tasks.cancel_scope.cancel()  # the session is gone: nothing more is read or written


async def _read(
    stdout: ByteReceiveStream,
    to_session: ObjectSendStream[Any],
    ingress: Ingress,
    max_bytes: int,
    scope: anyio.CancelScope,
) -> None:
    """Each line of the server's stdout as a ``SessionMessage`` (through ``ingress``; a line it drops is not handed
    on), or the exception that says why it is not one (``_Lines``); the end of the stream (or of ``scope``) ends the
    session's read stream. After a line over ``max_bytes`` (``LineTooLong``), or once the ingress ended (the session
    outran its budget), nothing more is read."""
    async with to_session:
        with scope:
            lines = _Lines(ingress, max_bytes)
            async for chunk in stdout:
                for message in lines.read(chunk):
                    if message is not None and not await _hand_on(to_session, message):
                        return
                    if isinstance(message, LineTooLong) or ingress.ended:
                        return


class _Lines:
    """The lines of a server's stdout, read a chunk at a time: what the ingress makes of each (``None``: dropped), or
    ``LineTooLong`` for one over ``max_bytes``. A line's parts are joined once, when its end comes (a long line would
    otherwise be copied again with each chunk). Once a line passes what the ingress reads of an unasked message, its
    head says whether the ingress wants the rest (an answer a request awaits); if not, only its first and last bytes
    and its size are kept until its end comes (``Ingress.dropped_unread``), so a hostile line costs neither a copy
    nor the memory of it."""

    def __init__(self, ingress: Ingress, max_bytes: int) -> None:
        self._ingress = ingress
        self._max = max_bytes
        self._pending: list[bytes] = []
        self._held = 0  # the bytes of the line so far
        self._asked = False  # whether the ingress was asked about this line
        self._ends: tuple[bytes, bytes] | None = None  # the head and tail of a line dropped unread

    def read(self, chunk: bytes) -> Iterator[Any]:
        *ends, rest = chunk.split(b"\n")
        for part in ends:
            yield self._ended(part)
        self._add(rest)
        if self._held > self._max:
            self._next()  # (memory back before the session hears of it)
            yield LineTooLong(self._max)

    def _ended(self, part: bytes) -> Any:
        size = self._held + len(part)
        if size > self._max:
            self._next()
            return LineTooLong(self._max)
        if self._ends is not None:
            head, tail = self._ends
            self._next()
            self._ingress.dropped_unread(head, (tail + part)[-HEAD_BYTES:], size)
            return None
        line = b"".join((*self._pending, part))
        self._next()
        return self._ingress.admitted(line)

    def _add(self, part: bytes) -> None:
        self._held += len(part)
        if self._ends is not None:
            self._ends = (self._ends[0], (self._ends[1] + part)[-HEAD_BYTES:])
            return
        self._pending.append(part)
        if self._held > self._ingress.unasked_bytes and not self._asked:
            self._asked = True
            line = b"".join(self._pending)
            if self._ingress.drops_unread(line[: HEAD_BYTES + 1]):
                self._ends = (line[: HEAD_BYTES + 1], line[-HEAD_BYTES:])
                self._pending = []
            else:
                self._pending = [line]

    def _next(self) -> None:
        self._pending, self._held, self._asked, self._ends = [], 0, False, None


async def _hand_on(to_session: ObjectSendStream[Any], message: Any) -> bool:
    """Give ``message`` to the session; ``False`` once the session is gone."""
    try:
        await to_session.send(message)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        return False
    return True


async def _write(from_session: ObjectReceiveStream[Any], stdin: ByteSendStream) -> None:
    async with from_session:
        async for item in from_session:
            line = item.message.model_dump_json(by_alias=True, exclude_none=True) + "\n"
            try:
                await stdin.send(line.encode("utf-8"))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return  # the server is gone: its stdout's end says so to the session


async def _after_exit(process: Process, reading: anyio.CancelScope) -> None:
    """Once the server exits, end its group (a child of its may hold the pipes open) and give its output
    ``OUTPUT_END_SECONDS`` to end; then stop reading it: the session's read stream ends either way."""
    await process.wait()
    await end_group(process.pid, EXIT_SECONDS)
    await anyio.sleep(OUTPUT_END_SECONDS)
    reading.cancel()


async def _end(process: Process, grace: float) -> None:
    """The end of the server: stdin closed, ``grace`` seconds to exit, then its whole group ended (``end_group``),
    what it started included. When the ending itself is cancelled (the loop stops), the group is killed at once
    (an interrupted connect is not: asyncio cancels the opening task once, so its ending runs uncancelled)."""
    try:
        with anyio.move_on_after(grace):
            if process.stdin is not None:
                await process.stdin.aclose()
            await process.wait()
        await end_group(process.pid, grace)
    except BaseException:
        with contextlib.suppress(OSError):  # (gone already)
            os.killpg(process.pid, signal.SIGKILL)
        raise
    finally:
        await process.aclose()  # anyio's: waits for the process, and kills it if that wait is cancelled


async def end_group(group: int, grace: float) -> None:
    """End every process of ``group`` that still runs: SIGTERM, ``grace`` seconds, SIGKILL."""
    if not group_alive(group):
        return
    with contextlib.suppress(OSError):
        os.killpg(group, signal.SIGTERM)
    with anyio.move_on_after(grace):
        while group_alive(group):
            await anyio.sleep(GROUP_POLL_SECONDS)
        return
    with contextlib.suppress(OSError):
        os.killpg(group, signal.SIGKILL)


def group_alive(group: int) -> bool:
    """Whether a process of ``group`` still runs. A zombie does not: an orphan's is reaped by init, which on some
    machines never happens, and it would count for ``os.killpg(group, 0)``."""
    import psutil

    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    for process in psutil.process_iter(["status"]):
        try:
            if process.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(process.pid) == group:
                return True
        except (OSError, psutil.Error):
            continue
    return False


@asynccontextmanager
async def _sdk_stdio(config: ServerConfig, errlog: IO[bytes]) -> AsyncIterator[Streams]:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = dict(config.env) if config.env is not None else None
    params = StdioServerParameters(command=config.command or "", args=list(config.args), env=env, cwd=config.cwd)
    # The SDK annotates errlog as TextIO but only hands it to the child process as its stderr, which a binary
    # file (the kit reads the server's bytes itself) serves as well.
    async with stdio_client(params, errlog=errlog) as streams:  # type: ignore[arg-type]
        yield streams

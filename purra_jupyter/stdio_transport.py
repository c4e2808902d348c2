"""A stdio server's process, started before the MCP SDK is imported, and its JSON-RPC lines.

A first connect imports the SDK (seconds), and a Python server imports it too as it starts: the SDK's own
``stdio_client`` can start the process only once the SDK is imported, so the two ran one after the other.
Here the process starts first and the SDK is imported in a worker thread while it starts. What goes over the
pipes and how the process ends are the SDK's: the same inherited environment, one JSON-RPC message per line
each way, a line that is not one handed on as an ``Exception``, and on leaving stdin closed, ``EXIT_SECONDS``
to exit, then the SDK's termination of the process group. On Windows (job objects, ``.cmd`` commands) the
SDK's ``stdio_client`` is used as it is.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import IO, Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, ObjectReceiveStream, ObjectSendStream, Process

from . import runner
from .config import ServerConfig

# The pinned SDK's DEFAULT_INHERITED_ENV_VARS (mcp.client.stdio) on POSIX; tests/test_stdio.py holds them equal.
INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
EXIT_SECONDS = 2.0  # the SDK's PROCESS_TERMINATION_TIMEOUT
# What the lines need of the SDK (``mcp`` itself with it): imported while the server starts.
SDK_MODULE = "mcp.shared.message"

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


@asynccontextmanager
async def open_stdio(config: ServerConfig, errlog: IO[bytes]) -> AsyncIterator[Streams]:
    """Start the server with ``errlog`` as its stderr and yield the SDK's message streams over its stdin and
    stdout; on leaving, however that happens, the process ends."""
    if sys.platform == "win32":
        async with _sdk_stdio(config, errlog) as streams:
            yield streams
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
        async with _lines(process) as streams:
            yield streams
    finally:
        await _end(process)


@asynccontextmanager
async def _lines(process: Process) -> AsyncIterator[Streams]:
    assert process.stdin is not None and process.stdout is not None
    to_session, read = anyio.create_memory_object_stream[Any](0)
    write, from_session = anyio.create_memory_object_stream[Any](0)
    async with anyio.create_task_group() as tasks, to_session, read, write, from_session:
        tasks.start_soon(_read, process.stdout, to_session)  # its end is the end of the session's read stream
        tasks.start_soon(_write, from_session, process.stdin)
        try:
            yield read, write
        finally:
            tasks.cancel_scope.cancel()  # the session is gone: nothing more is read or written


async def _read(stdout: ByteReceiveStream, to_session: ObjectSendStream[Any]) -> None:
    """Each line of the server's stdout as a ``SessionMessage``, or the exception that says why it is not one;
    the end of the stream ends the session's read stream. A line's parts are joined once, when its end comes
    (a long line would otherwise be copied again with each chunk)."""
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCMessage

    async with to_session:
        pending: list[bytes] = []
        async for chunk in stdout:
            *lines, rest = chunk.split(b"\n")
            if lines:
                lines[0] = b"".join((*pending, lines[0]))
                pending.clear()
            pending.append(rest)
            for line in lines:
                try:
                    message: Any = SessionMessage(JSONRPCMessage.model_validate_json(line.decode("utf-8")))
                except Exception as exc:  # not JSON-RPC (or not UTF-8): the session decides what that means
                    message = exc
                try:
                    await to_session.send(message)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return


async def _write(from_session: ObjectReceiveStream[Any], stdin: ByteSendStream) -> None:
    async with from_session:
        async for item in from_session:
            line = item.message.model_dump_json(by_alias=True, exclude_none=True) + "\n"
            try:
                await stdin.send(line.encode("utf-8"))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return  # the server is gone: its stdout's end says so to the session


async def _end(process: Process) -> None:
    """The SDK's shutdown: stdin closed, ``EXIT_SECONDS`` to exit, then its termination of the process group
    (an interrupted connect too: asyncio cancels the opening task once, so its ending runs uncancelled). When
    the ending itself is cancelled (the loop stops), the group is killed at once."""
    try:
        with anyio.fail_after(EXIT_SECONDS):
            if process.stdin is not None:
                await process.stdin.aclose()
            await process.wait()
    except TimeoutError:
        from mcp.os.posix.utilities import terminate_posix_process_tree

        await terminate_posix_process_tree(process, EXIT_SECONDS)
    except BaseException:
        with contextlib.suppress(OSError):  # (gone already)
            os.killpg(process.pid, signal.SIGKILL)
        raise
    finally:
        await process.aclose()  # anyio's: waits for the process, and kills it if that wait is cancelled


@asynccontextmanager
async def _sdk_stdio(config: ServerConfig, errlog: IO[bytes]) -> AsyncIterator[Streams]:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = dict(config.env) if config.env is not None else None
    params = StdioServerParameters(command=config.command or "", args=list(config.args), env=env, cwd=config.cwd)
    async with stdio_client(params, errlog=errlog) as streams:  # type: ignore[arg-type]
        yield streams

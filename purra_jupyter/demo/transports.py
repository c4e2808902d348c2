"""Command line of the demo server: stdio by default, or Streamable HTTP on a loopback address."""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from purra_jupyter.demo.server import DemoServer

# The MCP SDK is imported inside the functions below: importing it takes a while, and a refused command line
# (or --help) should not wait for it.

READY_STDIO = "purra-jupyter demo server ready (stdio)"
LISTENING_PREFIX = "purra-jupyter demo server listening on "
EXIT_USAGE = 2


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class UsageError(ValueError):
    """A command line value the server refuses."""


def parse_http_address(value: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` (``[::1]:PORT`` for IPv6); refuse any host that is not a loopback address."""
    host, sep, port_text = value.rpartition(":")
    if not sep or not host:
        raise UsageError(f"--http expects HOST:PORT, got {value!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        raise UsageError(f"--http port must be an integer, got {port_text!r}") from None
    if not 0 <= port <= 65535:
        raise UsageError(f"--http port must be between 0 and 65535, got {port}")
    if host == "localhost":
        return "127.0.0.1", port
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise UsageError(f"--http host must be a loopback IP address or localhost, got {host!r}") from None
    if not address.is_loopback:
        raise UsageError(f"refusing to serve on non-loopback address {host!r}; use 127.0.0.1 or ::1")
    return str(address), port


async def serve_stdio(server: DemoServer) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        # stdio_server has wrapped the real stdout; a stray print() from now on lands on stderr,
        # so nothing but protocol messages can reach the client.
        sys.stdout = sys.stderr
        _say(READY_STDIO)
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _exit_now(_signum: int = 0, _frame: object = None) -> NoReturn:
    """End the process at once (each message on stdout was flushed as it was written): there is no state to save,
    and tearing the interpreter down (the SDK's modules, jsonschema's format grammars) takes seconds, which a
    client closing the session would wait out."""
    sys.stderr.flush()
    os._exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server until its client leaves or a signal stops it; returns the exit status.

    Without ``--http`` it serves stdio and takes over this process's stdin, stdout and SIGINT/SIGTERM
    handling, and ends the process once its client leaves, so call it in a process of its own
    (``python -m purra_jupyter.demo``). A refused ``--http`` address returns 2 and starts nothing.
    """
    parser = argparse.ArgumentParser(
        prog="python -m purra_jupyter.demo",
        description="Demo MCP server for purra-jupyter: stdio by default, or Streamable HTTP on loopback.",
    )
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp; HOST must be loopback, PORT may be 0",
    )
    args = parser.parse_args(argv)
    if args.http is None:
        import anyio

        from purra_jupyter.demo.server import build_server

        # stdin is read in a worker thread that no cancellation can interrupt, so a graceful shutdown on a
        # signal would wait for the next input line; stop at once instead (there is no state to save).
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _exit_now)
        anyio.run(serve_stdio, build_server())
        _exit_now()  # the client left
    try:
        host, port = parse_http_address(args.http)
    except UsageError as error:
        _say(f"error: {error}")
        return EXIT_USAGE
    from purra_jupyter.demo.http_transport import serve_http
    from purra_jupyter.demo.server import build_server

    try:
        serve_http(build_server(), host, port, on_listening=lambda url: _say(LISTENING_PREFIX + url))
    except OSError as error:
        _say(f"error: cannot listen on {args.http}: {error}")
        return 1
    return 0

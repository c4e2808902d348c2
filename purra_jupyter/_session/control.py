"""What a session asks its server about the session itself: a ping, the level of the server's log, a new
authorization. ``McpSession`` forwards these here (their docstrings are the API reference's)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

from .._base import runner
from .._base.errors import McpSessionError
from .._base.wire import CAPABILITY_MISSING, CONFIG_INVALID, EVENT_CONNECT, EVENT_SETTING, LOG_LEVELS
from .._connection.connection import Connection, Deadline

if TYPE_CHECKING:
    from mcp import ClientSession


class Control:
    """The session-level requests of one connection."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def set_log_level(self, level: str) -> None:
        """Ask the server to send its log messages of ``level`` and above (``logging/setLevel``); they arrive as
        ``server_log`` rows of the session log. ``mcp_capability_missing`` if the server offers no logging."""
        if level not in LOG_LEVELS:
            raise McpSessionError(CONFIG_INVALID, f"level must be one of {', '.join(LOG_LEVELS)}.")
        if "logging" not in self.connection.hello.capabilities:
            raise McpSessionError(
                CAPABILITY_MISSING,
                f"Server '{self.connection.name}' offers no logging (its capabilities have no 'logging').",
            )
        self.connection.request(lambda client: client.set_logging_level(cast(Any, level)))
        self.connection.log.add(EVENT_SETTING, f"server log level '{level}' asked for")

    def ping(self, *, timeout: float | None = None) -> float:
        """Ask the server for a ping; returns the round trip in milliseconds."""
        started = time.perf_counter()
        self.connection.request(_ping, timeout=timeout)
        return (time.perf_counter() - started) * 1000

    def reauthorize(self) -> None:
        """Start the authorization over (an OAuth session): its tokens are forgotten and the flow runs again
        now, in this cell, as on connect (a ping carries it)."""
        connection = self.connection
        if self.connection.config.oauth is None:
            raise McpSessionError(CONFIG_INVALID, f"Session '{self.connection.name}' was not connected with OAuth.")
        connection.check_usable()
        connection.log.add(EVENT_CONNECT, "reauthorizing: the tokens were forgotten")
        runner.run(connection.link.forget_authorization)
        connection.request(_ping, timeout=Deadline(self.connection.config.timeout, "reauthorizing"))


async def _ping(client: ClientSession) -> object:
    return await client.send_ping()


__all__ = ["Control"]

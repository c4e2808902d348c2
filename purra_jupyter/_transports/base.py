"""What a connection needs of the way it reaches its server, whichever way that is (stdio, Streamable HTTP, memory).

A ``Transport`` is made for one connection and opened once: its ``open`` yields the two message streams the SDK's
``ClientSession`` reads and writes, and leaving it ends the server (a process, an HTTP session, a task). What it
reports back (a request that failed, the end of the session, a log row) goes through the ``TransportContext`` the
connection lends it, on the loop thread.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeAlias

from .._base.config import Scrubber
from .ingress import Ingress

if TYPE_CHECKING:
    from anyio.abc import ObjectReceiveStream, ObjectSendStream
    from mcp.shared.message import SessionMessage

RequestId: TypeAlias = str | int
# What ``ClientSession`` reads (a message admitted by the connection's ``Ingress``, or the exception that says why a
# line is not one) and writes.
Streams: TypeAlias = "tuple[ObjectReceiveStream[SessionMessage | Exception], ObjectSendStream[SessionMessage]]"


@dataclass(frozen=True, slots=True)
class Failure:
    """How one request failed. ``answered``: the server is done with it (it answered, with an error), so
    there is nothing to cancel on the server."""

    code: str
    message: str
    answered: bool
    server_text: str = ""  # what the server said (an error body, a bad event), kept out of the message


@dataclass(frozen=True, slots=True)
class TransportContext:
    """What a connection lends its transport while it is open (each called on the loop thread)."""

    @property
    def scrub(self) -> Scrubber:
        """For server text that is not a message (stderr, an HTTP body, what httpx says)."""
        return self.ingress.scrub

    ingress: Ingress  # every message the transport reads goes through ``ingress.message`` before it is handed on
    note: Callable[[str, str], None]  # a session log row: (event, detail)
    request_failed: Callable[[RequestId, Failure], None]  # one request failed; the session stays as it is
    session_ended: Callable[[str, str], None]  # (cause, code): nothing more will come
    max_message_bytes: Callable[[], int]  # the most of one message to keep (known once the limits are)
    grace: Callable[[], float]  # seconds each step of ending the server may take, asked when it ends
    persons_turn: Callable[[], AbstractAsyncContextManager[None]]  # no wait times out while a person acts
    waiting_cell: object  # what a cell waiting for this connection serves (``runner.in_waiting_cell``'s key)


class Transport(Protocol):
    """One way to reach one server. ``kind`` is ``stdio``, ``http`` or ``memory``."""

    @property
    def kind(self) -> str: ...

    @property
    def stderr(self) -> str:
        """The server's last stderr lines, scrubbed (empty where a server has no stderr of its own)."""
        ...

    def open(self, context: TransportContext) -> AbstractAsyncContextManager[Streams]:
        """Start or reach the server; leaving it ends the server, each step within ``context.grace()``."""
        ...

    async def ended(self) -> None:
        """Wait, briefly, until what the server said as it ended (its last stderr lines) is in."""
        ...

    def drop(self, request_id: RequestId) -> None:
        """The kit stopped waiting for ``request_id``: stop its exchange, if it has one of its own."""
        ...

    async def forget_authorization(self) -> None:
        """Forget the tokens the transport obtained, so that the next request authorizes again."""
        ...


__all__ = ["Failure", "RequestId", "Streams", "Transport", "TransportContext"]

"""Server-Sent Events as httpx-sse decodes them, keeping at most a bound of any one line or event in memory.

httpx-sse's ``EventSource.aiter_sse()`` buffers a line without bound (a server could send one endless
``data:`` line), so the bytes of each response go through a bound before httpx-sse's own line and event
decoders see them; ``EventStream`` keeps what outlives one connection: the last event id and the server's
``retry``.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncGenerator
from contextlib import aclosing

import anyio
import httpx
from httpx_sse import ServerSentEvent

# The decoders EventSource.aiter_sse() runs, which httpx-sse does not re-export: fed here through the bound.
from httpx_sse._decoders import SSEDecoder, SSELineDecoder

DEFAULT_RETRY = 1.0  # seconds before resuming an event stream when the server named no ``retry``
MIN_RETRY = 0.05  # a server asking for ``retry: 0`` still does not get a busy loop


class MessageTooLarge(Exception):
    """One message (a line or an event of a stream, a body) over the bound; the rest was not read."""


class EventStream:
    """The events of one event stream over its connections: ``events(response)`` for each; at most
    ``max_bytes`` of one line or of one event's data is held. ``last_id`` and ``retry`` outlive a connection."""

    def __init__(self, max_bytes: int) -> None:
        self._max = max_bytes
        self.last_id: str | None = None
        self.retry: float | None = None

    async def wait_to_reconnect(self) -> None:
        """The pause before a reconnection: the server's ``retry`` (at least ``MIN_RETRY``), else ``DEFAULT_RETRY``."""
        await anyio.sleep(max(MIN_RETRY, DEFAULT_RETRY if self.retry is None else self.retry))

    async def events(self, response: httpx.Response) -> AsyncGenerator[ServerSentEvent, None]:
        """The events of one connection's ``response`` as httpx-sse decodes them; raises ``MessageTooLarge``
        as soon as a line or an event's data passes the bound, before it is held."""
        decoder = SSEDecoder()
        named = False  # whether an event of this connection named an id (httpx-sse repeats it on the next ones)
        async with aclosing(self._lines(response)) as lines:
            async for line in lines:
                event = decoder.decode(line)
                if event is None:
                    continue
                if event.id or named:  # ("id:" with nothing after it clears the id: nothing to resume from)
                    self.last_id, named = event.id or None, True
                if event.retry is not None and event.retry >= 0:
                    self.retry = event.retry / 1000
                yield event

    async def _lines(self, response: httpx.Response) -> AsyncGenerator[str, None]:
        """``response``'s lines, split by httpx-sse's line decoder (its bytes read as UTF-8, as the format says);
        at most ``max_bytes`` of a line not yet ended, or of one event's data lines, is held."""
        text = codecs.getincrementaldecoder("utf-8")("replace")
        lines = SSELineDecoder()
        data = 0  # the characters of the event's data so far
        unended = 0  # the bytes since the last line end: what the line decoder holds
        async for chunk in response.aiter_bytes():
            end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))  # (neither byte is ever inside a UTF-8 sequence)
            unended = unended + len(chunk) if end < 0 else len(chunk) - end - 1
            if data + unended > self._max:
                raise MessageTooLarge
            for line in lines.decode(text.decode(chunk)):
                data = self._counted(line, data)
                yield line
        for line in lines.decode(text.decode(b"", final=True)) + lines.flush():  # the last line, if it did not end
            data = self._counted(line, data)
            yield line

    def _counted(self, line: str, data: int) -> int:
        """The size of the event's data once ``line`` is read (``data`` before it): raises past the bound."""
        if not line:
            return 0
        name, _, value = line.partition(":")
        if name == "data":
            data += len(value) + 1 - value.startswith(" ")
            if data > self._max:
                raise MessageTooLarge
        return data


__all__ = ["DEFAULT_RETRY", "MIN_RETRY", "EventStream", "MessageTooLarge"]

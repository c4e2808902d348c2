"""A session's transcript: every JSON-RPC message it sent and received, in order, timed, scrubbed and bounded.

Saved as JSON Lines (``Transcript.save``), format ``purra-jupyter.transcript/1``:

- line 1, the header: ``{"format": "purra-jupyter.transcript/1", "server": NAME, "transport": "stdio" | "http" |
  "memory", "target": the command line or the redacted URL, "started": an ISO 8601 time (UTC), "messages": N,
  "dropped": D}``; ``dropped`` counts the messages past the bounds, which are not in the file;
- each further line, one message: ``{"t_ms": milliseconds since "started", "dir": "sent" | "received", "message":
  the JSON-RPC message as it crossed the transport}``.

Every secret of the server's config (``ServerConfig.secrets``, and every token the authorization flow obtained) is
``***`` in every string of every message, as everywhere the kit shows server text: each message is kept as it
crossed the transport (what the server sent, as the ingress that admitted it read it) and scrubbed as the transcript
is read out (``messages``, ``save``), so a message that carried a secret is shown and saved with ``***`` in its
place. While the session runs, the messages are kept as their JSON text, packed ``PACKED`` at a time with zlib: a
batch of 100,000 calls costs its session a few MiB and a few instructions a message, not a Python object per value.
The file is written by ``untrusted.json_line`` and read back as untrusted input (``load``). ``python -m
purra_jupyter.mock FILE`` serves a transcript back as a stdio MCP server.
"""

from __future__ import annotations

import functools
import json
import math
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import McpSessionError
from .untrusted import FileRefused, json_line, read_lines
from .wire import CONFIG_INVALID

FORMAT = "purra-jupyter.transcript/1"
SENT, RECEIVED = "sent", "received"
MAX_MESSAGES = 100_000  # of one transcript: past either bound, messages are counted as dropped, not kept
MAX_BYTES = 64 << 20  # of JSON text, all messages together
PACKED = 1_000  # messages compressed together once recorded


@dataclass(frozen=True, slots=True)
class TranscriptMessage:
    """One JSON-RPC message: when (``t_ms`` after the transcript started), which way, and the message itself."""

    t_ms: float
    direction: str
    message: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"t_ms": self.t_ms, "dir": self.direction, "message": self.message}


class Transcript:
    """The messages of one session as it records them (from any thread: the loop's, mostly)."""

    def __init__(
        self,
        server: str,
        transport: str,
        target: str,
        scrub: Callable[[str], str],
        *,
        scrub_value: Callable[[Any], Any] = lambda value: value,
        max_messages: int = MAX_MESSAGES,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        """``scrub`` scrubs a text, ``scrub_value`` every string of a JSON value (``config.Scrubber`` offers both)."""
        self.header: dict[str, Any] = {"format": FORMAT, "server": server, "transport": transport,
                                       "target": scrub(target), "started": datetime.now(UTC).isoformat()}  # fmt: skip
        self._scrub_value = scrub_value
        self._started = time.perf_counter()
        self._packs: list[bytes] = []  # PACKED messages each, zlib-compressed lines (see ``_line``)
        self._recent: list[str] = []  # the lines not packed yet
        self._count = 0
        self._bytes = 0
        self._max_messages = max_messages
        self._max_bytes = max_bytes
        self.dropped = 0
        self._lock = threading.Lock()

    def record(self, direction: str, text: str) -> None:
        """Keep one message, given as its JSON text, unless the transcript is full: then count it as dropped. A line
        break in JSON text is whitespace between tokens (one in a string is escaped), kept as a space: a server may
        send its answer pretty-printed over HTTP."""
        if "\n" in text:
            text = text.replace("\n", " ")
        t_ms = round((time.perf_counter() - self._started) * 1000, 3)
        with self._lock:
            if self._count >= self._max_messages or self._bytes + len(text) > self._max_bytes:
                self.dropped += 1
                return
            self._bytes += len(text)
            self._count += 1
            self._recent.append(f"{t_ms}\t{direction}\t{text}")
            if len(self._recent) >= PACKED:
                self._packs.append(zlib.compress("\n".join(self._recent).encode(), 1))
                self._recent = []

    @property
    def messages(self) -> list[TranscriptMessage]:
        """Every message kept, scrubbed."""
        with self._lock:
            packs, recent = list(self._packs), list(self._recent)
        lines = [line for pack in packs for line in zlib.decompress(pack).decode().split("\n")] + recent
        return [self._message(line) for line in lines]

    def _message(self, line: str) -> TranscriptMessage:
        t_ms, direction, text = line.split("\t", 2)
        return TranscriptMessage(float(t_ms), direction, self._scrub_value(json.loads(text)))

    def __len__(self) -> int:
        return self._count

    def save(self, path: str | Path) -> Path:
        """Write the transcript to ``path`` as JSON Lines (see the module's docstring); the path written."""
        messages = self.messages
        header = {**self.header, "messages": len(messages), "dropped": self.dropped}
        lines = [header, *(message.to_json() for message in messages)]
        target = Path(path)
        target.write_text("".join(json_line(line) for line in lines), encoding="utf-8")
        return target

    def __repr__(self) -> str:
        dropped = f", {self.dropped} dropped past its bounds" if self.dropped else ""
        return f"<Transcript of {self.header['server']}: {len(self)} messages{dropped}>"


@dataclass(frozen=True)
class SavedTranscript:
    """A transcript read back from its file."""

    header: Mapping[str, Any]
    messages: tuple[TranscriptMessage, ...]

    @functools.cached_property
    def _responses(self) -> dict[str, TranscriptMessage]:
        """Each response received, by its request's id (read once, whatever the methods asked for)."""
        return {_key(m.message["id"]): m for m in self.messages
                if m.direction == RECEIVED and "id" in m.message and "method" not in m.message}  # fmt: skip

    def exchanges(self, method: str) -> list[Exchange]:
        """Each request of ``method`` the session sent, with the response it received (``None``: none came)."""
        responses = self._responses
        return [
            Exchange(request, responses.get(_key(request.message["id"])))
            for request in self.messages
            if request.direction == SENT and request.message.get("method") == method and "id" in request.message
        ]


@dataclass(frozen=True)
class Exchange:
    """One request and its response, as recorded."""

    request: TranscriptMessage
    response: TranscriptMessage | None

    @property
    def params(self) -> Mapping[str, Any]:
        params = self.request.message.get("params")
        return params if isinstance(params, Mapping) else {}

    @property
    def elapsed_ms(self) -> float | None:
        return None if self.response is None else round(self.response.t_ms - self.request.t_ms, 3)


def _key(request_id: Any) -> str:
    return json.dumps(request_id)


def load(path: str | Path) -> SavedTranscript:
    """Read a transcript file, as untrusted input (``untrusted.read_lines``'s bounds); ``mcp_config_invalid`` naming
    the file and the line when it is not one."""
    where = Path(path)

    def refused(why: str, number: int) -> McpSessionError:
        return McpSessionError(CONFIG_INVALID, f"{where}, line {number}: {why}.")

    try:
        lines = list(read_lines(where))
    except FileNotFoundError:
        raise McpSessionError(CONFIG_INVALID, f"Cannot read the transcript {where}: there is no such file.") from None
    except FileRefused as error:
        raise McpSessionError(CONFIG_INVALID, f"Cannot read the transcript {where}: {error.reason}.") from None
    bad = next((line for line in lines if line.refused is not None), None)
    if bad is not None:
        raise refused(str(bad.refused), bad.number)
    if not lines or not isinstance(lines[0].value, dict) or lines[0].value.get("format") != FORMAT:
        raise McpSessionError(CONFIG_INVALID, f"{where} is not a transcript: its first line must name {FORMAT}.")
    messages = []
    for line in lines[1:]:
        value = line.value
        if not (isinstance(value, dict) and value.get("dir") in (SENT, RECEIVED)
                and isinstance(value.get("message"), dict) and _is_time(value.get("t_ms"))):  # fmt: skip
            raise refused("not a transcript message", line.number)
        messages.append(TranscriptMessage(float(value["t_ms"]), value["dir"], value["message"]))
    return SavedTranscript(lines[0].value, tuple(messages))


def _is_time(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


__all__ = ["FORMAT", "Exchange", "SavedTranscript", "Transcript", "TranscriptMessage", "load"]

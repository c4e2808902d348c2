"""``python -m purra_jupyter.mock TRANSCRIPT``: a saved transcript served back as a stdio MCP server.

It answers each request the way the recorded server answered the same request: ``initialize`` with the recorded
result (whatever the client asks), ``ping`` with ``{}``, and any other method by its parameters (``_meta`` aside):
``tools/list`` page by page (its cursor), ``tools/call`` by the tool's name and arguments (a call recorded several
times is answered in the recorded order, then as the last time), and so for reads and prompts. A request the
transcript holds no answer to gets a JSON-RPC error that says so (``-32602`` for a known method, ``-32601`` for
one never recorded). Notifications are read and ignored. No MCP SDK, no network: JSON lines on stdin and stdout.
"""

from __future__ import annotations

import io
import json
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import IO, Any

from .errors import McpSessionError
from .names import visible
from .purra_adapter import canonical_json
from .transcript import SavedTranscript, load

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
PARSE_ERROR = -32700
ANY_PARAMS = ("initialize",)  # answered as recorded, whatever the client sends


def _key(method: str, params: Any) -> str:
    """A request's identity: its method and its parameters as canonical JSON, without ``_meta`` (progress tokens)."""
    if method in ANY_PARAMS:
        return method
    kept = {k: v for k, v in params.items() if k != "_meta"} if isinstance(params, Mapping) else params
    return canonical_json([method, kept or {}])


class RecordedAnswers:
    """What the recorded server answered, by request; each answer a JSON-RPC ``result`` or ``error`` member."""

    def __init__(self, transcript: SavedTranscript) -> None:
        self._answers: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._taken: dict[str, int] = defaultdict(int)
        self.methods: set[str] = set()
        for message in transcript.messages:
            method = message.message.get("method")
            if isinstance(method, str):
                self.methods.add(method)
        for method in self.methods:
            for exchange in transcript.exchanges(method):
                response = exchange.response
                if response is None:
                    continue
                answer = {k: response.message[k] for k in ("result", "error") if k in response.message}
                self._answers[_key(method, exchange.params)].append(answer)

    def answer(self, method: str, params: Any) -> dict[str, Any]:
        if method == "ping":
            return {"result": {}}
        key = _key(method, params)
        recorded = self._answers.get(key)
        if recorded:
            turn = self._taken[key]
            self._taken[key] = turn + 1
            return recorded[min(turn, len(recorded) - 1)]
        if method not in self.methods:
            return _error(METHOD_NOT_FOUND, f"purra-jupyter mock: the transcript holds no {visible(method)} request")
        return _error(INVALID_PARAMS, f"purra-jupyter mock: the transcript holds no answer to {_what(method, params)}")


def _what(method: str, params: Any) -> str:
    if method == "tools/call" and isinstance(params, Mapping):
        return f"the tools/call of {visible(str(params.get('name')))!r} with these arguments"
    return f"this {visible(method)} request (its parameters differ from every recorded one)"


def _error(code: int, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def serve(answers: RecordedAnswers, reader: IO[str], writer: IO[str]) -> None:
    """Answer each request line of ``reader`` on ``writer`` until the input ends."""
    for line in reader:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            _write(writer, {"jsonrpc": "2.0", "id": None, **_error(PARSE_ERROR, "purra-jupyter mock: not JSON")})
            continue
        if not isinstance(message, dict) or "id" not in message or not isinstance(message.get("method"), str):
            continue  # a notification, or a response to nothing the mock asked
        answer = answers.answer(message["method"], message.get("params"))
        _write(writer, {"jsonrpc": "2.0", "id": message["id"], **answer})


def _write(writer: IO[str], message: Mapping[str, Any]) -> None:
    writer.write(json.dumps(message, ensure_ascii=False) + "\n")
    writer.flush()


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if len(words) != 1:
        print("usage: python -m purra_jupyter.mock TRANSCRIPT (a file written by transcript.save)", file=sys.stderr)
        return 2
    try:
        answers = RecordedAnswers(load(words[0]))
    except McpSessionError as error:
        print(f"{error.code}: {error.message}", file=sys.stderr)
        return 2
    reader = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")  # (JSON-RPC over stdio is UTF-8, whatever the locale)
    writer = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8")
    serve(answers, reader, writer)
    return 0


if __name__ == "__main__":
    sys.exit(main())

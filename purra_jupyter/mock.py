"""``python -m purra_jupyter.mock TRANSCRIPT``: a saved transcript served back as a stdio MCP server.

It answers each request the way the recorded server answered the same request: ``initialize`` with the recorded
result (whatever the client asks), ``ping`` with ``{}``, and any other method by its parameters (``_meta`` aside):
``tools/list`` page by page (its cursor), ``tools/call`` by the tool's name and arguments (a call recorded several
times is answered in the recorded order, then as the last time), and so for reads and prompts. A request the
transcript holds no answer to gets a JSON-RPC error that says so (``-32602`` for a known method, ``-32601`` for
one never recorded). Notifications are read and ignored. No MCP SDK, no network: JSON lines on stdin and stdout.

Both the transcript and each request line are untrusted input, read within ``untrusted``'s bounds: a transcript
``transcript.load`` refuses ends the mock with one line on stderr (exit code 2); a line the mock cannot serve gets a
JSON-RPC error and the next line is read (``-32700`` not JSON; ``-32602`` past a bound, or an id that is not a string
or a number; ``-32603`` a recorded answer that is neither a result object nor an error). Each answer is one line
(``untrusted.json_line``: U+2028, U+2029 and U+0085 escaped).
"""

from __future__ import annotations

import io
import os
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import IO, Any

from ._base.errors import McpSessionError
from ._base.transcript import SavedTranscript, load
from ._base.untrusted import Line, json_line, parsed_lines
from ._base.visible import visible
from ._connection.purra_adapter import canonical_json

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
PARSE_ERROR = -32700
INTERNAL_ERROR = -32603
ANY_PARAMS = ("initialize",)  # answered as recorded, whatever the client sends


def _key(method: str, params: Any) -> str:
    """A request's identity: its method and its parameters as canonical JSON, without ``_meta`` (progress tokens)."""
    if method in ANY_PARAMS:
        return method
    kept = {k: v for k, v in params.items() if k != "_meta"} if isinstance(params, Mapping) else params
    return canonical_json([method, kept or {}])


class RecordedAnswers:
    """What the recorded server answered, by request; each answer a JSON-RPC ``result`` or ``error`` member. A
    recorded answer that is neither (a ``result`` that is not an object, an ``error`` without its code and message,
    a response with neither) is answered with ``-32603``: the transcript holds no answer the mock can give."""

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
                self._answers[_key(method, exchange.params)].append(_recorded(response.message))

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


def _recorded(response: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded response's ``result`` or ``error`` member, when it is one an MCP client can read."""
    result, error = response.get("result"), response.get("error")
    if "error" not in response and isinstance(result, dict):
        return {"result": result}
    if "result" not in response and isinstance(error, dict) and _is_int(error.get("code")):
        if isinstance(error.get("message"), str):
            return {"error": error}
    return _error(INTERNAL_ERROR, "purra-jupyter mock: the recorded answer is not a JSON-RPC result or error")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _what(method: str, params: Any) -> str:
    if method == "tools/call" and isinstance(params, Mapping):
        return f"the tools/call of {visible(str(params.get('name')))!r} with these arguments"
    return f"this {visible(method)} request (its parameters differ from every recorded one)"


def _error(code: int, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def serve(answers: RecordedAnswers, reader: IO[bytes], writer: IO[str]) -> None:
    """Answer each request line of ``reader`` on ``writer`` until the input ends (or the client stops reading).
    Each line is read as untrusted JSON (``untrusted.parse``'s bounds); a request the mock cannot serve gets a
    JSON-RPC error, and the next line is read."""
    for line in parsed_lines(reader):
        answer = _answered(answers, line)
        if answer is not None and not _write(writer, {"jsonrpc": "2.0", **answer}):
            return


def _answered(answers: RecordedAnswers, line: Line) -> dict[str, Any] | None:
    """The ``id`` and ``result`` or ``error`` members of the answer to one line; ``None``: a line that asks for
    none (a notification, a response)."""
    if line.refused is not None:
        code = PARSE_ERROR if line.refused.startswith("not JSON") else INVALID_PARAMS
        return {"id": None, **_error(code, f"purra-jupyter mock: {line.refused}")}
    message = line.value
    if not isinstance(message, dict) or "id" not in message or not isinstance(message.get("method"), str):
        return None  # a notification, or a response to nothing the mock asked
    request_id = message["id"]
    if not (request_id is None or isinstance(request_id, str | float) or _is_int(request_id)):
        return {"id": None, **_error(INVALID_PARAMS, "purra-jupyter mock: a request id is a string or a number")}
    try:
        answer = answers.answer(message["method"], message.get("params"))
    except (ValueError, TypeError, RecursionError) as error:
        said = f"purra-jupyter mock: cannot answer this request ({error.__class__.__name__})"
        return {"id": request_id, **_error(INTERNAL_ERROR, said)}
    return {"id": request_id, **answer}


def _write(writer: IO[str], message: Mapping[str, Any]) -> bool:
    """Write one message as one line; ``False`` when the client no longer reads."""
    try:
        writer.write(json_line(message))
        writer.flush()
    except (BrokenPipeError, ConnectionResetError, ValueError):  # (ValueError: a closed stream)
        return False
    return True


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
    writer = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8")  # (JSON-RPC over stdio is UTF-8, always)
    try:
        serve(answers, sys.stdin.buffer, writer)
    except KeyboardInterrupt:
        return 130
    finally:
        _quiet(writer)
    return 0


def _quiet(writer: IO[str]) -> None:
    """Flush what is left; a client gone away leaves nothing to say (and no traceback as the process ends)."""
    try:
        writer.flush()
    except (OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())

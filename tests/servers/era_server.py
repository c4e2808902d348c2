"""A hand-written JSON-RPC server (no SDK; stdio, or Streamable HTTP) of another protocol era: by default of protocol
2026-07-28 only (no ``initialize``), with ``--protocol`` of one older version only.

    python era_server.py [--initialize-error -32022|-32601] [--discover answer|error|mute]
                         [--versions V,V,...] [--no-error-data] [--protocol VERSION]
                         [--http [--http-error-status N]]

With ``--protocol VERSION`` (2024-11-05, 2025-03-26) it answers ``initialize`` with that version whatever the client
asked, and serves two tools (``echo``, whose schema fits PurrA's profile, and ``loose``, whose ``default`` does not;
a call answers ``echo: X``), a resource ``older://note``, a prompt ``greet`` (argument ``who``), ``ping`` and
``logging/setLevel``: once a level is set, each call's answer comes after a ``notifications/message`` (over HTTP
the answer is then an event stream of both).

``initialize`` gets the JSON-RPC error ``--initialize-error``: -32022 is 2026-07-28's UnsupportedProtocolVersionError,
whose ``data`` (``{"supported": [...], "requested": ...}``) lists ``--versions`` unless ``--no-error-data``; -32601
is method not found. ``server/discover`` is answered with ``supportedVersions`` (``--versions``, by default
2026-07-28), with a -32601 error (``--discover error``), or never (``mute``). Every other request gets -32601.
With ``--http`` it serves Streamable HTTP on 127.0.0.1 instead (it prints ``listening on http://127.0.0.1:PORT/mcp``):
each request is answered as one JSON body, an error with HTTP ``--http-error-status`` (by default 200).
Every message's method is written to stderr (``era server: got server/discover``), so a test can see what reached
the server (a cancellation notice included).
"""

from __future__ import annotations

import argparse
import json
import select
import sys

from http_wire import BodyHandler, QuietServer

MODERN = "2026-07-28"


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def error(message: dict, code: int, text: str, data: dict | None = None) -> dict:
    body: dict = {"code": code, "message": text}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": message["id"], "error": body}


def discover_result(versions: list[str]) -> dict:
    """What 2026-07-28's ``server/discover`` answers (its result names the server in ``_meta``)."""
    return {
        "resultType": "complete",
        "supportedVersions": versions,
        "capabilities": {"tools": {"listChanged": True}},
        "instructions": "A server of protocol 2026-07-28 only.",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "era-server", "version": "0.1"}},
    }


X_SCHEMA = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"], "additionalProperties": False}
OLDER_TOOLS = [
    {"name": "echo", "description": "Echoes x.", "inputSchema": X_SCHEMA},
    {"name": "loose", "description": "A default PurrA refuses.",
     "inputSchema": {"type": "object", "properties": {"x": {"type": "string", "default": "a"}}}},
]  # fmt: skip
NOTE = {"uri": "older://note", "name": "note", "mimeType": "text/plain"}
GREET = {"name": "greet", "description": "A greeting.", "arguments": [{"name": "who", "required": True}]}
LEVEL: list[str] = []  # the level ``logging/setLevel`` set, once it did


def older_result(method: str, params: dict, options: argparse.Namespace) -> dict | None:
    """What a server of one older version answers ``method`` with (``None``: it has no such method)."""
    if method == "initialize":
        capabilities = {"tools": {}, "resources": {}, "prompts": {}, "logging": {}}
        info = {"name": "older-server", "version": "0.1"}
        return {"protocolVersion": options.protocol, "capabilities": capabilities, "serverInfo": info,
                "instructions": f"A server of protocol {options.protocol} only."}  # fmt: skip
    if method == "logging/setLevel":
        LEVEL[:] = [params["level"]]
    results = {
        "ping": {},
        "logging/setLevel": {},
        "tools/list": {"tools": OLDER_TOOLS},
        "tools/call": {"content": [{"type": "text", "text": f"echo: {(params.get('arguments') or {}).get('x')}"}]},
        "resources/list": {"resources": [NOTE]},
        "resources/read": {"contents": [{"uri": NOTE["uri"], "mimeType": "text/plain", "text": "an older note"}]},
        "prompts/list": {"prompts": [GREET]},
        "prompts/get": {"messages": [{"role": "user", "content": {"type": "text",
                                      "text": f"Hello {(params.get('arguments') or {}).get('who')}"}}]},
    }  # fmt: skip
    return results.get(method)


def older_answers(message: dict, options: argparse.Namespace) -> list[dict]:
    """The messages that answer one request of a server of one older version: a log line before a call's answer
    once a level is set."""
    method = message.get("method", "")
    result = older_result(method, message.get("params") or {}, options)
    if result is None:
        return [error(message, -32601, f"Method not found: {method}")]
    said = {"level": "info", "logger": "older", "data": f"called under protocol {options.protocol}"}
    log = (
        [{"jsonrpc": "2.0", "method": "notifications/message", "params": said}]
        if method == "tools/call" and LEVEL
        else []
    )
    return [*log, {"jsonrpc": "2.0", "id": message["id"], "result": result}]


def answers(message: dict, options: argparse.Namespace) -> list[dict] | None:
    """The messages that answer one request (``None``: never answered)."""
    if options.protocol is not None:
        return older_answers(message, options)
    reply = answer(message, options)
    return None if reply is None else [reply]


def answer(message: dict, options: argparse.Namespace) -> dict | None:
    """The answer of a server of 2026-07-28 to one request (``None``: never answered)."""
    method = message.get("method")
    versions = options.versions.split(",")
    if method == "initialize" and options.initialize_error == -32022:
        requested = (message.get("params") or {}).get("protocolVersion")
        data = None if options.no_error_data else {"supported": versions, "requested": requested}
        return error(message, -32022, "Unsupported protocol version: initialize is not part of 2026-07-28", data)
    if method == "server/discover" and options.discover == "answer":
        return {"jsonrpc": "2.0", "id": message["id"], "result": discover_result(versions)}
    if method == "server/discover" and options.discover == "mute":
        return None
    return error(message, -32601, f"Method not found: {method}")


def handler(options: argparse.Namespace) -> type[BodyHandler]:
    class Handler(BodyHandler):
        """Streamable HTTP at any path: each POSTed request answered as JSON (an error with HTTP
        ``--http-error-status``), a notification with 202, GET 405; an unanswered request's connection is held
        until the client goes."""

        def do_POST(self) -> None:
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            print(f"era server: got {message.get('method')}", file=sys.stderr, flush=True)
            replies = answers(message, options) if "id" in message else []
            if replies is None:
                select.select([self.connection], [], [], 60)
                self.close_connection = True
            elif not replies:
                self.send_body(202, b"", "application/json")
            elif len(replies) > 1:  # an event stream: each message one event
                events = "".join(f"data: {json.dumps(reply)}\n\n" for reply in replies)
                self.send_body(200, events.encode(), "text/event-stream")
            else:
                [reply] = replies
                status = options.http_error_status if "error" in reply else 200
                self.send_body(status, json.dumps(reply).encode(), "application/json")

        def do_GET(self) -> None:
            self.send_body(405, b"", "text/plain")

        def do_DELETE(self) -> None:
            self.send_body(200, b"", "text/plain")

    return Handler


def serve_http(options: argparse.Namespace) -> int:
    server = QuietServer(("127.0.0.1", 0), handler(options))
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--initialize-error", type=int, choices=[-32022, -32601], default=-32022)
    parser.add_argument("--discover", choices=["answer", "error", "mute"], default="answer")
    parser.add_argument("--versions", default=MODERN)
    parser.add_argument("--no-error-data", action="store_true")
    parser.add_argument("--protocol", help="speak only this older version, with initialize")
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--http-error-status", type=int, default=200)
    options = parser.parse_args()
    if options.http:
        return serve_http(options)
    for line in sys.stdin:
        message = json.loads(line)
        print(f"era server: got {message.get('method')}", file=sys.stderr, flush=True)
        for reply in (answers(message, options) or []) if "id" in message else []:
            send(reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())

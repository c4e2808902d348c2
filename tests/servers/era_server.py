"""A hand-written JSON-RPC server (no SDK; stdio, or Streamable HTTP) of protocol 2026-07-28 only: no ``initialize``.

    python era_server.py [--initialize-error -32022|-32601] [--discover answer|error|mute]
                         [--versions V,V,...] [--no-error-data] [--http [--http-error-status N]]

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


def answer(message: dict, options: argparse.Namespace) -> dict | None:
    """The answer to one request (``None``: never answered)."""
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
            reply = answer(message, options) if "id" in message else {}
            if reply is None:
                select.select([self.connection], [], [], 60)
                self.close_connection = True
            elif not reply:
                self.send_body(202, b"", "application/json")
            else:
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
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--http-error-status", type=int, default=200)
    options = parser.parse_args()
    if options.http:
        return serve_http(options)
    for line in sys.stdin:
        message = json.loads(line)
        print(f"era server: got {message.get('method')}", file=sys.stderr, flush=True)
        reply = answer(message, options) if "id" in message else None
        if reply is not None:
            send(reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A Streamable HTTP MCP server (no SDK) on 127.0.0.1 that misbehaves on purpose, one fault per route.

    python http_fault_server.py          # prints "listening on http://127.0.0.1:PORT", then serves

``/mcp`` is a well-behaved server: ``initialize`` (with a session id), notifications (202), ``ping``,
``tools/list`` (``echo``) and ``tools/call`` of ``echo``; ``DELETE`` ends the session, GET is 405.
``/FAULT/WHEN/mcp`` behaves the same except at WHEN, where it answers with FAULT:

- WHEN: ``initialize``; ``call`` (a ``tools/call`` whose ``text`` is ``"fault"``: other calls work, so the
  session can be tried again); ``list`` (every ``tools/list``); ``list-after-first`` (each ``tools/list``
  of a session but its first); ``delete`` (the session's ``DELETE``).
- FAULT: ``status-N`` (HTTP N, a body quoting the request's Authorization header; 429 with ``Retry-After:
  7``), ``html`` (a web page), ``not-jsonrpc`` (JSON that is not JSON-RPC), ``wrong-id`` (the answer to
  another id), ``bad-sse-data`` (an event whose data is not JSON, then the stream stays open),
  ``sse-eof`` (an event stream that ends before the answer), ``sse-reset`` (... breaks with a TCP reset),
  ``sse-die`` (... and the whole server exits), ``resumable`` (a priming event with an id and
  ``retry: 100``, then the end; a GET with that ``Last-Event-ID`` gets the answer), ``resume-fails``
  (... the GET gets a 503), ``endless-line`` (one ``data:`` line that never ends, written fast),
  ``sse-crlf`` / ``sse-cr`` (the answer with ``\r\n`` / ``\r`` line ends, split across chunks),
  ``big-event`` (a complete 20 MB event), ``huge-header`` (a 1 MB response header), ``drip`` (a comment
  byte every 100 ms, forever), ``redirect-loop`` (307 to itself), ``redirect-cross`` (307 to
  ``localhost``: another origin of this same server), ``hang`` (no answer at all), ``slow-pages``
  (``tools/list`` in 4 pages, 2.5 s each), ``oauth-insecure`` (401 pointing to protected-resource metadata,
  ``GET /_insecure-resource``, whose authorization server is reached over plain ``http://`` at a host that is
  not loopback).

``GET /_events`` returns what the server saw as JSON: each request (path, host, HTTP and JSON-RPC method,
id), each ``notifications/cancelled`` and the moment a client went away from an answer it was streaming.
"""

from __future__ import annotations

import json
import os
import select
import socket
import struct
import sys
import threading
import time
import uuid
from typing import Any

from http_wire import BodyHandler, QuietServer

ECHO = {
    "name": "echo",
    "description": "Return the given text unchanged.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    },
    "annotations": {"readOnlyHint": True},
}
PAGES = 4
PAGE_DELAY = 2.5
EVENTS: list[dict[str, Any]] = []
LISTED: dict[str, int] = {}  # session id -> tools/list requests seen
RESUMABLE: dict[str, bytes] = {}  # event id -> the answer a resuming GET gets
LOCK = threading.Lock()


def note(**event: Any) -> None:
    with LOCK:
        EVENTS.append({"time": time.time(), **event})


class Handler(BodyHandler):
    # --- routing -----------------------------------------------------------------------------------

    def route(self) -> tuple[str | None, str | None]:
        parts = self.path.split("?", 1)[0].strip("/").split("/")
        return (parts[0], parts[1]) if len(parts) == 3 and parts[2] == "mcp" else (None, None)

    def do_GET(self) -> None:
        if self.path == "/_events":
            with LOCK:
                self.send_json(EVENTS)
            return
        if self.path == "/_insecure-resource":  # names an authorization server reached over plain http
            resource = f"http://{self.headers.get('Host')}/oauth-insecure/initialize/mcp"
            self.send_json({"resource": resource, "authorization_servers": ["http://auth.example.invalid"]})
            return
        fault, _ = self.route()
        last = self.headers.get("Last-Event-ID")
        note(http="GET", path=self.path, host=self.headers.get("Host"), last_event_id=last)
        if last is not None and fault == "resume-fails":
            self.send_body(503, b"no resumption here", "text/plain")
        elif last is not None and last in RESUMABLE:
            self.start_stream()
            self.chunk(b"id: e2\ndata: " + RESUMABLE.pop(last) + b"\n\n")
            self.end_stream()
        else:
            self.send_body(405, b"", "text/plain")

    def do_DELETE(self) -> None:
        fault, when = self.route()
        note(http="DELETE", path=self.path, host=self.headers.get("Host"))
        if when == "delete" and fault == "hang":
            self.hang()
        else:
            self.send_body(200, b"", "text/plain")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        method, ident = body.get("method"), body.get("id")
        fault, when = self.route()
        note(http="POST", path=self.path, host=self.headers.get("Host"), rpc=method, id=ident)
        if method == "notifications/cancelled":
            note(cancelled=body["params"].get("requestId"), path=self.path)
        if ident is None and method is not None:  # a notification
            self.send_body(202, b"", "text/plain")
            return
        if fault is not None and self.faulty(when, method, body):
            self.fault(fault, method, ident)
            return
        self.answer(method, ident, body)

    def faulty(self, when: str | None, method: str, body: dict[str, Any]) -> bool:
        if method == "tools/list":
            session = self.headers.get("mcp-session-id", "")
            with LOCK:
                LISTED[session] = LISTED.get(session, 0) + 1
                seen = LISTED[session]
            return when == "list" or (when == "list-after-first" and seen > 1)
        if method == "tools/call":
            return when == "call" and body["params"].get("arguments", {}).get("text") == "fault"
        return when == method

    # --- answers --------------------------------------------------------------------------------------

    def answer(self, method: str, ident: Any, body: dict[str, Any], *, cursor_delay: float = 0.0) -> None:
        headers = {}
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": body["params"].get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "http-fault-server", "version": "1.0"},
            }
            headers["mcp-session-id"] = uuid.uuid4().hex
        elif method == "tools/list":
            result = {"tools": [ECHO]}
        elif method == "tools/call":
            text = body["params"].get("arguments", {}).get("text", "")
            result = {"content": [{"type": "text", "text": text}]}
        elif method == "ping":
            result = {}
        else:
            self.send_json({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no such method"}})
            return
        self.send_json({"jsonrpc": "2.0", "id": ident, "result": result}, headers)

    def fault(self, fault: str, method: str, ident: Any) -> None:
        if fault.startswith("status-"):
            status = int(fault.removeprefix("status-"))
            extra = {"Retry-After": "7"} if status == 429 else {}
            said = f"upstream exploded; you sent Authorization: {self.headers.get('Authorization')}"
            self.send_body(status, said.encode(), "text/plain", extra)
        elif fault == "oauth-insecure":
            metadata = f"http://{self.headers.get('Host')}/_insecure-resource"
            self.send_body(401, b"", "text/plain", {"WWW-Authenticate": f'Bearer resource_metadata="{metadata}"'})
        elif fault == "html":
            self.send_body(200, b"<html><body><h1>Welcome</h1></body></html>", "text/html")
        elif fault == "not-jsonrpc":
            self.send_json({"hello": "world"})
        elif fault == "wrong-id":
            self.send_json({"jsonrpc": "2.0", "id": 1000 + (ident if isinstance(ident, int) else 0), "result": {}})
        elif fault == "huge-header":
            self.send_body(200, b"{}", "application/json", {"X-Big": "a" * 1_000_000})
        elif fault == "redirect-loop":
            self.send_body(307, b"", "text/plain", {"Location": self.path})
        elif fault == "redirect-cross":
            port = self.server.server_address[1]
            self.send_body(307, b"", "text/plain", {"Location": f"http://localhost:{port}/mcp"})
        elif fault == "hang":
            self.hang()
        elif fault == "slow-pages":
            self.slow_page(ident)
        else:
            self.stream_fault(fault, ident)

    def slow_page(self, ident: Any) -> None:
        time.sleep(PAGE_DELAY)
        with LOCK:
            page = sum(1 for event in EVENTS if event.get("rpc") == "tools/list" and "slow-pages" in event["path"])
        result: dict[str, Any] = {"tools": [ECHO] if page == 1 else []}
        if page < PAGES:
            result["nextCursor"] = f"page-{page + 1}"
        self.send_json({"jsonrpc": "2.0", "id": ident, "result": result})

    def stream_fault(self, fault: str, ident: Any) -> None:
        self.start_stream()
        if fault == "bad-sse-data":
            self.chunk(b"event: message\ndata: not json{\n\n")
            self.hang()
        elif fault in ("sse-eof", "sse-reset", "sse-die"):
            log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "working"}}
            self.chunk(b"data: " + json.dumps(log).encode() + b"\n\n")
            if fault == "sse-eof":
                self.end_stream()
            elif fault == "sse-reset":  # closing the descriptor itself, with no linger, sends a RST
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                socket.close(self.connection.detach())
                self.close_connection = True
            else:
                os._exit(0)
        elif fault in ("resumable", "resume-fails"):
            answer = {"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "resumed"}]}}
            event_id = uuid.uuid4().hex
            RESUMABLE[event_id] = json.dumps(answer).encode()
            self.chunk(f"id: {event_id}\nretry: 100\ndata: \n\n".encode())
            self.end_stream()
        elif fault in ("sse-crlf", "sse-cr"):  # the answer, its line ends split across chunks
            answer = {"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "split"}]}}
            data = json.dumps(answer).encode()
            end = b"\r\n" if fault == "sse-crlf" else b"\r"
            for part in (b"id: 1" + end[:1], end[1:] + b"data: " + data[:9], data[9:] + end[:1], end[1:] + end):
                self.chunk(part)
                time.sleep(0.02)
            self.end_stream()
        elif fault == "big-event":
            text = "x" * 20_000_000
            answer = {"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": text}]}}
            self.write_until_gone([b"data: " + json.dumps(answer).encode() + b"\n\n"], fault)
        elif fault == "endless-line":
            self.write_until_gone(iter(lambda: b"x" * 65_536, None), fault, first=b"data: ")
        elif fault == "drip":
            self.write_until_gone(iter(lambda: b":", None), fault, pause=0.1)

    # --- the wire -------------------------------------------------------------------------------------

    def send_json(self, value: Any, headers: dict[str, str] | None = None) -> None:
        self.send_body(200, json.dumps(value).encode(), "application/json", headers)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def write_until_gone(self, parts: Any, fault: str, *, first: bytes = b"", pause: float = 0.0) -> None:
        """Stream ``parts`` until they end or the client goes away (noted with how much it was sent)."""
        sent = 0
        try:
            if first:
                self.chunk(first)
            for part in parts:
                self.chunk(part)
                sent += len(part)
                if pause:
                    time.sleep(pause)
            self.end_stream()
        except OSError:
            note(gone=fault, sent=sent, path=self.path)
            self.close_connection = True

    def hang(self) -> None:
        """Send nothing more; note when the client closes its side (or give up after a minute)."""
        ready, _, _ = select.select([self.connection], [], [], 60)
        if ready and not self.connection.recv(1, socket.MSG_PEEK):
            note(gone="hang", path=self.path)
        self.close_connection = True


def main() -> None:
    server = QuietServer(("127.0.0.1", 0), Handler)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())

"""Server text is scrubbed of the config's secrets before the kit shows it.

A stdio server that prints its env secret to stderr, puts it into a JSON-RPC error, into a line of garbage on
stdout and into its last words before it exits; a Streamable HTTP server that puts the header it got into its
errors. The secret must appear nowhere the kit shows: ``s.stderr``, the log (text, frame, HTML), error
messages, causes, results' server text, the status widget. Envelopes stay purra-mcp's own bytes.
"""

from __future__ import annotations

import json
import threading
import traceback
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from conftest import raw_config, wait_until

import purra_jupyter as pj

SECRET = "tok-9d41c7e2a5"
HEADER_SECRET = "hdr-3be8f01c6d"


def surfaces(session: pj.McpSession) -> dict[str, str]:
    """Everything the kit shows of a session, as text."""
    status = session.status_widget()
    return {
        "stderr": session.stderr,
        "log": repr(session.log),
        "log frame": session.log.to_frame().to_csv(),
        "log html": session.log._repr_mimebundle_()["text/html"],
        "cause": session.cause,
        "repr": repr(session),
        "html": json.dumps(session._repr_mimebundle_()),
        "status": status.value,
    }


def assert_scrubbed(texts: dict[str, str], *secrets: str) -> None:
    leaks = [(where, secret) for where, text in texts.items() for secret in secrets if secret in text]
    assert leaks == [], leaks


def secret_server(*args: str) -> pj.ServerConfig:
    return raw_config("scrubbed", "--echo-env", "RAW_TOKEN", *args, env={"RAW_TOKEN": SECRET}, timeout=2)


def test_stdio_server_text_is_scrubbed_of_the_env_secret() -> None:
    with pj.connect(secret_server("--call-result", "rpc-error")) as session:
        wait_until(lambda: "token is" in session.stderr, what="the server's stderr line")
        assert "raw server: RAW_TOKEN token is ***" in session.stderr  # the line is kept, the secret is not
        raw = session.call("tool_000", {"x": "a"}, raw=True, approve=True)
        assert raw.error_code == "mcp_protocol_error" and "***" in raw.server_text
        envelope = session.call("tool_000", {"x": "a"}, approve=True)
        assert envelope.error_code == "mcp_protocol_error" and envelope.to_dict() == {"text": [], "structured": None}
        assert "***" in envelope.server_text  # the server's words beside the envelope, scrubbed too
        timed_out = session.call("tool_000", {"x": "mute"}, raw=True, approve=True, timeout=0.5)
        assert timed_out.error_code == "mcp_timeout" and "as what the server said" in timed_out.message
        assert "***" in timed_out.server_text and "RAW_TOKEN" in timed_out.server_text  # the stderr tail, scrubbed
        texts = surfaces(session)
        texts.update(
            {
                "raw": repr(raw),
                "raw html": json.dumps(raw._repr_mimebundle_()),
                "timeout": repr(timed_out),
                "envelope": repr(envelope),
                "envelope bundle": json.dumps(envelope._repr_mimebundle_()),
            }
        )
        assert_scrubbed(texts, SECRET)


def test_a_cause_and_a_connect_failure_are_scrubbed_of_the_env_secret() -> None:
    with pj.connect(secret_server("--fault", "garbage")) as session:
        with pytest.raises(pj.McpSessionError) as caught:
            session.ping()  # the garbage line, holding the secret, comes before the answer
        assert "not valid JSON-RPC" in session.cause
        lines = [row.detail for row in session.log.events("error") if "line that is not valid" in row.detail]
        assert lines and all("***" in line for line in lines)  # the server's line, in the log, scrubbed
        assert_scrubbed({**surfaces(session), "error": "".join(traceback.format_exception(caught.value))}, SECRET)

    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect(secret_server("--fault", "exit-on-initialize"))
    assert caught.value.code == "mcp_connect_failed" and "***" in caught.value.server_text
    assert_scrubbed({"error": "".join(traceback.format_exception(caught.value))}, SECRET)


class _HeaderEcho(BaseHTTPRequestHandler):
    """A minimal Streamable HTTP server (JSON responses): one tool, whose every call is a JSON-RPC error that
    quotes the Authorization header the server received."""

    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        authorization = self.headers.get("Authorization", "")
        type(self).seen.append(authorization)
        if "id" not in message:
            self._send(202, None)
            return
        method = message["method"]
        if method == "initialize":
            result: Any = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "header-echo", "version": "1"}}  # fmt: skip
        elif method == "tools/list":
            schema = {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": False}
            result = {"tools": [{"name": "lookup", "inputSchema": schema}]}
        elif method == "tools/call":
            error = {"code": -32603, "message": f"upstream refused the credential {authorization}"}
            self._send(200, {"jsonrpc": "2.0", "id": message["id"], "error": error})
            return
        else:
            result = {}
        self._send(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})

    def do_GET(self) -> None:
        self._send(405, None)

    def do_DELETE(self) -> None:
        self._send(200, None)

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def header_echo() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HeaderEcho)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/mcp"
    finally:
        server.shutdown()


def test_http_server_text_is_scrubbed_of_the_header_secret(header_echo: str) -> None:
    config = pj.ServerConfig("echoing", url=header_echo, headers={"Authorization": f"Bearer {HEADER_SECRET}"})
    with pj.connect(config) as session:
        raw = session.call("lookup", {"x": "a"}, raw=True, approve=True)
        assert raw.error_code == "mcp_protocol_error"
        assert raw.server_text == "JSON-RPC error -32603: upstream refused the credential ***"
        assert _HeaderEcho.seen[-1] == f"Bearer {HEADER_SECRET}"  # the server did get it, and sent it back
        texts = {**surfaces(session), "raw": repr(raw), "raw html": json.dumps(raw._repr_mimebundle_())}
        assert_scrubbed(texts, HEADER_SECRET)

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
from contextlib import contextmanager
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import quote

import pytest
from conftest import raw_config, wait_until
from test_untrusted import untrusted, untrusted_http

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


# --- what only looks like a secret stays as the server sent it ---------------------------------------------------

# Env values whose names hold a secret word only inside another word, or name no secret: the shell's PWD, which every
# ``env={**os.environ, ...}`` carries, git's author, a keyboard's layout, a field to sort by, an OAuth scope.
LOOK_ALIKES = {"AUTH_SCOPE": "read", "GIT_AUTHOR_NAME": "Text Author", "KEYBOARD_LAYOUT": "file", "PWD": "/work/text",
               "OLDPWD": "/work", "SORT_KEY": "created_at", "MAX_TOKENS": "4096"}  # fmt: skip
ECHOED = 'ghp-"7f3\\a9/b+e2d5'  # the secret a server echoes: its JSON-escaped and URL-encoded forms differ from it
WORDS = "Read a text file as Text Author wrote it, from /work/text, sorted by created_at, at most 4096 tokens."
FILE_TOOLS = [
    {"name": "read_text_file", "description": WORDS, "inputSchema": {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
        "additionalProperties": False}},
    {"name": "speak", "description": "Says the secret back, every way.", "inputSchema": {"type": "object"}},
]  # fmt: skip
SAYS = "raw={secret} json={secret_json} url={secret_url}; read_text_file by Text Author"
FILE_PLAN: dict[str, Any] = {
    "tools": FILE_TOOLS, "calls": {"speak": "say"}, "result_text": "you gave {secret}",
    "say": [{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": SAYS}}],
}  # fmt: skip
# How the secret the server echoes was given: by an env name that says so, by secret_env, in a header, in the URL.
GIVEN = ["env name", "secret_env", "header", "query"]


def purra_digest(tools: list[dict[str, Any]]) -> str:
    """The catalog digest a PurrA host computes of this listing (``purra.json-identity/v1``, tool by tool)."""
    from purra.structured import json_identity_digest

    return json_identity_digest({"tools": {tool["name"]: json_identity_digest(tool) for tool in tools}})


@contextmanager
def file_server(given: str) -> Iterator[tuple[pj.ServerConfig, str]]:
    """The untrusted server listing ``FILE_TOOLS``, over stdio with ``LOOK_ALIKES`` in its env or over Streamable HTTP
    with a query value ``read``; the secret given as ``given`` says; and where it comes from, in the session's words."""
    if given in ("env name", "secret_env"):
        name = "GITHUB_TOKEN" if given == "env name" else "DEPLOY_LABEL"
        secret_env = [name] if given == "secret_env" else []
        with untrusted("stdio", {**FILE_PLAN, "secret_env": name}, "files", env={**LOOK_ALIKES, name: ECHOED},
                       secret_env=secret_env) as config:  # fmt: skip
            yield config, f"env {name}"
        return
    plan = {**FILE_PLAN, "secret_query": "api_key"} if given == "query" else FILE_PLAN
    with untrusted_http(plan, "files") as (served, _):
        if given == "header":
            yield pj.ServerConfig("files", url=f"{served.url}?mode=read", headers={"Authorization": ECHOED}), "header"
        else:
            yield pj.ServerConfig("files", url=f"{served.url}?mode=read&api_key={quote(ECHOED, safe='')}"), "api_key"


@pytest.mark.parametrize("given", GIVEN)
def test_words_that_only_look_like_secrets_stay_as_the_server_sent_them(given: str) -> None:
    """``AUTH_SCOPE=read`` (and git's author, a keyboard layout, the shell's PWD, a sort key, a query value ``read``)
    once turned ``read_text_file`` into ``***_text_file``: binding it failed and the catalog's digest was not a PurrA
    host's. Now the listing is the server's, byte for byte, while the person's real secret is ``***`` in every form."""
    with file_server(given) as (config, source), pj.connect(config) as s:
        assert [tool.name for tool in s.catalog.tools] == ["read_text_file", "speak"]
        assert s.catalog["read_text_file"].description == WORDS
        assert s.catalog.digest == purra_digest(FILE_TOOLS)  # what a PurrA host's digest of the listing is
        assert s.bind("read_text_file")["remoteName"] == "read_text_file"
        envelope = s.call("read_text_file", {"path": "/work/text/read_me"}, approve=True)
        assert envelope.ok and envelope.text == ['{"path": "/work/text/read_me"}'], envelope
        said = s.call("speak", {}, raw=True, approve=True)
        assert said.content[0]["text"] == "you gave ***", said
        logged = [row.detail for row in s.log.events("server_log")]
        assert any("raw=*** json=*** url=***; read_text_file by Text Author" in row for row in logged), logged
        table = s._repr_mimebundle_()["text/html"]
        assert source in table and not [name for name in LOOK_ALIKES if name in table], table
        texts = {**surfaces(s), "said": repr(said), "envelope": repr(envelope), "table": table}
        assert_scrubbed(texts, *forms_of(ECHOED))


def forms_of(secret: str) -> tuple[str, ...]:
    """The secret as it is, JSON-escaped and URL-encoded: the forms in reach."""
    return secret, json.dumps(secret)[1:-1], quote(secret, safe="")


def test_a_secret_too_short_to_tell_from_a_word_is_left_as_it_is_and_the_session_says_so() -> None:
    """A secret of fewer than 8 characters (``secret_env=["AUTH_SCOPE"]`` with ``read``, a PIN) is not searched for:
    the server's ``read_text_file`` stays; the session's table and its log at connect name it (never its value)."""
    from purra_jupyter._session.session import SECRETS_LABEL

    env = {"AUTH_SCOPE": "read", "PIN_TOKEN": "4321", "GITHUB_TOKEN": ECHOED, "PORT": "8080"}
    plan = {**FILE_PLAN, "secret_env": "GITHUB_TOKEN"}
    with untrusted("stdio", plan, "short", env=env, secret_env=["AUTH_SCOPE"]) as config, pj.connect(config) as s:
        assert config.secrets == (ECHOED,)
        assert [tool.name for tool in s.catalog.tools] == ["read_text_file", "speak"]
        said = (
            "scrubbed as ***: env GITHUB_TOKEN; not searched for, under 8 characters (a server's word could be "
            "one): env AUTH_SCOPE, env PIN_TOKEN; 1 other env value is no secret (secret_env names more)"
        )
        assert s.log.events("connect")[1].detail == f"secrets: {said}"
        table = s._repr_mimebundle_()["text/html"]
        assert escape(SECRETS_LABEL) in table and escape(said) in table
        assert "4321" not in table and "4321" not in repr(s.log)

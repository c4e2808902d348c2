"""The standing hostile matrix: every surface server data reaches (``_base.surfaces``) × every attack class.

A hostile server (``tests/servers/untrusted_server.py``) puts one hostile text everywhere it can (tool names, titles,
descriptions, schemas, instructions, server info, log lines, progress, task status, results, errors, stderr,
resources, prompts), holding the session's secret as it is, JSON-escaped and URL-encoded, markup, links, ANSI escapes,
a bidirectional override, a zero-width space and forged workflow commands. One session over stdio and one over
Streamable HTTP go through every surface the way a person does (and a CI job, and a file); then each attack class is
checked on what each surface showed. Attacks a surface cannot meet here (a view, the authorization flow) name the test
that makes them; a surface without a row for an attack fails ``test_every_surface_has_a_row_for_every_attack``, and
code that writes to a medium from a place no surface names fails ``test_every_place_that_writes_is_a_surface``.
"""

from __future__ import annotations

import ast
import base64
import io
import json
import re
import subprocess
import sys
import traceback
import urllib.parse
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import (
    ROOT,
    SERVERS,
    descendants,
    execute_notebook,
    plan_argument,
    unsafe_markup,
    untrusted_server,
    wait_until,
)
from IPython.utils.capture import capture_output

import purra_jupyter as pj
from purra_jupyter._base.consent import destination, form_fields
from purra_jupyter._base.egress import HTML_CHARS, TEXT_CHARS, cell_text
from purra_jupyter._base.frames import FRAME_CELL_CHARS
from purra_jupyter._base.surfaces import CELL_TEXT, CLI, DATA, FILE, HTML, SURFACES, WIRE
from purra_jupyter._connection.questions import ELICITATION, SAMPLING, Asking
from purra_jupyter._connection.tracking import CancelToken
from purra_jupyter._purra.catalog import CATALOG_HTML_CHARS, CATALOG_TEXT_CHARS
from purra_jupyter._ui.questions import (
    QuestionWidget,
    form_answer,
    not_sent,
    question_bundle,
    sampling_reply,
    will_send,
)
from purra_jupyter.magics import frame_formatter

UNTRUSTED = SERVERS / "untrusted_server.py"
# A DataFrame the kit returns: the person's data, its values exactly the server's; pandas escapes its HTML.
FRAME = "a DataFrame's HTML (pandas)"
PACKAGE = ROOT / "purra_jupyter"
TRANSPORTS = ["stdio", "http"]
ATTACKS = ("secrets", "markup", "links", "controls", "size", "floods", "late", "crafted files", "approval fidelity",
           "consent", "apartness")  # fmt: skip

SECRET = 'tok-"9d4\\1c7e2a5f0'  # a quote and a backslash: JSON escapes them, so a scrub of JSON text misses them
TOKEN_NAME = "API_TOKEN"  # an env name that says its value is a secret
PLAIN_ENV = {"PORT": "8080", "DEBUG": "true", "MCP_LOG_LEVEL": "error"}  # not secrets: a server may say them
FORGED = "\n::stop-commands::pwned\n::error title=forged::the kit did not write this\n"
EVIL = "evil.example"
HOSTILE = (
    "<script>window.__pwned=1</script><img src=x onerror=window.__pwned=1> verify your account at "
    f"https://{EVIL}/login or www.{EVIL} or data:text/html,hi \x1b[31mRED\x1b]8;;https://{EVIL}/\x07link\x1b]8;;\x07 "
    "\u202eRLO\u202c zero\u200bwidth port 8080 debug true level error "
    "raw={secret} json={secret_json} url={secret_url}" + FORGED
)
OBJECT = {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": False}
# A reason three tools give (a property name with a forged workflow command, and a default): the catalog shows it
# once, naming the tools, one of them named in markup, an override and the secret.
SHARED = {"type": "object", "properties": {f"a{FORGED}": {"type": "string", "default": "x"}}}
SHARED_NAME = "<img src=x onerror=window.__pwned=1>\u202e{secret}"
NUMBERS = {"type": "object", "properties": {"n": {"type": "number"}, "k": {"type": "number"}},
           "required": ["n", "k"], "additionalProperties": False}  # fmt: skip
# fmt: off
PLAN: dict[str, Any] = {
    "secret_env": TOKEN_NAME,
    "initialize": {"instructions": HOSTILE, "serverInfo": {"name": HOSTILE, "version": "1"}},
    "tools": [
        {"name": "speak", "title": HOSTILE, "description": HOSTILE,
         "inputSchema": {**OBJECT, "properties": {"x": {"type": "string", "title": HOSTILE, "description": HOSTILE}}}},
        {"name": "leak {secret}", "description": "a name holding the secret", "inputSchema": SHARED},
        {"name": "fails", "description": "fails with the secret in its error", "inputSchema": OBJECT},
        {"name": "forged", "description": "a property name its verdict's reason quotes", "inputSchema": SHARED},
        {"name": SHARED_NAME, "description": "among the tools of a shared reason", "inputSchema": SHARED},
        {"name": "numbers", "description": "echoes its arguments as they arrived", "inputSchema": NUMBERS},
    ],
    "calls": {"speak": "say", "fails": "leak-rpc-error", "numbers": "raw-echo"},
    "say": [
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": HOSTILE}},
        {"jsonrpc": "2.0", "id": "ask-model", "method": "sampling/createMessage",
         "params": {"systemPrompt": HOSTILE, "maxTokens": 9, "modelPreferences": {"hints": [{"name": HOSTILE}]},
                    "messages": [{"role": "user", "content": {"type": "text", "text": HOSTILE}}]}},
        {"jsonrpc": "2.0", "id": "ask-form", "method": "elicitation/create",
         "params": {"message": HOSTILE, "requestedSchema": {"type": "object", "properties": {
             "x": {"type": "string", "title": HOSTILE, "description": HOSTILE, "default": HOSTILE,
                   "enum": [HOSTILE]}}}}},
        {"jsonrpc": "2.0", "id": "ask-url", "method": "elicitation/create",
         "params": {"mode": "url", "message": HOSTILE, "url": f"https://{EVIL}/x?{{secret}}", "elicitationId": "e"}},
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": "{token}", "progress": 1, "total": 2, "message": HOSTILE}},
    ],
    "result_text": HOSTILE,
    "stderr": [HOSTILE.replace("\n", " ")],
    "resources": [{"uri": "demo://r", "name": "r", "title": HOSTILE, "description": HOSTILE}],
    "prompts": [{"name": "p", "description": HOSTILE, "arguments": [{"name": "a", "description": HOSTILE}]}],
    "offered_text": HOSTILE,
    "ping_error": {"code": -32603, "message": HOSTILE},
}
# fmt: on


def forms(secret: str) -> dict[str, str]:
    """The secret as a server may send it back: as it is, JSON-escaped, URL-encoded (the forms in reach)."""
    return {"raw": secret, "json": json.dumps(secret)[1:-1], "url": urllib.parse.quote(secret, safe="")}


@dataclass
class Output:
    medium: str
    text: str
    where: str


@dataclass
class Shown:
    """What every surface showed of one hostile session."""

    transport: str
    outputs: dict[str, list[Output]] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()
    notes: dict[str, Any] = field(default_factory=dict)

    def add(self, surface: str, medium: str, text: str, where: str) -> None:
        assert surface in SURFACES, surface
        self.outputs.setdefault(surface, []).append(Output(medium, str(text), where))

    def bundle(self, surface: str, bundle: dict[str, Any], where: str) -> None:
        for mime, data in bundle.items():
            if mime == "text/html":
                self.add(surface, HTML, data, f"{where} text/html")
            elif mime == "text/plain":
                self.add(surface, CELL_TEXT, data, f"{where} text/plain")
            elif mime.startswith("application/vnd.purra"):
                self.add(surface, DATA, json.dumps(data, ensure_ascii=False), f"{where} {mime}")


QUIET = {key: value for key, value in PLAN.items() if key != "ping_error"}  # (a ping answered)


@contextmanager
def hostile_config(transport: str, name: str, plan: dict[str, Any] = PLAN, **options: Any) -> Iterator[pj.ServerConfig]:
    with plan_argument(plan, inline_below=0) as argument:  # (always a file: the plan holds every attack)
        with _hostile_config(transport, name, argument, **options) as config:
            yield config


@contextmanager
def _hostile_config(transport: str, name: str, plan: str, **options: Any) -> Iterator[pj.ServerConfig]:
    env, headers = {TOKEN_NAME: SECRET, **PLAIN_ENV}, {"Authorization": f"Bearer {SECRET}"}
    with untrusted_server(transport, name, plan, env=env, headers=headers, **options) as config:
        yield config


def cli_check(config: pj.ServerConfig, form: str) -> subprocess.CompletedProcess[str]:
    if config.url is not None:
        server = ["--url", config.url, *(f"--header={k}={v}" for k, v in (config.headers or {}).items())]
    else:
        server = [*(f"--env={k}={v}" for k, v in (config.env or {}).items()), "--", config.command or "", *config.args]
    command = [sys.executable, "-c", "from purra_jupyter.cli import run; run()", "check", "--format", form, *server]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)


# A form field's value: set as an <input>'s value (never markup), and sent back as it is shown, so a server's default
# stays as it is there (its label and description are the field's HTML).
FIELD_VALUE = "a form field's value (an <input>'s value)"


def widget_texts(widget: Any) -> list[str]:
    """The HTML of ``widget`` and its descendants (an HTML widget's value, a button's label)."""
    return [w.value for w in descendants(widget) if isinstance(getattr(w, "value", None), str) and not _field(w)]


def field_values(widget: Any) -> list[str]:
    return [w.value for w in descendants(widget) if _field(w) and isinstance(w.value, str)]


def _field(widget: Any) -> bool:
    import ipywidgets

    return isinstance(widget, ipywidgets.Text | ipywidgets.Textarea | ipywidgets.Combobox)


def show_the_session(shown: Shown, s: pj.McpSession) -> None:
    """What a session shows of itself: its catalog (bundle, repr, frame), its table and repr, its status line."""
    shown.bundle("catalog", s.catalog._repr_mimebundle_(), "catalog")
    shown.add("catalog", CELL_TEXT, repr(s.catalog), "repr(catalog)")
    shown.add("catalog", FRAME, s.catalog.to_frame()._repr_html_(), "catalog frame")
    shown.bundle("session", s._repr_mimebundle_(), "session")
    shown.add("session", CELL_TEXT, repr(s), "repr(session)")
    shown.add("status line", HTML, s.status_widget().value, "status widget")
    shown.add("status line", CELL_TEXT, s.status_widget().text, "status text")


def asking_of(server: str, params: dict[str, Any]) -> Asking:
    """Who asks (a call of ``speak``), with a question's fields or destination read as the session reads them."""
    calls = (CancelToken(call="speak"),)
    if params.get("mode") == "url":
        return Asking(server, calls, destination=destination(params["url"]))
    return Asking(server, calls, fields=form_fields(params["requestedSchema"]) if "requestedSchema" in params else ())


def exercise(transport: str, tmp: Path, ip: Any) -> Shown:
    """One hostile session through every surface, as a person, a CI job and a file would meet it."""
    shown = Shown(transport)
    with hostile_config(transport, "hostile") as config:
        shown.secrets = config.secrets
        asked: list[tuple[str, dict[str, Any]]] = []  # what the server asked (its questions, answered in code)

        def answering(kind: str, answer: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
            return lambda params: asked.append((kind, params)) or answer

        answers = {"sampling": answering(SAMPLING, sampling_reply("ok")),
                   "elicitation": answering(ELICITATION, {"action": "decline"})}  # fmt: skip
        with pj.connect(config, approval="prompt", record=True, **answers) as s:
            groups = [[tool.name for tool in group.tools] for group in s.catalog.shared_reasons]
            assert any(len(names) == 3 and "\u202e" in "".join(names) for names in groups), groups  # grouped below
            show_the_session(shown, s)

            pending = s.call("speak", {"x": "asked"}, raw=True)  # a person's turn: the approval widget
            shown.bundle("approval", pending._repr_mimebundle_(), "pending approval")
            for text in widget_texts(pending.widget):
                shown.add("approval", HTML, text, "approval widget")
            shown.add("call record", CELL_TEXT, repr(pending), "repr(pending)")
            pending.approve()
            wait_until(lambda: pending.state == "done", what="the clicked call")
            pending.widget.activity.draw()  # (what the widget drew of the running call, had it been alive)
            shown.add("activity", HTML, pending.widget.activity.words.value, "activity widget")
            shown.bundle("call record", pending._repr_mimebundle_(), "record")
            shown.bundle("raw result", pending.result._repr_mimebundle_(), "raw result")
            shown.add("raw result", CELL_TEXT, repr(pending.result), "repr(raw result)")

            with redirect_stdout(io.StringIO()) as printed:
                s.call("speak", {"x": "in code"}, raw=True, approve=True)
            shown.add("activity", CELL_TEXT, printed.getvalue(), "lines printed under a call approved in code")

            shown.bundle("binding", s.bind("speak")._repr_mimebundle_(), "binding")
            envelope = s.call("speak", {"x": "purra"}, approve=True)
            shown.bundle("envelope", envelope._repr_mimebundle_(), "envelope")
            shown.add("envelope", CELL_TEXT, repr(envelope), "repr(envelope)")

            failed = s.call("fails", {"x": "y"}, raw=True, approve=True)
            shown.add("errors", CELL_TEXT, repr(failed), "a failed call")
            with pytest.raises(pj.McpSessionError) as raised:
                s.ping()
            error = raised.value
            for text, where in ((str(error), "str(error)"), (error.message, "message"),
                                (error._render_traceback_()[0], "IPython's line"),
                                ("".join(traceback.format_exception(error)).replace(error.server_text, ""), "chain"),
                                (cell_text(error.server_text), "server_text as shown")):  # fmt: skip
                shown.add("errors", CELL_TEXT, text, where)

            shown.bundle("offerings", s.resources._repr_mimebundle_(), "resources")
            shown.bundle("offerings", s.read_resource("demo://r")._repr_mimebundle_(), "resource")
            shown.bundle("offerings", s.prompts._repr_mimebundle_(), "prompts")
            shown.bundle("offerings", s.get_prompt("p", {"a": "x"})._repr_mimebundle_(), "prompt")
            for text in widget_texts(s.form("speak")):
                shown.add("forms", HTML, text, "tool form")
            for text in widget_texts(s.prompt_form("p")):
                shown.add("forms", HTML, text, "prompt form")

            assert {kind for kind, _ in asked} == {SAMPLING, ELICITATION}, asked
            for kind, params in asked:  # as a person is asked: in the waiting cell, and in a widget
                asking = asking_of(s.name, params)
                shown.bundle("questions", question_bundle(kind, asking, params), f"{kind} question")
                if "requestedSchema" in params:  # a form's answer: what does not fit quotes the schema, and what fits
                    schema, fields = params["requestedSchema"], asking.fields  # is said, defaults included
                    problem, _ = form_answer('{"x": "not one of them"}', schema, fields)
                    assert problem is not None
                    shown.add("questions", CELL_TEXT, not_sent(problem), "the waiting cell's line: not sent")
                    fits, content = form_answer("{}", schema, fields)
                    assert fits is None, fits
                    shown.add("questions", CELL_TEXT, will_send(content), "the waiting cell's line: will send")
                question = QuestionWidget(kind, asking, params)
                for text in widget_texts(question):
                    shown.add("questions", HTML, text, f"{kind} question widget")
                for text in field_values(question):
                    shown.add("questions", FIELD_VALUE, text, f"{kind} question's prefilled field")

            checkpoint = tmp / f"{transport}.checkpoint.jsonl"
            frame = s.evaluate("speak", [{"x": "1"}, {"x": "2"}], raw=True, approve=True, checkpoint=checkpoint)
            summary = frame.attrs["summary"]
            shown.bundle("batch", summary._repr_mimebundle_(), "summary")
            shown.add("batch", FRAME, frame._repr_html_(), "frame")
            for kit_frame, where in ((frame, "batch"), (s.catalog.to_frame(), "catalog"), (s.log.to_frame(), "log")):
                shown.add("frames", HTML, frame_formatter(kit_frame), f"the kit's HTML of the {where} frame")
            shown.add("chart", CELL_TEXT, repr(summary.chart), "latency chart")
            shown.bundle("chart", s.catalog.refusal_chart()._repr_mimebundle_(), "refusal chart")
            shown.add("checkpoint", FILE, checkpoint.read_text(encoding="utf-8"), "checkpoint file")
            failing = s.evaluate("fails", [{"x": "1"}], raw=True, approve=True)
            junit = tmp / f"{transport}.junit.xml"
            with pytest.raises(pj.McpSessionError):
                pj.assert_checks(failing, junit=junit)
            shown.add("junit file", FILE, junit.read_text(encoding="utf-8"), "assert_checks' JUnit")

            transcript = tmp / f"{transport}.transcript.jsonl"
            s.transcript.save(transcript)
            shown.add("transcript", FILE, transcript.read_text(encoding="utf-8"), "transcript file")
            if transport == "stdio":
                shown.add("stderr", CELL_TEXT, s.stderr, "s.stderr (print(s.stderr) shows it so)")
            shown.bundle("session log", s.log._repr_mimebundle_(), "session log")
            shown.add("session log", CELL_TEXT, repr(s.log), "repr(log)")
            shown.notes["log"] = [row.detail for row in s.log]

        replayed = pj.replay(transcript, config, approve=True)
        shown.bundle("replay", replayed.attrs["summary"]._repr_mimebundle_(), "replay summary")
        shown.add("replay", FRAME, replayed._repr_html_(), "replay frame")

    mock = pj.ServerConfig("mock", command=sys.executable, args=["-m", "purra_jupyter.mock", str(transcript)])
    with pj.connect(mock) as served:
        answered = served.call("speak", {"x": "asked"}, raw=True, approve=True)
        shown.add("mock", WIRE, json.dumps(answered.to_dict(), ensure_ascii=False), "the mock's answer")

    with hostile_config(transport, "magic") as config:  # the magics' path: instructions and errors in blocks
        entry = {"url": config.url, "headers": dict(config.headers or {})} if config.url else {
            "command": config.command, "args": list(config.args), "env": dict(config.env or {})}  # fmt: skip
        servers = tmp / f"{transport}.mcp.json"
        servers.write_text(json.dumps({"mcpServers": {"magic": entry}}))
        with capture_output() as captured:
            ip.run_line_magic("mcp_connect", f"magic --config {servers}")
            ip.run_cell("%mcp_read magic demo://nowhere/at/all")  # an error the server's words explain, shown apart
            ip.run_line_magic("mcp_disconnect", "magic")
        for output in captured.outputs:
            shown.bundle("instructions", output.data, "a magic's outputs")
        shown.add("errors", CELL_TEXT, captured.stdout + captured.stderr, "a magic's printed error")
        for form in ("text", "json", "junit", "github"):
            result = cli_check(config, form)
            shown.add(f"check {form}", CLI, result.stdout + result.stderr, f"purra-jupyter check --format {form}")
            shown.notes[f"check {form}"] = result
    return shown


# The tests that read the shared sessions run on one worker (pytest-xdist), which makes each transport's once.
SHARED = pytest.mark.xdist_group("hostile-exercise")


@pytest.fixture(scope="module")
def exercised(tmp_path_factory: pytest.TempPathFactory, ip: Any) -> Callable[[str], Shown]:
    """The shared hostile session of each transport, made once when a test first asks for it."""
    made: dict[str, Shown] = {}

    def shown(transport: str) -> Shown:
        if transport not in made:
            made[transport] = exercise(transport, tmp_path_factory.mktemp(transport), ip)
        return made[transport]

    return shown


# --- the attack classes, checked on what every surface showed --------------------------------------------------

# What JupyterLab's text renderer makes a link of (its ``webLinkRegex``), pointing at the server's address.
WEB_LINK = re.compile(rf"[a-zA-Z][a-zA-Z0-9+.-]{{2,40}}://[^\s]*{re.escape(EVIL)}|www\.{re.escape(EVIL)}|data:text")
INVISIBLE = ("\x1b", "\u202e", "\u202c", "\u200b", "\x07")
KIT_COMMANDS = ("::error title=PurrA", "::warning title=PurrA", "::notice title=purra-jupyter",
                "::error title=purra-jupyter")  # fmt: skip


def outputs(shown: Shown, surface: str, *media: str) -> list[Output]:
    found = [output for output in shown.outputs.get(surface, []) if not media or output.medium in media]
    assert found, f"{surface} showed nothing over {shown.transport} ({media or 'any medium'})"
    return found


def secrets_absent(shown: Shown, surface: str) -> None:
    """No secret in any form in reach (as it is, JSON-escaped, URL-encoded), in any medium."""
    for output in outputs(shown, surface):
        for secret in shown.secrets:
            for name, form in forms(secret).items():
                assert form not in output.text, (surface, output.where, name)


def markup_inert(shown: Shown, surface: str) -> None:
    """Every HTML it wrote is the kit's own inert markup; the server's is text in it."""
    for output in outputs(shown, surface, HTML, FRAME):
        assert unsafe_markup(output.text, pandas=output.medium == FRAME) == [], (
            surface,
            output.where,
            output.text[:2000],
        )


def links_absent(shown: Shown, surface: str) -> None:
    """No server-chosen address that a frontend would make a link: none in plain text (JupyterLab links
    ``scheme://``, ``www.`` and ``data:`` there), no ``<a>`` to one in HTML."""
    for output in outputs(shown, surface, CELL_TEXT, HTML, FRAME):
        if output.medium == CELL_TEXT:
            assert not WEB_LINK.search(output.text), (surface, output.where, WEB_LINK.search(output.text))
        else:
            parsed = re.findall(r"<a\b[^>]*>", output.text)
            assert not [tag for tag in parsed if EVIL in tag], (surface, output.where, parsed)


def controls_escaped(shown: Shown, surface: str) -> None:
    """No control, bidirectional or invisible character a person reads (each shown as its escape); no line a CI runner
    would take for a command the kit did not write; a file's lines split only where its writer split them."""
    for output in outputs(shown, surface, CELL_TEXT, HTML, CLI, FILE):
        if output.medium in (CELL_TEXT, HTML, CLI):
            assert not [c for c in INVISIBLE if c in output.text], (surface, output.where)
        lines = output.text.split("\n")
        if output.medium == CLI:
            commands = [line for line in lines if line.lstrip().startswith("::")]
            assert all(line.startswith(KIT_COMMANDS) for line in commands), (surface, output.where, commands)
        if output.medium == FILE:
            assert output.text.splitlines() == output.text.rstrip("\n").split("\n"), (surface, output.where)


@dataclass(frozen=True)
class Elsewhere:
    """An attack this module's shared session cannot make on a surface: the test that makes it (``path::name``)."""

    test: str
    why: str = ""


@dataclass(frozen=True)
class NotApplicable:
    why: str


Row = Callable[[Shown, str], None] | Elsewhere | NotApplicable
HERE = "tests/test_hostile_matrix.py"
NO_HTML = NotApplicable("no HTML: its medium is text or JSON, which nothing interprets as markup")
NO_LINKS_CLI = NotApplicable("a command's output is read in a terminal or a CI log; links are that viewer's choice")
NO_LINKS_FILE = NotApplicable("a file is data for the kit and for tools, not a page")
SIZE = Elsewhere(f"{HERE}::test_huge_server_text_is_shown_cut_everywhere")
FLOOD = Elsewhere(f"{HERE}::test_a_notification_flood_delays_its_call_by_no_more_than_its_timeout")
LATE = Elsewhere(f"{HERE}::test_late_and_unknown_messages_never_fail_the_session")
FIDELITY = Elsewhere(f"{HERE}::test_the_approval_shows_the_bytes_that_are_sent")
HUGE_DATA = Elsewhere(f"{HERE}::test_huge_resources_prompts_and_logs_are_shown_bounded")
CRAFTED = Elsewhere("tests/test_crafted_files.py", "transcripts and checkpoints crafted by hand, read back")
NOT_FILES = NotApplicable("it reads no file: what it shows comes from a session")
NOT_A_CALL = NotApplicable("it shows no call's arguments")
# Consent: for a surface that asks the person or sends on their behalf, who asks (a call of its own session), what is
# shown against what is sent, a withdrawal.
NOT_ASKING = NotApplicable("it asks the person nothing and sends nothing on their behalf")
QUESTIONS_CONSENT = Elsewhere(
    "tests/test_consent.py",
    "whose question, what is shown against what is sent, where an address goes, a withdrawal: stdio and HTTP, a "
    "waiting cell, a widget, a function",
)
# Apartness: for each message kind, a hostile session at the bounds against a bystander session's calls and the
# process's memory (every surface of a session is fed by what its ingress admits).
APART = Elsewhere(
    "tests/test_apartness.py",
    "notifications, the server's requests, answers no request awaits and messages whose head says nothing, at the "
    "bounds and past the rate, over stdio and HTTP, while a bystander session calls; the process's memory bounded",
)
OWN_PROCESS = NotApplicable("a command runs one session in a process of its own: there is no other to stall")
FROM_ADMITTED = NotApplicable("written from what the session's ingress admitted, within the file's own bound")
COMMON: dict[str, Row] = {"secrets": secrets_absent, "markup": markup_inert, "links": links_absent,
                          "controls": controls_escaped, "size": SIZE, "floods": FLOOD, "late": LATE,
                          "crafted files": NOT_FILES, "approval fidelity": NOT_A_CALL,
                          "consent": NOT_ASKING, "apartness": APART}  # fmt: skip


def row(**different: Row) -> dict[str, Row]:
    return {**COMMON, **{attack.replace("_", " "): value for attack, value in different.items()}}


VIEWS = "tests/test_views.py::test_a_hostile_view_reaches_nothing_and_leaves_the_page_unchanged"
OAUTH = "tests/test_oauth.py::test_the_authorization_view_shows_a_hostile_address_as_text"
OAUTH_CELL = "tests/test_oauth.py::test_an_expired_authorization_asks_the_cell_that_waits_and_no_other"
ROWS: dict[str, dict[str, Row]] = {
    "catalog": row(size=Elsewhere(f"{HERE}::test_a_catalog_whose_reasons_quote_huge_names_is_shown_bounded")),
    "envelope": row(size=HUGE_DATA, approval_fidelity=FIDELITY),
    "raw result": row(size=HUGE_DATA, approval_fidelity=FIDELITY),
    "session": row(),
    "instructions": row(),
    "session log": row(size=HUGE_DATA),
    "stderr": row(
        markup=NO_HTML, size=Elsewhere("tests/test_faults.py::test_a_stderr_flood_keeps_only_a_bounded_tail")
    ),
    "status line": row(),
    "approval": row(approval_fidelity=FIDELITY, consent=FIDELITY),
    "call record": row(size=HUGE_DATA, approval_fidelity=FIDELITY),
    "activity": row(),
    "binding": row(),
    "offerings": row(size=HUGE_DATA),
    "forms": row(links=links_absent, approval_fidelity=FIDELITY, consent=FIDELITY),
    "view": {
        **{attack: Elsewhere(VIEWS, "a hostile view of a test server, in JupyterLab") for attack in ATTACKS},
        "apartness": APART,  # (its resource and its calls' answers come through its session's ingress)
    },
    "batch": row(crafted_files=CRAFTED, approval_fidelity=FIDELITY),
    "frames": row(size=HUGE_DATA),
    "replay": row(crafted_files=CRAFTED),
    "chart": row(markup=NO_HTML),
    "authorization": {
        **{attack: Elsewhere(OAUTH, "an authorization server's hostile address") for attack in ATTACKS},
        "consent": Elsewhere(OAUTH_CELL, "only the cell that waits for the session is asked to sign in"),
        "apartness": NotApplicable("an authorization server's few HTTP answers, read within their bounds at sign-in"),
    },
    "questions": row(consent=QUESTIONS_CONSENT),
    "errors": row(markup=NO_HTML),
    "check text": row(markup=NO_HTML, links=NO_LINKS_CLI, apartness=OWN_PROCESS),
    "check json": row(markup=NO_HTML, links=NO_LINKS_CLI, apartness=OWN_PROCESS),
    "check junit": row(markup=NO_HTML, links=NO_LINKS_CLI, apartness=OWN_PROCESS),
    "check github": row(markup=NO_HTML, links=NO_LINKS_CLI, apartness=OWN_PROCESS),
    "junit file": row(markup=NO_HTML, links=NO_LINKS_FILE, apartness=FROM_ADMITTED),
    "transcript": row(markup=NO_HTML, links=NO_LINKS_FILE, crafted_files=CRAFTED, apartness=FROM_ADMITTED),
    "checkpoint": row(markup=NO_HTML, links=NO_LINKS_FILE, crafted_files=CRAFTED, apartness=FROM_ADMITTED),
    "mock": row(
        apartness=OWN_PROCESS,
        markup=NO_HTML,
        links=NotApplicable("JSON-RPC answers to a client, not text a person reads"),
        controls=NotApplicable("JSON-RPC answers carry the recorded values exactly"),
        crafted_files=CRAFTED,
    ),
}
ONLY = {"stderr": ("stdio",)}  # surfaces one transport has: a Streamable HTTP server's stderr is its own
CHECKED = [
    (transport, surface, attack)
    for transport in TRANSPORTS
    for surface, attacks in ROWS.items()
    for attack, check in attacks.items()
    if callable(check) and transport in ONLY.get(surface, TRANSPORTS)
]
# (grouped by transport: each shared session runs once)


def test_every_surface_has_a_row_for_every_attack() -> None:
    assert set(ROWS) == set(SURFACES), set(ROWS) ^ set(SURFACES)
    for surface, attacks in ROWS.items():
        assert set(attacks) == set(ATTACKS), (surface, set(attacks) ^ set(ATTACKS))


def test_every_row_elsewhere_names_a_test_that_exists() -> None:
    for surface, attacks in ROWS.items():
        for attack, check in attacks.items():
            if not isinstance(check, Elsewhere):
                continue
            path, _, name = check.test.partition("::")
            tree = ast.parse((ROOT / path).read_text())
            names = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
            assert not name or name in names, (surface, attack, check.test)


@SHARED
@pytest.mark.parametrize(("transport", "surface", "attack"), CHECKED, ids=[f"{t}-{s}-{a}" for t, s, a in CHECKED])
def test_each_surface_holds_against_each_attack(
    exercised: Callable[[str], Shown], transport: str, surface: str, attack: str
) -> None:
    check = ROWS[surface][attack]
    assert callable(check)
    check(exercised(transport), surface)


@SHARED
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_what_is_not_a_secret_is_not_scrubbed(exercised: Callable[[str], Shown], transport: str) -> None:
    """Env values whose names do not say they are secrets stay readable where the server says them (a scrub of every
    env value made a server's words unreadable: "port ***")."""
    said = "\n".join(exercised(transport).notes["log"])
    assert "port 8080 debug true level error" in said, said[:2000]


# --- what writes to a medium is a surface -------------------------------------------------------------------------

WRITERS = {"bundle", "text_bundle", "cell_text", "cli_text", "json_line", "emit", "widget_bundle"}
# Places that write only the kit's own words (or the person's config), no server data: why each is safe.
KIT_WORDS = {
    "_base.config.OAuth": "the person's OAuth settings, secrets as ***",
    "_base.config.ServerConfig": "the person's server config, secrets as ***",
    "magics.MagicHelp": "a magic's usage text",
    "_base.transcript.Transcript": "the server's config name and counts",
    "_base.egress": "the egress itself",
    "_ui.records.LiveOutput": "what it is given, made elsewhere",
}


def places_that_write() -> set[str]:
    """Every class with a ``__repr__`` or ``_repr_mimebundle_``, and every module or function that calls a writer of a
    medium (``WRITERS``): as ``module``, ``module.Class`` and ``module.function``."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if "demo" in path.parts:
            continue
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                methods = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
                if methods & {"__repr__", "_repr_mimebundle_"}:
                    found.add(f"{module}.{node.name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in WRITERS:
                    found.add(module)
    return found


def test_every_place_that_writes_is_a_surface() -> None:
    named = {place for surface in SURFACES.values() for place in surface.places}
    missing = {place for place in places_that_write() if place not in named and place not in KIT_WORDS
               and place.rsplit(".", 1)[0] not in KIT_WORDS}  # fmt: skip
    assert not missing, f"places that write to a medium and are no surface of _base/surfaces.py: {missing}"


# --- attacks that need a session of their own ----------------------------------------------------------------------

HUGE = 3_500_000  # characters of instructions


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_huge_server_text_is_shown_cut_everywhere(transport: str, ip: Any, tmp_path: Path) -> None:
    """3.5 MB of instructions stay whole on ``s.instructions``; everything that shows them shows a cut, and says so."""
    plan = {**QUIET, "initialize": {"instructions": "i" * HUGE + " the end"}}
    with hostile_config(transport, "huge", plan) as config:
        with pj.connect(config) as s:
            assert len(s.instructions or "") == HUGE + len(" the end")
            bundle = s._repr_mimebundle_()
            assert (
                len(bundle["text/html"]) < 20_000
                and "showing the first 4,000 of 3,500,008 characters" in bundle["text/html"]
            )
        servers = tmp_path / "mcp.json"
        entry = {"url": config.url, "headers": dict(config.headers or {})} if config.url else {
            "command": config.command, "args": list(config.args), "env": dict(config.env or {})}  # fmt: skip
        servers.write_text(json.dumps({"mcpServers": {"huge": entry}}))
        with capture_output() as captured:
            ip.run_line_magic("mcp_connect", f"huge --config {servers}")
            ip.run_line_magic("mcp_disconnect", "huge")
        shown = [output.data for output in captured.outputs]
        assert sum(len(json.dumps(data)) for data in shown) < 100_000
        assert any("s.instructions holds them all" in data.get("text/plain", "") for data in shown)


# A server's data at megabytes, in text that escaping makes longer (``<`` is ``&lt;``, a zero-width space ``\u200b``).
LINE = "a line <b>&amp;</b> 'quoted' \"too\" \u200b\n"
MARKUP = "<div onclick='x()'>&amp;</div>\n"
BIG_TEXT = 3_500_000  # characters of a text resource (and of HTML and SVG source, and of CSV)
BIG_JSON = json.dumps({"items": [{"n": n, "label": "<script>x()</script> & 'it'"} for n in range(90_000)]})
PROMPT_TEXT = "<&>" * 20_000  # within a prompt's 64 KiB (purra-mcp's limit of a result): 240,000 characters of HTML
FLOOD_DATA = "<" * 300  # each of the log flood's lines
SLACK = 4_000  # the kit's own words around what a display bounds: its head, its notes
HUGE_PLAN: dict[str, Any] = {
    **QUIET,
    "tools": [{"name": "speak", "inputSchema": {"type": "object"}}, {"name": "big", "inputSchema": {"type": "object"}}],
    "calls": {"speak": "flood", "big": "say"},
    "say": [],
    "result_text": PROMPT_TEXT,
    "resources": [{"uri": f"huge://{n}", "name": f"r{n}", "description": "<" * 4_000} for n in range(200)],
    "contents": {
        "huge://text": {"mimeType": "text/plain", "text": LINE, "times": BIG_TEXT // len(LINE)},
        "huge://json": {"mimeType": "application/json", "text": BIG_JSON},
        "huge://csv": {"mimeType": "text/csv", "text": 'n,<b>"x"</b>\n', "times": BIG_TEXT // 14},
        "huge://html": {"mimeType": "text/html", "text": MARKUP, "times": BIG_TEXT // len(MARKUP)},
        "huge://svg": {"mimeType": "image/svg+xml", "text": MARKUP, "times": BIG_TEXT // len(MARKUP)},
    },
    "messages": {"huge": {"text": PROMPT_TEXT}},
}
# Each display: how it is made of the session, and the attribute its note names as holding it all.
HUGE_DISPLAYS: dict[str, tuple[str, str]] = {
    "text resource": ("s.read_resource('huge://text')", ".text holds them all"),
    "JSON resource": ("s.read_resource('huge://json')", ".text holds them all"),
    "CSV resource": ("s.read_resource('huge://csv')", ".text holds them all"),
    "HTML source": ("s.read_resource('huge://html')", ".text holds them all"),
    "SVG source": ("s.read_resource('huge://svg')", ".text holds them all"),
    "prompt": ("s.get_prompt('huge')", ".text holds them all"),
    "resource listing": ("s.resources", "s.resources.to_frame() holds them all"),
    "session log": ("s.log", "s.log.to_frame() holds them all"),
    "raw result": ("s.call('big', {}, raw=True, approve=True)", ".content holds them all"),
    "envelope": ("s.call('big', {}, approve=True)", ".text holds them all"),
}
# What the session does before it is shown: a tool bound, a log flooded.
PREPARE = (
    f"s.bind('big')\nassert s.call('speak', {{'count': 12_000, 'data': {FLOOD_DATA!r}}}, raw=True, approve=True).ok"
)


def assert_bounded(name: str, bundle: dict[str, Any], whole: str) -> None:
    """A display's HTML and text within the bound of one display (escaped, as they are in the bundle), each saying how
    much it shows and where the rest is."""
    html, text = bundle["text/html"], bundle["text/plain"]
    assert len(html) <= HTML_CHARS + SLACK and len(text) <= TEXT_CHARS + SLACK, (name, len(html), len(text))
    for medium, shown in (("html", html), ("text", text)):
        assert re.search(r"showing the (first|last) [\d,]+ of [\d,]+ ", shown), (name, medium, shown[-300:])
        assert whole in shown, (name, medium, whole, shown[-300:])
    assert unsafe_markup(html) == [], (name, html[:2000])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_huge_resources_prompts_and_logs_are_shown_bounded(transport: str) -> None:
    """A text resource of 3.5 MB, a JSON one of 4.5 MB, CSV, HTML and SVG source of 3.5 MB, a prompt and a tool's
    result whose text escapes to 240,000 characters, a listing of 200 resources of 4,000 ``<`` each and a log flood:
    each display's HTML and text (a call's record too) stay within one display's bound, say how much they show, and name
    the attribute that holds it all, which does; a batch's frame of such results cuts each value."""
    with hostile_config(transport, "huge", HUGE_PLAN) as config, pj.connect(config) as s:
        exec(PREPARE, {"s": s})
        for name, (made, whole) in HUGE_DISPLAYS.items():
            assert_bounded(name, eval(made, {"s": s})._repr_mimebundle_(), whole)
        assert len(s.read_resource("huge://text").text) == BIG_TEXT // len(LINE) * len(LINE)
        assert s.read_resource("huge://json").text == BIG_JSON
        assert s.get_prompt("huge").text == [PROMPT_TEXT]
        assert len(s.resources.to_frame()) == 200 and len(s.log.to_frame()) > 2_000
        pending = s.call("big", {}, raw=True)  # a call's record: its decision, then its result as shown
        pending.approve()
        wait_until(lambda: pending.state == "done", what="the approved call")
        assert_bounded("call record", pending._repr_mimebundle_(), ".content holds them all")
        batch = s.evaluate("big", [{}, {}, {}], raw=True, approve=True)  # each row's text: 240,000 characters of HTML
        assert set(batch["text"]) == {PROMPT_TEXT}
        html = frame_formatter(batch)  # (the kit's HTML of its frames, a settled batch's record's too)
        assert len(html) < 3 * len(batch.columns) * (FRAME_CELL_CHARS + 200), len(html)
        assert "the DataFrame holds them whole" in html


# A catalog whose schemas hold property names of 50,000 ``<``: each is quoted by three reasons of its tool.
WIDE = "<" * 50_000
WIDE_PROPERTY = {"type": "string", "default": "d", "format": "f", "pattern": "p"}
WIDE_PLAN: dict[str, Any] = {**QUIET, "tools": [
    {"name": f"wide{n}", "inputSchema": {"type": "object", "properties": {f"{WIDE}{n}": WIDE_PROPERTY}}}
    for n in range(4)]}  # fmt: skip


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_catalog_whose_reasons_quote_huge_names_is_shown_bounded(transport: str) -> None:
    """Four tools whose three reasons each quote a property name of 50,000 ``<`` (2.4 MB of HTML, drawn whole): the
    catalog's HTML and text stay within the catalog's bound, each reason cut saying where it is whole, which it is."""
    with hostile_config(transport, "wide", WIDE_PLAN) as config, pj.connect(config) as s:
        bundle = s.catalog._repr_mimebundle_()
        reasons = [reason for tool in s.catalog.tools for reason in tool.reasons if WIDE in reason]
    assert len(reasons) == 12, [reason[:80] for reason in reasons]
    html, text = bundle["text/html"], bundle["text/plain"]
    assert len(html) <= CATALOG_HTML_CHARS + SLACK and len(text) <= CATALOG_TEXT_CHARS + SLACK, (len(html), len(text))
    cut = r"showing the first 1,000 of [\d,]+ characters; the tool(&#x27;|')s \.reasons holds them all"
    assert len(re.findall(cut, html)) == len(re.findall(cut, text)) == 12, (html[-3000:], text[-3000:])


def test_a_saved_notebook_of_huge_server_data_stays_bounded(tmp_path: Path) -> None:
    """The displays of the test above, each in a cell of a notebook run on a real kernel (nbclient) and saved: each
    output within one display's bound, saying so, and the saved file under 1 MB (the server sent over 20 MB)."""
    with plan_argument(HUGE_PLAN, inline_below=0) as plan:
        connect = (
            f"s = pj.connect(pj.ServerConfig('huge', command=sys.executable, args=[{str(UNTRUSTED)!r}, {plan!r}]))"
        )
        cells = ["import sys\nimport purra_jupyter as pj", connect, PREPARE,
                 *(made for made, _ in HUGE_DISPLAYS.values()), "s.close()"]  # fmt: skip
        notebook = nbformat.v4.new_notebook()
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
        nbformat.write(notebook, tmp_path / "huge.ipynb")
        execute_notebook(tmp_path / "huge.ipynb", tmp_path / "saved.ipynb")
    saved = nbformat.read(tmp_path / "saved.ipynb", as_version=4)
    outputs = {cell.source: cell.outputs for cell in saved.cells}
    for name, (made, whole) in HUGE_DISPLAYS.items():
        [output] = outputs[made]
        assert_bounded(name, output["data"], whole)
    # Ten displays of at most 48 kB of HTML and text each; the two results' payloads for the extension hold the result
    # whole, within the session's limits (64 KiB); the file's JSON escapes some characters twice over.
    assert (tmp_path / "saved.ipynb").stat().st_size < 1_000_000, (tmp_path / "saved.ipynb").stat().st_size


# Words that, split where the server put line breaks (``\n``, ``\r``, U+2028, U+0085), make rows of the catalog's text.
FORGED_ROWS = ("fetch: callable", "delete_everything: callable", "write_all: callable", "rm: callable")
FORGE = "x\nfetch: callable\rdelete_everything: callable\u2028write_all: callable\u0085rm: callable\r\ny"
BREAKS = ("\r", "\u2028", "\u2029", "\u0085", "\x0b", "\x0c")
LISTED = f"a, b{FORGE}"  # a name that holds a list's separator and line breaks
ESCAPES = {"\n": "\\u000a", "\r": "\\u000d", "\u2028": "\\u2028", "\u0085": "\\u0085"}
QUOTED = "'" + "".join(ESCAPES.get(char, char) for char in LISTED) + "'"  # as a list shows it: one name, in quotes
FORGING_SCHEMA = {"type": "object", "properties": {FORGE: {"type": "string", "default": "d"}}}
FORGING_PLAN: dict[str, Any] = {
    **QUIET,
    "initialize": {"serverInfo": {"name": FORGE, "version": FORGE}},
    "tools": [
        {"name": "speak", "title": FORGE, "description": FORGE, "inputSchema": FORGING_SCHEMA},
        {"name": LISTED, "title": FORGE, "description": FORGE, "inputSchema": FORGING_SCHEMA},
        {"name": "said", "title": FORGE, "description": FORGE, "inputSchema": {"type": "object"}},
    ],
    "calls": {"speak": "say", LISTED: "say", "said": "say"},
    "say": [{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": FORGE}}],
    "result_text": FORGE,
}


def forms_of_plain_text(s: pj.McpSession, config: pj.ServerConfig, transport: str, tmp: Path) -> dict[str, str]:
    """Every plain-text form of what the forging server said: the session, the catalog, a call's record, a raw result,
    an envelope, the session log, a batch's summary and chart, a replay's summary, and ``purra-jupyter check``'s
    text."""
    pending = s.call(LISTED, {}, raw=True)
    pending.approve()
    wait_until(lambda: pending.state == "done", what="the approved call")
    s.bind("said")
    envelope = s.call("said", {}, approve=True)
    batch = s.evaluate(LISTED, [{}, {}], raw=True, approve=True)
    s.transcript.save(tmp / "forging.jsonl")
    with hostile_config(transport, "replayed", QUIET) as other:  # its tools differ: the changes name them
        replayed = pj.replay(tmp / "forging.jsonl", other, approve=True)
    return {"session": repr(s), "catalog": repr(s.catalog), "record": pending._repr_mimebundle_()["text/plain"],
            "raw result": repr(pending.result), "envelope": repr(envelope), "session log": repr(s.log),
            "batch summary": repr(batch.attrs["summary"]), "batch chart": repr(batch.attrs["summary"].chart),
            "replay summary": repr(replayed.attrs["summary"]),
            "check text": cli_check(config, "text").stdout}  # fmt: skip


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_no_server_string_forges_a_line_of_plain_text(transport: str, tmp_path: Path) -> None:
    """Tool names, titles, descriptions, property names, log lines and results that hold line breaks (``\n``, ``\r``,
    U+2028, U+0085) and rows of the catalog's text: in every plain-text form each server string stays on its line (a
    result's block of lines stands behind ``| ``), no forged row appears, and each name of a list is quoted (``a, b``
    in one name is not two)."""
    with hostile_config(transport, "forging", FORGING_PLAN) as config, pj.connect(config, record=True) as s:
        shown = forms_of_plain_text(s, config, transport, tmp_path)
    for form, text in shown.items():
        assert not [mark for mark in BREAKS if mark in text], (form, text[:3000])
        forged = [line for line in text.splitlines() if line.lstrip().startswith(FORGED_ROWS)]  # (a block: behind "| ")
        assert forged == [], (form, forged)
    for form in ("catalog", "replay summary"):  # a list of names: the shared reason's tools, the tools that went
        assert QUOTED in shown[form], (form, shown[form][:3000])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_notification_flood_delays_its_call_by_no_more_than_its_timeout(transport: str) -> None:
    """20,000 notifications at once (log lines, progress of no one's token, a method nobody knows) before the answer,
    within what a session may send unasked: the call gets its answer, the session log keeps a bounded count and says
    how many were not handed on (every unknown one, and the informing ones past the flood budget). A flood past that
    budget fails its own session: tests/test_apartness.py."""
    plan = {**QUIET, "tools": [{"name": "speak", "inputSchema": {"type": "object"}}], "calls": {"speak": "flood"}}
    with hostile_config(transport, "flood", plan) as config, pj.connect(config) as s:  # its default timeout, 30 s
        result = s.call("speak", {"count": 20_000}, raw=True, approve=True)
        assert result.ok, result
        assert result.content[0]["text"] == "flooded 20000"
        assert s.state == "ready" and s.ping() >= 0
        assert len(s.log) <= 10_000
        dropped = sum(int(count) for row in s.log.events("dropped") for count in re.findall(r"(\d+) [a-z]", row.detail
                      .split(" (past")[0]))  # fmt: skip
        assert 20_000 // 3 <= dropped <= 20_000, [row.detail for row in s.log.events("dropped")]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_requests_of_the_server_are_each_answered_at_once(transport: str) -> None:
    """Sampling, elicitation, roots, ping, an unknown method and bad params, asked by the server during a call: each
    gets its answer (an error, or ``{}`` for ping) within 1 s, whatever the kit supports."""
    plan = {**QUIET, "calls": {"speak": "ask"}}
    with hostile_config(transport, "asking", plan) as config, pj.connect(config) as s:
        result = s.call("speak", {"x": "a"}, raw=True, approve=True)
        said = json.loads(result.content[0]["text"])
        answers = said["answers"]
        assert set(answers) == {"s-sampling", "s-elicit", "s-roots", "s-ping", "s-unknown", "s-bad-params"}, said
        assert answers.pop("s-ping") == {"result": {}}
        assert all("error" in answer for answer in answers.values()), answers
        assert said["seconds"] < 1, said  # the bound, as a guard: unanswered, each waits out its 5 s
        assert s.state == "ready" and s.ping() >= 0


def test_late_and_unknown_messages_never_fail_the_session() -> None:
    """A task's ``tasks/cancel`` answered 6.5 s late (after the kit gave up on it), an answer with no id and one to an
    id never sent (before the listing's answer): each is discarded and logged, the session stays ready."""
    strays = [{"jsonrpc": "2.0", "result": None}, {"jsonrpc": "2.0", "id": 987654, "result": {}}]
    plan = {**QUIET, "tools": [{**PLAN["tools"][0], "execution": {"taskSupport": "optional"}}], "cancel_delay": 6.5,
            "before_list": strays}  # fmt: skip
    with hostile_config("stdio", "late", plan) as config, pj.connect(config) as s:
        dropped = [row.detail for row in s.log.events("dropped")]
        assert [row.split(",")[0] for row in dropped] == ["a response with no id", "an answer to request 987654"]
        result = s.call("speak", {"x": "a"}, raw=True, task=True, approve=True, timeout=1)
        assert result.error_code == "mcp_timeout", result
        wait_until(lambda: any("late answer" in row.detail for row in s.log.events("cancel")), timeout=20,
                   what="the late answer to tasks/cancel, discarded")  # fmt: skip
        assert s.state == "ready" and s.ping() >= 0
        tasks = [row.detail for row in s.log.events("task")]
        assert any("tasks/cancel not answered within 5 s" in detail for detail in tasks), tasks


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_approval_shows_the_bytes_that_are_sent(transport: str) -> None:
    """On the PurrA path, PurrA's contract sends ``{"n": 0, "k": 5}`` for ``{"n": -0.0, "k": 5.0}``: the approval shows
    what goes out, says so, and the server receives exactly that; the raw path sends what is shown as given."""
    with hostile_config(transport, "fidelity", QUIET) as config, pj.connect(config) as s:
        s.bind("numbers")
        pending = s.call("numbers", {"n": -0.0, "k": 5.0})
        label, shown = pending.job.shown_arguments
        assert shown == {"n": 0, "k": 5} and json.dumps(shown) == '{"n": 0, "k": 5}', shown
        assert label.startswith("arguments (sent exactly as shown: PurrA's form"), label
        html = pending._repr_mimebundle_()["text/html"]
        assert "&quot;n&quot;: 0" in html and "-0.0" not in html and "5.0" not in html
        pending.approve()
        wait_until(lambda: pending.state == "done", what="the approved call")
        assert json.loads(pending.result.text[0]) == {"n": 0, "k": 5}
        assert "-0.0" not in pending.result.text[0] and "5.0" not in pending.result.text[0]
        raw = s.call("numbers", {"n": -0.0, "k": 5.0}, raw=True)
        label, shown = raw.job.shown_arguments
        assert label == "arguments (sent exactly as shown):" and json.dumps(shown) == '{"n": -0.0, "k": 5.0}'
        raw.approve()
        wait_until(lambda: raw.state == "done", what="the approved raw call")
        assert json.loads(raw.result.content[0]["text"]) == {"n": -0.0, "k": 5.0}
        assert "-0.0" in raw.result.content[0]["text"] and "5.0" in raw.result.content[0]["text"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_bidi_and_zero_width_in_arguments_are_shown_escaped_in_the_approval(transport: str) -> None:
    with hostile_config(transport, "bidi", QUIET) as config, pj.connect(config) as s:
        pending = s.call("speak", {"x": "abc\u202edef\u200bghi"}, raw=True)
        html = pending._repr_mimebundle_()["text/html"]
        assert "\u202e" not in html and "\u200b" not in html
        assert "abc\\u202edef\\u200bghi" in html
        pending.deny()


def test_a_secret_the_server_transforms_is_out_of_reach() -> None:
    """The limit the security model names, held as a limit: the secret base64-encoded by the server is not recognised
    (while the same line's forms in reach are scrubbed). If this starts to fail, the kit learned more: say so there."""
    plan = {**QUIET, "say": [{"jsonrpc": "2.0", "method": "notifications/message",
                              "params": {"level": "info", "data": "b64 {secret_b64} raw {secret}"}}]}  # fmt: skip
    with hostile_config("stdio", "transformed", plan) as config, pj.connect(config) as s:
        s.call("speak", {"x": "a"}, raw=True, approve=True)
        said = "\n".join(row.detail for row in s.log.events("server_log"))
        assert f"b64 {base64.b64encode(SECRET.encode()).decode()} raw ***" in said, said


@SHARED
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_each_check_format_parses_whatever_the_server_said(exercised: Callable[[str], Shown], transport: str) -> None:
    """``purra-jupyter check`` against the hostile server: JSON that ``json.loads`` reads, JUnit XML that
    ``xml.etree`` reads, GitHub lines that are each one workflow command of the kit's, text lines; each names the tool
    whose name held the secret, as ``***`` (the secrets and lines starting with ``::`` are the matrix's rows)."""
    notes = exercised(transport).notes
    report = json.loads(notes["check json"].stdout)
    assert report["exitCode"] == 1 and "leak ***" in [tool["name"] for tool in report["tools"]], report["tools"]
    suite = ElementTree.fromstring(notes["check junit"].stdout)
    assert "leak ***" in [case.get("name") for case in suite.iter("testcase")]
    github = notes["check github"].stdout.splitlines()
    assert github and all(line.startswith(KIT_COMMANDS) for line in github), github
    assert any("leak ***" in line for line in github)
    assert any(line.startswith("FAIL leak ***") for line in notes["check text"].stdout.splitlines())
    assert all(notes[f"check {form}"].returncode == 1 for form in ("text", "json", "junit", "github"))


# --- a session beside the contract: the protocol refusal on every surface that names it --------------------------

OLDER = "2025-03-26"  # what the MCP SDK speaks and a PurrA host refuses: the session opens, its tools raw only


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_session_beside_the_contract_shows_server_data_as_text(transport: str) -> None:
    """A hostile server of protocol 2025-03-26: the catalog, the session, its status line and the refusal of a
    binding say that PurrA refuses the protocol, and hold against every attack class as the shared session's do."""
    plan = {**QUIET, "initialize": {**PLAN["initialize"], "protocolVersion": OLDER}}
    shown = Shown(transport)
    with hostile_config(transport, "older", plan) as config, pj.connect(config) as s:
        shown.secrets = config.secrets
        show_the_session(shown, s)
        with pytest.raises(pj.McpSessionError) as caught:
            s.bind("speak")
        shown.add("errors", CELL_TEXT, caught.value._render_traceback_()[0], "the refused binding")
        assert s.call("speak", {"x": "raw"}, raw=True, approve=True).ok
    refused = f"a PurrA host refuses protocol {OLDER}"
    assert caught.value.code == "mcp_protocol_unsupported" and refused in caught.value.message
    for surface in ("catalog", "session", "status line", "errors"):
        assert all(refused in output.text for output in shown.outputs[surface] if output.medium != FRAME), surface
        for check in ROWS[surface].values():
            if callable(check):
                check(shown, surface)


HOSTILE_VERSIONS = ["<b>2025-03-26</b>", "2025-03-26\u202e", "https://evil.example/x", SECRET, "2025\x1b[31m", ""]


@pytest.mark.parametrize("offered", HOSTILE_VERSIONS)
def test_a_refused_version_is_named_only_as_a_versions_name(offered: str) -> None:
    """The refusal's one line names the version only when it is a version's name holding no secret (the MCP SDK
    negotiates only the versions it knows, so a server cannot reach this with another; the words do not count on it)."""
    from purra_jupyter._base.config import Scrubber
    from purra_jupyter._connection.seam import purra_refusal

    said = purra_refusal(offered, Scrubber([SECRET]))
    assert said == "a PurrA host refuses this server's protocol version (not a version's name)"
    assert purra_refusal(OLDER, Scrubber([SECRET])) == f"a PurrA host refuses protocol {OLDER}"
    assert purra_refusal(OLDER, Scrubber([OLDER])) == said  # a secret that looks like a version stays unsaid

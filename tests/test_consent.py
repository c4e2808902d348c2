"""Consent is exact: a server asks only inside a call of its own session, and only the person (or function) answering
for that call sees it; what the person sees is what is sent, and where it goes; a question the server withdraws ends
alone, and nothing typed afterwards is sent; a method the session's protocol lacks is refused as unknown.

Each test attacks with tests/servers/untrusted_server.py (a server that does what a hostile one would), over stdio and
Streamable HTTP, answered by a function, in the waiting cell of a real kernel, or in a call's widget.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import KernelCell, descendants, plan_argument, untrusted_server, wait_until

import purra_jupyter as pj
from purra_jupyter._base.consent import MAX_FIELDS, destination
from purra_jupyter._base.wire import EVENT_ASKED, QUESTION_REFUSED, QUESTION_WITHDRAWN, READY
from purra_jupyter._connection.questions import Asking
from purra_jupyter._connection.tracking import CancelToken
from purra_jupyter._ui.questions import QuestionWidget, question_bundle, question_rows

TRANSPORTS = ["stdio", "http"]
ANY = {"type": "object"}
FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def elicit(message: str, schema: Any = FORM) -> list[Any]:
    return ["elicitation/create", {"message": message, "requestedSchema": schema}]


def plan(asks: dict[str, list[Any]], **more: Any) -> dict[str, Any]:
    """A server whose ``ask`` tool asks ``asks`` during its call, ``arm`` asks them later on its own (outside any call),
    ``answers`` says what the client answered, and ``slow`` takes ``seconds``."""
    tools = [{"name": name, "inputSchema": ANY} for name in ("ask", "arm", "answers", "slow")]
    calls = {"ask": "ask", "arm": "ask-later", "answers": "answers", "slow": "slow"}
    return {"tools": tools, "calls": calls, "asks": asks, "get_stream": True, **more}


@contextmanager
def untrusted(transport: str, name: str, server_plan: dict[str, Any], **options: Any) -> Iterator[pj.ServerConfig]:
    """The untrusted server with ``server_plan``, over ``transport``: its config (stdio), or its config once it listens
    on 127.0.0.1 (HTTP)."""
    with plan_argument(server_plan) as argument, untrusted_server(transport, name, argument, **options) as config:
        yield config


def config_code(config: pj.ServerConfig) -> str:
    """``config`` as the code a kernel cell makes it with."""
    if config.url is not None:
        return f"pj.ServerConfig({config.name!r}, url={config.url!r}, timeout=30)"
    return f"pj.ServerConfig({config.name!r}, command={config.command!r}, args={list(config.args)!r}, timeout=30)"


def answers(session: pj.McpSession) -> dict[str, Any]:
    """What the server says the client answered to its questions."""
    result = session.call("answers", {}, raw=True, approve=True)
    assert result.ok, result
    return dict(json.loads(result.content[0]["text"])["answers"])


def asked(session: pj.McpSession) -> list[str]:
    return [row.detail for row in session.log.events(EVENT_ASKED)]


def while_calling(asker: pj.McpSession, caller: pj.McpSession, tool: str) -> None:
    """The question ``asker``'s log answered came while ``caller``'s call of ``tool`` ran (between its approval and its
    end, as their log rows say): so the test made the case it names, whatever the machine's load."""
    [answered] = [row.time for row in asker.log.events(EVENT_ASKED) if " asked " not in f" {row.detail}"]
    approved = [row.time for row in caller.log.events("approval") if f": {tool}" in row.detail][-1]
    ended = [row.time for row in caller.log.events("call") if row.detail.startswith(tool)][-1]
    assert approved <= answered <= ended, (approved, answered, ended)


class Recorder:
    """A function that answers questions, recording each it was asked."""

    def __init__(self, answer: dict[str, Any] | None = None) -> None:
        self.asked: list[dict[str, Any]] = []
        self._answer = answer or {"action": "accept", "content": {"name": "from a function"}}

    def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(params)
        return self._answer


# --- a question belongs to a call of its own session ------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_question_outside_any_call_of_its_session_is_refused_at_once(transport: str) -> None:
    """Server A, idle, asks on its own while the main thread waits for a call of server B: A gets an error at once,
    its function is never called, B's call is untouched, and A's log says why with a code."""
    fn = Recorder()
    with (
        untrusted(transport, "a", plan({"idle-1": elicit("your password?")})) as a_config,
        untrusted(transport, "b", plan({})) as b_config,
        pj.connect(a_config, elicitation=fn) as a,
        pj.connect(b_config, elicitation=fn) as b,
    ):
        assert a.call("arm", {"seconds": 1}, raw=True, approve=True).ok
        assert b.call("slow", {"seconds": 4}, raw=True, approve=True).ok  # A asks meanwhile
        wait_until(lambda: answers(a).get("idle-1"), what="A's question answered")
        while_calling(a, b, "slow")
        error = answers(a)["idle-1"]["error"]
        assert error["code"] == -32600 and "no call of this session is running" in error["message"]
        assert fn.asked == []
        assert any(row.startswith(f"elicitation/create: {QUESTION_REFUSED} no call") for row in asked(a)), asked(a)
        assert a.state == READY and b.state == READY


def test_over_http_a_question_on_the_servers_own_stream_belongs_to_no_call() -> None:
    """Over HTTP the stream a question comes on says which request it belongs to: one on the server's own stream
    (GET) belongs to none, even while a call of its session runs. Over stdio nothing ties a question to a request: one
    that comes while a call of its session runs is that call's (the limit of the transport, documented)."""
    for transport, refused in (("http", True), ("stdio", False)):
        fn = Recorder()
        with (
            untrusted(transport, "a", plan({"idle-1": elicit("your password?")})) as config,
            pj.connect(config, elicitation=fn) as a,
        ):
            assert a.call("arm", {"seconds": 1}, raw=True, approve=True).ok
            assert a.call("slow", {"seconds": 4}, raw=True, approve=True).ok  # the question comes meanwhile
            said = wait_until(lambda: answers(a).get("idle-1"), what="the question answered")
            while_calling(a, a, "slow")
            assert ("error" in said) == refused, (transport, said)
            assert len(fn.asked) == (0 if refused else 1), transport


def test_a_question_reaches_only_the_cell_that_waits_for_its_own_call(kernel: Any) -> None:
    """The bug: server A's question took over the input box of a cell that waited for server B's call, and what the
    person typed went to A. Now a cell that waits for B serves only B's calls: A idle is refused at once; A with a call
    running (approved by a click) asks under that call's widget, never in B's cell."""
    _, client = kernel
    with (
        untrusted("stdio", "a", plan({"q-1": elicit("your password?")})) as a_config,
        untrusted("http", "b", plan({})) as b_config,
    ):
        opened = KernelCell(client, f"import purra_jupyter as pj\na = pj.connect({config_code(a_config)})\n"
                                    f"b = pj.connect({config_code(b_config)})").finish()  # fmt: skip
        assert not opened.errors(), opened.errors()
        armed = KernelCell(client, "a.call('arm', {'seconds': 1}, raw=True, approve=True).ok").finish()
        assert armed.result() == "True"
        waiting = KernelCell(client, "b.call('slow', {'seconds': 4}, raw=True, approve=True).ok").finish()
        assert waiting.result() == "True" and waiting.prompts == [], waiting.prompts  # no input box in B's cell
        refused = KernelCell(client, "[r.detail for r in a.log.events('asked')]").finish()
        assert QUESTION_REFUSED in refused.result() and "no call of this session" in refused.result()

        clicked = KernelCell(client, "p = a.call('ask', {}, raw=True)\np.approve('approved by a click')").finish()
        assert not clicked.errors(), clicked.errors()
        waiting = KernelCell(client, "b.call('slow', {'seconds': 2}, raw=True, approve=True).ok").finish()
        assert waiting.result() == "True" and waiting.prompts == [], waiting.prompts
        shown = KernelCell(client, "[type(w).__name__ for w in p.widget.questions.children]").finish()
        assert shown.result() == "['QuestionWidget']", shown.result()
        KernelCell(client, "p.cancel(); a.close(); b.close()").finish()


def test_the_heading_names_the_server_and_the_call() -> None:
    asking = Asking("docs", (CancelToken(call="search_documents"),))
    text = question_bundle("elicitation", asking, {"message": "m", "requestedSchema": FORM})["text/plain"]
    assert text.startswith("'docs', during its call of 'search_documents', asks for your input")
    two = Asking("docs", (CancelToken(call="a"), CancelToken(call="b")))
    assert "during one of its running calls: 'a', 'b'," in question_bundle("sampling", two, {})["text/plain"]


# --- a method the session's protocol does not have --------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_on_a_2025_03_26_session_an_elicitation_is_an_unknown_method(transport: str) -> None:
    """Elicitation came in 2025-06-18: a session of 2025-03-26 (beside the contract) refuses it as a client of that
    protocol would, ``-32601``; sampling, which that protocol has, is answered."""
    fn = Recorder()
    sampling = Recorder({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"})
    asks = {"e-1": elicit("name?"), "s-1": ["sampling/createMessage", {"messages": [], "maxTokens": 5}]}
    older = plan(asks, initialize={"protocolVersion": "2025-03-26"})
    with untrusted(transport, "older", older) as config, pj.connect(config, elicitation=fn, sampling=sampling) as s:
        assert s.protocol_version == "2025-03-26"
        said = json.loads(s.call("ask", {}, raw=True, approve=True).content[0]["text"])["answers"]
        assert said["e-1"] == {"error": {"code": -32601, "message": "Method not found"}}
        assert said["s-1"]["result"]["content"]["text"] == "hi"
        assert fn.asked == [] and len(sampling.asked) == 1
        assert any(f"{QUESTION_REFUSED} unknown method: elicitation/create" in row for row in asked(s)), asked(s)


# --- what the person sees is what is sent, and where ------------------------------------------------------------

HIDDEN_HOST = "https://accounts.google.com%2Fsignin" + "%2F" * 1_000 + "@evil.example/collect"
ADDRESSES = {
    "userinfo": HIDDEN_HOST,
    "http": "http://evil.example/login",
    "long": "https://evil.example/" + "a" * 5_000,
    "backslash": "https://good.example\\.evil.example/",
    "bidi": "https://evil.example/\u202egnp.exe",
    "no host": "javascript:alert(1)",
}


def url_question(url: str) -> list[Any]:
    return ["elicitation/create", {"mode": "url", "message": "sign in", "url": url, "elicitationId": "e-1"}]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_address_that_hides_where_it_goes_is_declined_before_anyone_sees_it(transport: str) -> None:
    fn = Recorder({"action": "accept"})
    asks = {key: url_question(url) for key, url in ADDRESSES.items()}
    with untrusted(transport, "urls", plan(asks)) as config, pj.connect(config, elicitation=fn) as s:
        said = json.loads(s.call("ask", {}, raw=True, approve=True).content[0]["text"])["answers"]
        assert said == {key: {"result": {"action": "decline"}} for key in ADDRESSES}, said
        assert fn.asked == []
        refusals = [row for row in asked(s) if QUESTION_REFUSED in row]
        assert len(refusals) == len(ADDRESSES) and all(row.endswith("; declined") for row in refusals), refusals
        assert any("credentials (userinfo)" in row for row in refusals)
        assert all("evil.example" not in row and "google" not in row for row in refusals)  # (the log never links it)


def test_an_addresss_destination_is_shown_first_and_uncut_an_idn_host_also_in_punycode() -> None:
    url = "https://bücher.example:8443/" + "p" * 400 + "?next=/"
    asking = Asking("s", (CancelToken(call="t"),), destination=destination(url))
    rows = question_rows("elicitation", {"message": "sign in", "url": url, "mode": "url"}, asking)
    assert rows[0] == ("goes to", "https://bücher.example:8443 (punycode: xn--bcher-kva.example)")
    assert rows[1][0] == "rest of the address" and rows[1][1].startswith("/ppp") and "(cut at 200 of 408" in rows[1][1]
    text = question_bundle("elicitation", asking, {"message": "x", "url": url, "mode": "url"})["text/plain"]
    assert "goes to: https[:]//bücher.example:8443 (punycode: xn--bcher-kva.example)" in text  # (text, never a link)


LONG = "Read this first. " * 400
HIDDEN_DEFAULTS = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": LONG},
        "share_contacts": {"type": "boolean", "default": True},
        "subscribe": {"type": "boolean", "default": True},
    },
    "required": ["name"],
}


def test_the_input_box_sends_only_what_the_person_saw_and_says_it_before_it_goes(kernel: Any) -> None:
    """The bug: a form whose first field's description was long hid two fields with ``default: true`` (the schema was
    shown as JSON cut at 4,000 characters), and ``{"name": "Ann"}`` sent both ``true``s. Now every field has a line of
    its own with its default, and the box says exactly what will go and asks before it goes."""
    _, client = kernel
    with untrusted("http", "forms", plan({"f-1": elicit("who?", HIDDEN_DEFAULTS)})) as config:
        opened = KernelCell(client, f"import purra_jupyter as pj\ns = pj.connect({config_code(config)})").finish()
        assert not opened.errors(), opened.errors()
        cell = KernelCell(client, "s.call('ask', {}, raw=True, approve=True).content[0]['text']")
        cell.prompted()
        shown = "\n".join(cell.texts())
        assert "'share_contacts': boolean, default true, optional" in shown, shown[-3000:]
        assert "'subscribe': boolean, default true, optional" in shown
        assert "during its call of 'ask'" in shown
        client.input('{"name": "Ann"}')
        wait_until(lambda: cell.pump() or len(cell.prompts) == 2, what="the box asking before it sends")
        printed = "".join(str(m["content"].get("text", "")) for m in cell.messages if m["msg_type"] == "stream")
        assert 'Will send: {"share_contacts": true, "subscribe": true, "name": "Ann"}' in printed, printed
        client.input("no")  # not this: answer again
        wait_until(lambda: cell.pump() or len(cell.prompts) == 3, what="the box asking again")
        client.input('{"name": "Ann", "share_contacts": false, "subscribe": false}')
        wait_until(lambda: cell.pump() or len(cell.prompts) == 4, what="the box asking before it sends")
        client.input("yes")
        cell.finish()
        assert not cell.errors(), cell.errors()
        said = json.loads(eval(cell.result()))  # (the cell's value is the tool's text, repr'd by the kernel)
        assert said["answers"]["f-1"]["result"] == {
            "action": "accept",
            "content": {"share_contacts": False, "subscribe": False, "name": "Ann"},
        }
        KernelCell(client, "s.close()").finish()


NOT_RESTRICTED = {
    "nested": {"type": "object", "properties": {"a": {"type": "object", "properties": {}}}},
    "ref": {"type": "object", "properties": {"a": {"$ref": "#/x"}}},
    "objects": {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"}}}},
    "unknown key": {"type": "object", "properties": {"a": {"type": "string", "pattern": ".*"}}},
    "bad default": {"type": "object", "properties": {"a": {"type": "string", "enum": ["x"], "default": "y"}}},
    "too many": {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(MAX_FIELDS + 1)}},
    "too big": {"type": "object", "properties": {"a": {"type": "string", "description": "d" * 40_000}}},
    "not an object": {"type": "array"},
}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_form_outside_mcps_restricted_form_is_refused_before_anything_is_built(transport: str) -> None:
    fn = Recorder()
    asks = {key: elicit("fill", schema) for key, schema in NOT_RESTRICTED.items()}
    with untrusted(transport, "forms", plan(asks)) as config, pj.connect(config, elicitation=fn) as s:
        said = json.loads(s.call("ask", {}, raw=True, approve=True).content[0]["text"])["answers"]
        assert set(said) == set(NOT_RESTRICTED)
        for key, answer in said.items():
            error = answer["error"]
            assert error["code"] == -32600 and error["message"].startswith("Refused by the client"), (key, answer)
        assert fn.asked == []
        assert sum(QUESTION_REFUSED in row for row in asked(s)) == len(NOT_RESTRICTED)
        assert s.state == READY


# --- a question can be withdrawn ---------------------------------------------------------------------------------

PASSWORD = "hunter2-typed-after"


def withdrawing(transport: str, mark: Path, **more: Any) -> Any:
    """A server that asks for a password, withdraws the question half a second later, writes ``mark`` once the client
    heard (its answer to the withdrawn question came), and gives the client two more seconds to answer anyway."""
    asks = {"w-1": elicit("your password?", {"type": "object", "properties": {"p": {"type": "string"}}})}
    return untrusted(transport, "w", plan(asks, withdraw_after=0.5, answer_wait=2.0, answered_file=str(mark), **more))


def server_answers(result: Any) -> dict[str, Any]:
    return dict(json.loads(result.content[0]["text"])["answers"])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_withdrawn_question_ends_alone_and_a_functions_late_answer_is_not_sent(
    transport: str, tmp_path: Path
) -> None:
    """The bug: ``notifications/cancelled`` for an open question failed the whole session ("connection lost")."""
    from threading import Event

    heard = Event()

    def late(params: dict[str, Any]) -> dict[str, Any]:
        heard.wait(30)  # (answers only once the withdrawal was heard)
        return {"action": "accept", "content": {"p": PASSWORD}}

    mark = tmp_path / "heard"
    with withdrawing(transport, mark) as config, pj.connect(config, elicitation=late) as s:
        pending = s.call("ask", {}, raw=True)
        pending.approve("approved by a click")
        wait_until(mark.exists, what="the client's answer to the withdrawn question")
        heard.set()
        wait_until(lambda: pending.state == "done", what="the call's end")
        said = server_answers(pending.result)
        assert said == {"w-1": {"error": {"code": 0, "message": "Request cancelled"}}}, said  # the SDK's, and no more
        assert any(row.startswith(f"elicitation/create: {QUESTION_WITHDRAWN}") for row in asked(s)), asked(s)
        assert s.state == READY and s.call("slow", {"seconds": 0}, raw=True, approve=True).ok


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_withdrawn_question_in_a_widget_says_so_and_its_buttons_send_nothing(transport: str, tmp_path: Path) -> None:
    mark = tmp_path / "heard"
    with withdrawing(transport, mark) as config, pj.connect(config, elicitation="prompt") as s:
        pending = s.call("ask", {}, raw=True)
        pending.approve("approved by a click")
        question = wait_until(lambda: next(iter(pending.widget.questions.children), None), what="the question")
        assert isinstance(question, QuestionWidget) and question.form is not None
        wait_until(mark.exists, what="the client's answer to the withdrawn question")
        wait_until(lambda: "withdrawn by the server" in question.children[-1].value, what="the widget saying so")
        assert not [w for w in descendants(question) if getattr(w, "description", None) == "Accept"]
        wait_until(lambda: pending.state == "done", what="the call's end")
        assert server_answers(pending.result) == {"w-1": {"error": {"code": 0, "message": "Request cancelled"}}}
        assert s.state == READY


def test_a_withdrawn_question_in_the_waiting_cell_says_so_and_sends_nothing_typed_after(
    kernel: Any, tmp_path: Path
) -> None:
    _, client = kernel
    mark = tmp_path / "heard"
    with withdrawing("stdio", mark) as config:
        opened = KernelCell(client, f"import purra_jupyter as pj\ns = pj.connect({config_code(config)})").finish()
        assert not opened.errors(), opened.errors()
        cell = KernelCell(client, "s.call('ask', {}, raw=True, approve=True).content[0]['text']")
        cell.prompted()
        wait_until(mark.exists, what="the client's answer to the withdrawn question")
        client.input(json.dumps({"p": PASSWORD}))  # typed after the server withdrew its question
        cell.finish()
        assert not cell.errors(), cell.errors()
        assert json.loads(eval(cell.result()))["answers"] == {
            "w-1": {"error": {"code": 0, "message": "Request cancelled"}}
        }
        shown = "\n".join(cell.texts())
        assert "withdrawn by the server: nothing you typed was sent" in shown and "answered" not in shown
        after = KernelCell(client, "s.state, [r.detail for r in s.log.events('asked')][-1]").finish()
        assert "'ready'" in after.result() and QUESTION_WITHDRAWN in after.result(), after.result()
        KernelCell(client, "s.close()").finish()


def test_a_question_is_shown_from_its_fields_never_its_schemas_json() -> None:
    from purra_jupyter._base.consent import form_fields

    asking = Asking("s", (CancelToken(call="t"),), fields=form_fields(HIDDEN_DEFAULTS))
    rows = question_rows("elicitation", {"message": "who?", "requestedSchema": HIDDEN_DEFAULTS}, asking)
    assert [label for label, _ in rows] == ["message", "field", "field", "field"]
    assert rows[2][1] == "'share_contacts': boolean, default true, optional"

"""What a server asks its client during a call (sampling, elicitation, roots): answered by the session's functions
exactly, refused at once without one (the session stays ready), every question and answer in the log and the
transcript, the capability declared only for a way given. tests/servers/asking_server.py, in memory and over stdio."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import HANG_GUARD, KernelCell, descendants, wait_until

import purra_jupyter as pj
from purra_jupyter._base import runner
from purra_jupyter._base.wire import ANSWER_FAILED, ANSWER_INVALID, CONFIG_INVALID, EVENT_ASKED, READY
from purra_jupyter._connection.questions import Asking
from purra_jupyter._connection.tracking import CancelToken
from purra_jupyter._ui.questions import QuestionWidget, question_bundle, question_rows, sampling_reply

SERVER = Path(__file__).parent / "servers" / "asking_server.py"


def _asking_module() -> Any:
    spec = importlib.util.spec_from_file_location("asking_server", SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ASKING = _asking_module()


def memory(name: str = "asking", **kwargs: Any) -> pj.ServerConfig:
    return pj.ServerConfig(name, server=ASKING.build(), timeout=30.0, **kwargs)


def stdio(name: str = "asking", **kwargs: Any) -> pj.ServerConfig:
    return pj.ServerConfig(name, command=sys.executable, args=[str(SERVER)], timeout=30.0, **kwargs)


def said(session: pj.McpSession, tool: str, text: str = "") -> dict[str, Any]:
    """What the server says it received, by its tool's answer."""
    arguments = {"text": text} if tool.startswith(("ask_model", "ask_form", "ask_url")) else {}
    result = session.call(tool, arguments, raw=True, approve=True)
    assert result.ok, result
    return dict(json.loads(result.content[0]["text"]))


def asked_rows(session: pj.McpSession) -> list[str]:
    return [row.detail for row in session.log.events(EVENT_ASKED)]


REPLY = {"role": "assistant", "content": {"type": "text", "text": "blue"}, "model": "m-1", "stopReason": "endTurn"}


@pytest.mark.parametrize("config", [memory, stdio], ids=["memory", "stdio"])
def test_the_server_receives_exactly_what_the_functions_answer(config: Any, tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def sampling(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return REPLY

    async def elicitation(params: dict[str, Any]) -> dict[str, Any]:  # a coroutine function runs on the loop
        seen.append(params)
        if params.get("mode") == "url":
            return {"action": "decline"}
        return {"action": "accept", "content": {"name": "Ada", "age": 36, "color": "green"}}

    roots = [tmp_path, "file:///srv/data"]
    with pj.connect(config(roots=roots), sampling=sampling, elicitation=elicitation, record=True) as s:
        assert said(s, "ask_model", "sky?") == {"answered": REPLY}
        assert seen[0]["messages"] == [{"role": "user", "content": {"type": "text", "text": "sky?"}}]
        assert seen[0]["systemPrompt"] == "Answer in one word." and seen[0]["maxTokens"] == 64
        form = said(s, "ask_form", "Who are you?")
        assert form == {"answered": {"action": "accept", "content": {"name": "Ada", "age": 36, "color": "green"}}}
        assert seen[1]["requestedSchema"]["required"] == ["name"]
        assert said(s, "ask_url", "https://example.test/sign-in") == {"answered": {"action": "decline"}}
        assert seen[2]["url"] == "https://example.test/sign-in"
        listed = said(s, "ask_roots")["answered"]["roots"]
        assert listed == [
            {"uri": tmp_path.as_uri(), "name": tmp_path.name},
            {"uri": "file:///srv/data", "name": "data"},
        ]
        # every question and its answer in the log, and the messages in the transcript
        rows = asked_rows(s)
        assert any(row.startswith("sampling/createMessage: answered") and '"m-1"' in row for row in rows)
        assert any(row.startswith("elicitation/create: answered") and '"decline"' in row for row in rows)
        assert any(row.startswith("roots/list: answered 2 root(s)") for row in rows)
        sent = [m for m in s.transcript.messages if m.direction == "sent"]
        initialize = next(m.message for m in sent if m.message.get("method") == "initialize")
        capabilities = initialize["params"]["capabilities"]
        assert {"sampling", "elicitation", "roots"} <= set(capabilities)
        assert any(m.message.get("result") == REPLY for m in sent)
        assert s.state == READY


@pytest.mark.parametrize("config", [memory, stdio], ids=["memory", "stdio"])
def test_without_a_way_to_answer_the_server_gets_an_error_at_once_and_the_session_stays_ready(config: Any) -> None:
    with pj.connect(config(), sampling=None, elicitation=None, record=True) as s:
        # (an unanswered question would hold the call until its 30 s timeout: mcp_timeout, not the server's answer)
        for tool in ("ask_model", "ask_form", "ask_roots"):
            error = said(s, tool, "x")["error"]
            assert error["code"] == -32600 and "not supported" in error["message"]
        assert s.state == READY
        assert said(s, "roots_changes") == {"roots_changes": 0}
        rows = asked_rows(s)
        for method in ("sampling/createMessage", "elicitation/create", "roots/list"):
            assert any(row.startswith(f"{method}: refused, this session answers no") for row in rows), rows
        initialize = next(m.message for m in s.transcript.messages if m.message.get("method") == "initialize")
        assert not {"sampling", "elicitation", "roots"} & set(initialize["params"]["capabilities"])


def test_a_function_that_fails_or_answers_nonsense_is_an_error_to_the_server_and_a_coded_log_row() -> None:
    def broken(params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("model client down")

    def nonsense(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "maybe"}

    with pj.connect(memory(), sampling=broken, elicitation=nonsense) as s:
        assert said(s, "ask_model", "x")["error"] == {
            "code": -32603,
            "message": "The client's sampling handler failed.",
        }
        assert said(s, "ask_form", "x")["error"] == {
            "code": -32603,
            "message": "The client's elicitation answer was not valid.",
        }
        rows = asked_rows(s)
        assert any(f"{ANSWER_FAILED} the sampling handler raised RuntimeError: model client down" in r for r in rows)
        assert any(f"{ANSWER_INVALID} the elicitation handler's answer is not valid at action" in r for r in rows)
        assert s.state == READY


def test_set_roots_tells_the_server_and_answers_the_new_roots(tmp_path: Path) -> None:
    with pj.connect(memory(roots=[tmp_path])) as s:
        assert s.roots == (tmp_path.as_uri(),)
        s.set_roots([tmp_path / "sub", "file:///other"])
        assert s.roots == ((tmp_path / "sub").as_uri(), "file:///other")
        # (the server handles a notification in a task of its own: it may come after the next request)
        deadline = time.monotonic() + 30
        while said(s, "roots_changes") != {"roots_changes": 1}:
            assert time.monotonic() < deadline, "the server never heard roots/list_changed"
        assert said(s, "roots_changes") == {"roots_changes": 1}
        assert [root["uri"] for root in said(s, "ask_roots")["answered"]["roots"]] == list(s.roots)
    with pj.connect(memory()) as s, pytest.raises(pj.McpSessionError) as error:
        s.set_roots([tmp_path])
    assert error.value.code == CONFIG_INVALID and "declared no roots" in error.value.message


@pytest.mark.parametrize("roots", [["https://example.test/x"], ["file://host/share"], "/one/path", [""], [3]], ids=str)
def test_roots_that_are_not_paths_or_file_uris_are_a_config_error(roots: Any) -> None:
    with pytest.raises(pj.McpSessionError) as error:
        memory(roots=roots)
    assert error.value.code == CONFIG_INVALID and "roots" in error.value.message


def test_a_way_that_is_neither_prompt_a_function_nor_none_is_a_config_error() -> None:
    with pytest.raises(pj.McpSessionError) as error:
        pj.connect(memory(), sampling="yes")
    assert error.value.code == CONFIG_INVALID and "sampling must be 'prompt'" in error.value.message


def test_a_question_waiting_for_its_answer_holds_no_other_message_of_the_session() -> None:
    """The SDK awaits a question's callback in its one receive loop: answered there, a call made meanwhile would
    never hear its answer (the call below would time out, and this one with it)."""
    inner: list[dict[str, Any]] = []

    def sampling(params: dict[str, Any]) -> dict[str, Any]:
        inner.append(said(session, "roots_changes"))  # another call of the session, answered while this one waits
        return REPLY

    with pj.connect(memory(), sampling=sampling) as session:
        session.set_timeout(10)
        assert said(session, "ask_model", "x") == {"answered": REPLY}
        assert inner == [{"roots_changes": 0}]


# --- a person answers, in a real kernel: the cell that waits for the call asks with the kernel's input box ----------

EVERYTHING = Path(__file__).parent / "servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def answered_in_cell(client: Any, call: str, *typed: str) -> tuple[dict[str, Any], KernelCell]:
    """Run ``call`` (a cell whose value is what the server received), type each of ``typed`` into the input box it
    opens, one box after the other."""
    cell = KernelCell(client, call)
    for count, text in enumerate(typed, 1):
        wait_until(lambda: cell.pump() or len(cell.prompts) >= count, what="the kernel's input box")  # noqa: B023
        client.input(text)
    cell.finish()
    assert not cell.errors(), cell.errors()
    return json.loads(eval(cell.result())), cell  # (the cell's value is the tool's text, repr'd by the kernel)


def ask(tool: str, text: str = "") -> str:
    return f"s.call({tool!r}, {{'text': {text!r}}}, raw=True, approve=True).content[0]['text']"


def test_a_person_answers_in_the_waiting_cells_input_box_and_the_server_receives_it(kernel: Any) -> None:
    _, client = kernel
    hostile = "<b>bold</b> see https://evil.example/x \u202egnp.exe"
    opened = KernelCell(
        client,
        "import sys, purra_jupyter as pj\n"
        f"s = pj.connect(pj.ServerConfig('asking', command=sys.executable, args=[{str(SERVER)!r}]))\n",
    ).finish()
    assert not opened.errors(), opened.errors()

    got, cell = answered_in_cell(client, ask("ask_model", hostile), "blue")
    assert got == {"answered": {"role": "assistant", "content": {"type": "text", "text": "blue"},
                                "model": "a person in the notebook", "stopReason": "endTurn"}}  # fmt: skip
    # the question was shown as text: the server's words escaped in HTML, no link nor bidi in the plain text
    shown = [m["content"]["data"] for m in cell.messages if m["msg_type"] in ("display_data", "update_display_data")]
    assert shown and all("<b>bold" not in data["text/html"] and "&lt;b&gt;bold" in data["text/html"] for data in shown)
    assert all("https://evil" not in data["text/plain"] and "\u202e" not in data["text/plain"] for data in shown)
    assert "answered" in shown[-1]["text/plain"]

    got, _ = answered_in_cell(client, ask("ask_model", "sky?"), "")  # sent empty: declined
    assert got == {"error": {"code": -1, "message": "The client declined: the person declined"}}

    got, _ = answered_in_cell(client, ask("ask_form", "Who are you?"), '{"name": "Ada", "color": "red"}', "yes")
    assert got == {"answered": {"action": "accept", "content": {"age": 30, "name": "Ada", "color": "red"}}}
    got, _ = answered_in_cell(client, ask("ask_form", "Who are you?"), "cancel")
    assert got == {"answered": {"action": "cancel"}}
    got, cell = answered_in_cell(client, ask("ask_url", "https://example.test/sign-in"), "done")
    assert got == {"answered": {"action": "accept"}}
    shown = "\n".join(cell.texts())  # where it goes first, uncut, as text; then the rest of the address
    assert "goes to: https[:]//example.test:443\nrest of the address: /sign-in" in shown, shown

    # a form answer that does not fit is asked again, and nothing reaches the server until it fits
    cell = KernelCell(client, ask("ask_form", "Who are you?"))
    cell.prompted()
    client.input('{"age": "old"}')
    wait_until(lambda: cell.pump() or len(cell.prompts) == 2, what="the input box asked again")
    assert any(
        "Not sent:" in text for text in cell.texts() + [str(m["content"].get("text", "")) for m in cell.messages]
    )
    client.input('{"name": "Bo"}')
    wait_until(lambda: cell.pump() or len(cell.prompts) == 3, what="the input box asking before it sends")
    client.input("yes")
    cell.finish()
    assert json.loads(eval(cell.result()))["answered"]["content"] == {"name": "Bo", "age": 30}


@pytest.mark.published
def test_the_everything_servers_sampling_and_elicitation_tools_are_answered_in_a_kernel(kernel: Any) -> None:
    _, client = kernel
    opened = KernelCell(
        client,
        "import purra_jupyter as pj\n"
        f"s = pj.connect(pj.ServerConfig('everything', command='node', args=[{str(EVERYTHING)!r}, 'stdio'], "
        f"roots=[{str(SERVER.parent)!r}]))\n"
        "sorted(name for name in s.catalog.to_frame().index if name.startswith('trigger-'))",
    ).finish()
    assert not opened.errors(), opened.errors()
    assert "trigger-sampling-request" in opened.result() and "trigger-elicitation-request" in opened.result()

    run = "[b.get('text', '') for b in s.call({!r}, {!r}, raw=True, approve=True).content]"
    cell = KernelCell(client, run.format("trigger-sampling-request", {"prompt": "Say hi", "maxTokens": 10}))
    cell.prompted()
    client.input("hi from a person")
    cell.finish()
    assert not cell.errors(), cell.errors()
    assert "hi from a person" in cell.result() and "a person in the notebook" in cell.result()

    cell = KernelCell(client, run.format("trigger-elicitation-request", {}))
    cell.prompted()
    client.input('{"name": "Ada"}')
    wait_until(lambda: cell.pump() or len(cell.prompts) == 2, what="the input box asking before it sends")
    client.input("yes")
    cell.finish()
    assert not cell.errors(), cell.errors()
    assert "accept" in cell.result() and "Ada" in cell.result()

    # a task that needs input (input_required): its question comes while tasks/result waits, answered the same way
    task = run.format("simulate-research-query", {"topic": "python", "ambiguous": True})
    cell = KernelCell(client, task.replace("approve=True", "task=True, approve=True"))
    cell.prompted()
    client.input('{"interpretation": "snake"}')
    wait_until(lambda: cell.pump() or len(cell.prompts) == 2, what="the input box asking before it sends")
    client.input("yes")
    cell.finish()
    assert not cell.errors(), cell.errors()
    assert "python (snake)" in cell.result(), cell.result()

    cell = KernelCell(client, run.format("get-roots-list", {})).finish()  # the roots it asked for at connect
    assert not cell.errors(), cell.errors()
    assert SERVER.parent.as_uri() in cell.result(), cell.result()


def test_the_connect_magic_takes_the_ways_of_answering_and_the_roots(ip: Any, tmp_path: Path) -> None:
    line = f"asking --sampling none --elicitation prompt --root {tmp_path} --record -- {sys.executable} {SERVER}"
    session = ip.run_line_magic("mcp_connect", line)
    try:
        assert said(session, "ask_model", "x")["error"]["code"] == -32600  # refused: --sampling none
        assert said(session, "ask_roots")["answered"]["roots"] == [{"uri": tmp_path.as_uri(), "name": tmp_path.name}]
        initialize = next(m.message for m in session.transcript.messages if m.message.get("method") == "initialize")
        # elicitation: a person answers in a kernel; this shell is none (IPython's, no kernel): declared, all the same
        assert {"elicitation", "roots"} <= set(initialize["params"]["capabilities"])
        assert "sampling" not in initialize["params"]["capabilities"]
    finally:
        session.close()


def test_a_flood_of_questions_is_answered_a_few_at_a_time_and_the_rest_refused_at_once() -> None:
    """Ten sampling requests at once: three are answered (the function holds them until the other seven were
    refused), seven get an error at once; no thread or widget per question of a flood."""
    refused = lambda: sum("refused, 3 questions already wait" in row for row in asked_rows(session))  # noqa: E731

    def sampling(params: dict[str, Any]) -> dict[str, Any]:
        wait_until(lambda: refused() == 7, what="the other questions refused")
        return REPLY

    with pj.connect(memory(), sampling=sampling) as session:
        answers = said(session, "ask_model_often", "10")["answers"]
        assert answers.count("answered") == 3, answers
        assert answers.count("Too many questions at once: 3 questions already wait for their answers.") == 7
        assert said(session, "ask_model", "x") == {"answered": REPLY}  # the session answers again once they ended


def test_the_session_says_who_answers_its_servers_questions(tmp_path: Path) -> None:
    with pj.connect(memory(roots=[tmp_path]), sampling=lambda params: REPLY, elicitation=None) as s:
        html = s._repr_mimebundle_()["text/html"]
        assert "sampling: a function; elicitation: refused; roots: 1 folder(s)" in html


def button(widget: Any, label: str) -> Any:
    [found] = [w for w in descendants(widget) if getattr(w, "description", None) == label and hasattr(w, "click")]
    return found


def test_under_a_call_approved_by_a_click_a_question_is_a_widget_whose_buttons_answer_it() -> None:
    """Nothing waits for a call approved by a click: its server's question shows under its approval widget, and its
    buttons answer; a question still open when its call stops running ends unanswered (the server gets an error)."""
    with pj.connect(memory(), sampling="prompt", elicitation="prompt") as s:
        pending = s.call("ask_model", {"text": "tools?"}, raw=True)
        pending.approve("approved by a click")  # (as the Approve button does: the call runs, nothing waits)
        question = wait_until(lambda: next(iter(pending.widget.questions.children), None), what="the question")
        assert isinstance(question, QuestionWidget) and question.reply is not None
        question.reply.value = "blue"
        button(question, "Send reply").click()
        wait_until(lambda: pending.state == "done", what="the call's end")
        assert json.loads(pending.result.content[0]["text"]) == {"answered": sampling_reply("blue")}
        assert question.children[-1].value.endswith("answered: a reply</span>")

        pending = s.call("ask_form", {"text": "Who?"}, raw=True)
        pending.approve("approved by a click")
        question = wait_until(lambda: next(iter(pending.widget.questions.children), None), what="the question")
        button(question, "Accept").click()  # the name is required: nothing is sent yet
        assert not question.answer.done()
        pending.cancel("cancelled by a click")
        wait_until(lambda: pending.state != "running", what="the cancelled call")
        said = "the elicitation handler raised Withdrawn: its call stopped running before anyone answered"
        wait_until(lambda: any(said in row for row in asked_rows(s)), what="the withdrawn question in the log")
        assert "not answered: its call stopped running" in question.children[-1].value
        assert s.state == READY


def test_a_sampling_request_shows_its_messages_preferences_and_tools_as_text() -> None:
    params = {
        "systemPrompt": "Be <b>brief</b>.",
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}},
                     {"role": "assistant", "content": [{"type": "image", "data": "x", "mimeType": "image/png"}]}],
        "modelPreferences": {"hints": [{"name": "small"}]},
        "maxTokens": 5,
        "tools": [{"name": "search", "inputSchema": {"type": "object"}}, {"name": "fetch", "inputSchema": {}}],
    }  # fmt: skip
    asking = Asking("s", (CancelToken(call="t"),))
    assert question_rows("sampling", params, asking) == [
        ("system prompt", "Be <b>brief</b>."),
        ("message (user)", "hi"),
        ("message (assistant)", "[image block]"),
        ("modelPreferences", '{"hints": [{"name": "small"}]}'),
        ("maxTokens", "5"),
        ("tools the model may use", "'search', 'fetch'"),
    ]
    html = question_bundle("sampling", asking, params)["text/html"]
    assert "Be &lt;b&gt;brief&lt;/b&gt;." in html and "<b>brief" not in html


def test_a_job_of_the_waiting_cell_that_the_loop_stopped_waiting_for_never_fails_the_cell() -> None:
    """A person answers in the waiting cell's input box while the server withdraws its question (the loop stops
    waiting): the answer goes nowhere, and the cell's own wait goes on as if nothing happened."""
    started, withdrawn = threading.Event(), threading.Event()

    def job() -> str:  # the person's turn, on the cell's thread: they answer after the question was withdrawn
        started.set()
        assert withdrawn.wait(HANG_GUARD)
        return "an answer nobody waits for"

    async def until(condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + HANG_GUARD
        while not condition():
            assert time.monotonic() < deadline, "a hang"
            await asyncio.sleep(0.01)

    async def scenario() -> str:
        await until(lambda: runner.cell_serves("a call"))  # (this runs on the loop as soon as submitted: maybe first)
        asked = asyncio.ensure_future(runner.in_waiting_cell(job, "a call"))
        await until(started.is_set)  # the cell has the job
        asked.cancel()
        withdrawn.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asked
        return "the call's result"

    assert threading.current_thread() is threading.main_thread()  # (only a cell's thread serves the loop's jobs)
    assert runner.wait(runner.submit(scenario), serving=("a call",)) == "the call's result"


def test_a_cell_that_waits_for_one_call_never_runs_what_is_asked_for_another() -> None:
    """What the loop asks of the waiting cell names what it belongs to: the cell that waits for one call runs only
    that call's jobs; for another, nobody is waiting (``NoWaitingCell`` at once), and the job is never run."""
    ran: list[str] = []

    async def scenario() -> list[str]:
        deadline = time.monotonic() + HANG_GUARD  # (this runs on the loop as soon as submitted: maybe first)
        while not runner.cell_serves("this call"):
            assert time.monotonic() < deadline, "a hang"
            await asyncio.sleep(0.01)
        outcomes = []
        for key in ("another call", "this call"):
            try:
                outcomes.append(await runner.in_waiting_cell(lambda key=key: ran.append(key) or key, key))
            except runner.NoWaitingCell:
                outcomes.append(f"nobody waits for {key}")
        return outcomes

    waited = runner.wait(runner.submit(scenario), serving=("this call",))
    assert waited == ["nobody waits for another call", "this call"] and ran == ["this call"]
    assert not runner.cell_serves("this call")  # the wait is over

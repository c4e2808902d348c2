"""``purra-jupyter check`` against real servers over stdio and HTTP: the demo, mcp-server-time and
server-everything; the exit codes for met, unmet and unreachable; each output format read back by a parser; a
hostile server's words kept inside each format; secrets never printed."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from conftest import SERVERS
from test_published_servers import EVERYTHING
from test_untrusted import untrusted_http

import purra_jupyter as pj
from purra_jupyter._base.errors import SERVER_SAID_LABEL
from purra_jupyter._base.wire import CONFIG_INVALID, CONNECT_FAILED
from purra_jupyter.cli import EXIT_MET, EXIT_UNCHECKED, EXIT_UNMET, main

BIN = Path(sys.executable).parent
SCRIPT = BIN / "purra-jupyter"
DEMO = ["--", sys.executable, "-m", "purra_jupyter.demo"]
TIME = ["--", str(BIN / "mcp-server-time")]
SERVER_EVERYTHING = ["--", "node", str(EVERYTHING), "stdio"]
NOWHERE = ["--", str(SERVERS / "no-such-server")]
DEMO_NOT_CALLABLE = "greet"  # the demo's one tool outside the profile (a default)


def check(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, str]:
    """``purra-jupyter check WORDS`` in this process: its exit code and what it printed."""
    capsys.readouterr()
    code = main(["check", *words])
    return code, capsys.readouterr().out


def report(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, dict[str, object]]:
    code, out = check(capsys, "--format", "json", *words)
    return code, json.loads(out)


def test_the_demo_unmet_by_default_met_for_the_tools_it_requires(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(capsys, *DEMO)
    assert code == EXIT_UNMET, out
    assert f"FAIL {DEMO_NOT_CALLABLE}: not callable" in out and "ok   search_documents: callable (as read)" in out
    assert '"default" is outside the profile — drop it' in out  # the catalog's reason, with its hint
    assert out.rstrip().endswith(f"- {DEMO_NOT_CALLABLE} is not callable")
    code, out = check(capsys, "--require", "search_documents", "--require", "add_note", *DEMO)
    assert code == EXIT_MET, out
    assert f"-- {'  '}{DEMO_NOT_CALLABLE}: not callable (not required)" in out
    assert out.rstrip().endswith("requirement (callable under PurrA: 'search_documents', 'add_note'): met")
    code, out = check(capsys, "--require", "search_documents", "--require", "nope", *DEMO)
    assert code == EXIT_UNMET and "- nope is not listed by the server" in out, out


def test_a_pinned_digest_is_part_of_the_requirement(capsys: pytest.CaptureFixture[str]) -> None:
    code, first = report(capsys, "--require", "echo", *DEMO)
    assert code == EXIT_MET and first["outcome"] == "met" and len(str(first["digest"])) == 64
    code, again = report(capsys, "--require", "echo", "--expect-digest", str(first["digest"]).upper(), *DEMO)
    assert code == EXIT_MET, again
    code, changed = report(capsys, "--require", "echo", "--expect-digest", "0" * 64, *DEMO)
    assert code == EXIT_UNMET and changed["outcome"] == "not met"
    expected = f"The catalog of 'server' changed: expected digest {'0' * 64}, got {first['digest']}."
    assert changed["problems"] == [expected]


def test_the_json_report_holds_each_tools_verdict_as_the_catalog_has_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = report(capsys, "--server", "time", *TIME)
    tools = {tool["name"]: tool for tool in data["tools"]}  # type: ignore[attr-defined]
    assert data["server"] == "time" and data["protocolVersion"] and data["error"] is None
    assert set(tools) == {"get_current_time", "convert_time"}
    assert code == (EXIT_MET if all(tool["callable"] for tool in tools.values()) else EXIT_UNMET)
    for tool in tools.values():
        assert tool["required"] is True and tool["inputVerdict"] in ("compatible", "unsupported")
        assert tool["callable"] == (not tool["reasons"]) == (tool["refusal"] is None)


@pytest.mark.published  # a published MCP server from npm
def test_server_everything_unmet_and_its_junit_report(capsys: pytest.CaptureFixture[str]) -> None:
    """Its draft-07 schemas are outside the profile: unmet; the JUnit XML has a failing case per such tool."""
    code, out = check(capsys, "--format", "junit", "--server", "everything", *SERVER_EVERYTHING)
    assert code == EXIT_UNMET
    suite = ElementTree.fromstring(out.encode())
    cases = suite.findall("testcase")
    failed = [case for case in cases if case.find("failure") is not None]
    assert suite.tag == "testsuite" and int(suite.get("tests", "")) == len(cases) > 5
    assert int(suite.get("failures", "")) == len(failed) > 0 and suite.get("errors") == "0"
    assert {case.get("classname") for case in cases} == {"everything"}
    reasons = [case.findtext("failure") or "" for case in failed]
    assert all("$schema" in reason for reason in reasons), reasons


def test_junit_of_a_met_requirement_and_of_a_missing_tool(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(capsys, "--format", "junit", "--require", "echo", "--require", "nope", *DEMO)
    suite = ElementTree.fromstring(out.encode())
    assert code == EXIT_UNMET and suite.get("failures") == "1"
    [failed] = [case for case in suite.findall("testcase") if case.find("failure") is not None]
    assert failed.get("name") == "nope" and failed.find("failure").get("message") == "nope is not listed by the server"  # type: ignore[union-attr]
    greet = next(case for case in suite.findall("testcase") if case.get("name") == DEMO_NOT_CALLABLE)
    assert greet.find("failure") is None and "not required" in (greet.findtext("system-out") or "")


def test_unreachable_servers_exit_2_in_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(capsys, *NOWHERE)
    assert code == EXIT_UNCHECKED and f"could not check: {CONNECT_FAILED}: " in out, out
    code, data = report(capsys, "--url", "http://127.0.0.1:9/mcp", "--timeout", "5")
    assert code == EXIT_UNCHECKED and data["outcome"] == "not checked" and data["tools"] == []
    assert data["error"]["code"] in (CONNECT_FAILED, "mcp_timeout")  # type: ignore[index]
    code, out = check(capsys, "--format", "junit", *NOWHERE)
    suite = ElementTree.fromstring(out.encode())
    assert code == EXIT_UNCHECKED and suite.get("errors") == "1"
    assert suite.find("testcase/error").get("type") == CONNECT_FAILED  # type: ignore[union-attr]
    code, out = check(capsys, "--format", "github", *NOWHERE)
    assert code == EXIT_UNCHECKED and out.startswith(f"::error title=purra-jupyter check::{CONNECT_FAILED}: ")


@pytest.mark.parametrize(
    ("words", "said"),
    [
        ([], "Give the server"),
        (["--url", "http://127.0.0.1:9/mcp", "--", "python"], "Give either --url or a command"),
        (["--env", "NOVALUE", "--", "python"], "--env takes KEY=VALUE"),
        (["--url", "http://example.org/mcp"], "mcp_config_invalid"),  # http:// to a host that is not loopback
    ],
)
def test_a_server_the_line_does_not_describe_is_not_checked(
    capsys: pytest.CaptureFixture[str], words: list[str], said: str
) -> None:
    code, data = report(capsys, *words)
    assert code == EXIT_UNCHECKED and data["error"]["code"] == CONFIG_INVALID, data  # type: ignore[index]
    assert said in f"{data['error']['code']}: {data['error']['message']}"  # type: ignore[index]


@pytest.mark.parametrize(
    "words", [["--format", "yaml"], ["--config", "mcp.json"], ["--expect-digest", "abc"], ["--bogus"]]
)
def test_usage_mistakes_exit_2_with_argparses_words(capsys: pytest.CaptureFixture[str], words: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["check", *words, *DEMO])
    assert exited.value.code == EXIT_UNCHECKED and "usage: purra-jupyter" in capsys.readouterr().err


def test_the_console_script_exits_with_the_outcome_and_documents_each_code(tmp_path: Path) -> None:
    """The installed ``purra-jupyter`` command: met, unmet and unreachable as their exit codes; --help names each."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"demo": {"command": sys.executable, "args": DEMO[2:]}}}))
    runs = {
        EXIT_MET: ["--config", str(config), "--server", "demo", "--require", "echo"],
        EXIT_UNMET: ["--config", str(config), "--server", "demo"],
        EXIT_UNCHECKED: NOWHERE,
    }
    for expected, words in runs.items():
        run = subprocess.run([str(SCRIPT), "check", *words], capture_output=True, text=True, timeout=120)
        assert run.returncode == expected, (words, run.stdout, run.stderr)
    shown = subprocess.run([str(SCRIPT), "check", "--help"], capture_output=True, text=True, timeout=60).stdout
    for code, words in ((0, "the requirement holds"), (1, "it does not"), (2, "it could not be checked")):
        assert f"  {code}  {words}" in shown, shown


HOSTILE_NAME = "x\n::error title=forged::the check passed"  # a name that tries to forge an annotation
SECRET = "s3cr3t-token-value"


def test_a_hostile_servers_words_stay_inside_each_format_and_secrets_are_never_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A tool whose name carries a newline and a workflow command, a description with markup: one annotation line
    each in the github format, valid XML in junit, data in JSON; the Authorization header's value nowhere."""
    tools = [{"name": HOSTILE_NAME, "description": "<script>x</script>", "inputSchema": {"type": "object"}}]
    with untrusted_http({"tools": tools}) as (config, _):
        words = ["--url", str(config.url), "--header", f"Authorization=Bearer {SECRET}"]
        outputs = {}
        for form in ("text", "json", "junit", "github"):
            code, outputs[form] = check(capsys, "--format", form, *words)
            assert code in (EXIT_MET, EXIT_UNMET), outputs[form]
            assert SECRET not in outputs[form]
    assert [tool["name"] for tool in json.loads(outputs["json"])["tools"]] == [HOSTILE_NAME]
    assert not any(line.startswith("::error title=forged") for line in outputs["github"].splitlines())
    assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in outputs["github"].splitlines())
    ElementTree.fromstring(outputs["junit"].encode())
    assert "\n::error" not in outputs["text"]


def test_the_check_never_calls_a_tool(capsys: pytest.CaptureFixture[str], demo_http_url: str) -> None:
    """Over HTTP, against a demo server that counts what it is asked: the check lists, and calls nothing."""
    code, out = check(capsys, "--url", demo_http_url, "--require", "echo")
    assert code == EXIT_MET, out
    with pj.connect(pj.ServerConfig("counter", url=demo_http_url)) as counter:
        counts = counter.call("call_counts", {}, raw=True, approve=True).structured_content["counts"]
    assert counts == {}, counts


STDERR_SECRET = "sk-stderr-secret-4242"
DYING = (
    "import os, sys; "
    "sys.stderr.write('starting\\n::error title=forged::x\\n<b>bold</b>\\n'); "
    "sys.stderr.write(os.environ['API_TOKEN'] + ' refused\\n'); "
    "sys.exit(3)"
)


def test_a_server_that_cannot_be_checked_is_shown_with_its_last_stderr_lines_in_every_format(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The newcomer's typo (``python -m purra_jupyter.demoo``) shows Python's own words; a server that dies saying a
    secret and a forged workflow command: its lines under the label in text, in JSON and in the junit error case,
    folded into the github annotation; the secret nowhere, no forged command."""
    code, out = check(capsys, "--", sys.executable, "-m", "purra_jupyter.demoo")
    assert code == EXIT_UNCHECKED and "No module named purra_jupyter.demoo" in out, out
    lines = out.splitlines()
    assert lines[2] == f"{SERVER_SAID_LABEL}:" and lines[3].startswith("  | ") and "demoo" in lines[3], lines
    words = ["--env", f"API_TOKEN={STDERR_SECRET}", "--", sys.executable, "-c", DYING]
    outputs = {form: check(capsys, "--format", form, *words) for form in ("text", "json", "junit", "github")}
    for form, (code, out) in outputs.items():
        assert code == EXIT_UNCHECKED and "refused" in out and STDERR_SECRET not in out, (form, out)
    text = outputs["text"][1].splitlines()
    assert text[text.index(SERVER_SAID_LABEL + ":") + 1 :][:4] == [
        "  | starting", "  | ::error title=forged::x", "  | <b>bold</b>", "  | *** refused"
    ], text  # fmt: skip
    said = json.loads(outputs["json"][1])["error"]["serverSaid"]
    assert said == ["starting", "::error title=forged::x", "<b>bold</b>", "*** refused"], said
    case = ElementTree.fromstring(outputs["junit"][1].encode()).find("testcase/error")
    assert case is not None and "*** refused" in (case.text or ""), outputs["junit"][1]
    github = outputs["github"][1].splitlines()
    assert len(github) == 2 and not any(line.startswith("::error title=forged") for line in github), github

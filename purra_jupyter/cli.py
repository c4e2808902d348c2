"""``purra-jupyter check``: PurrA's verdict on every tool of one server, as a command a CI job runs.

It connects (the same options, rules and redaction as ``%mcp_connect``), lists the tools, prints the verdict of each
in the catalog's words (its reasons, each with a hint for the server's author) and exits with what a CI needs to
know. It never calls a tool: the session's approval policy is ``deny`` and views are off.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ._base.config import ServerOptions
from ._base.egress import CliText, cli_text
from ._base.errors import SERVER_SAID_LABEL, McpSessionError
from ._base.junit import Case, suite
from ._base.visible import quoted_list, visible
from ._purra.catalog import CALLABLE, NOT_CALLABLE, Catalog, ToolVerdict
from ._purra.listing import check_digest
from ._session.opening import connect

EXIT_MET = 0  # the requirement holds
EXIT_UNMET = 1  # it does not: a required tool is missing or not callable, or the catalog's digest differs
EXIT_UNCHECKED = 2  # it could not be checked: the command line is wrong, or the server was not reached or listed
SERVER_LINES = 20  # of the server's last stderr lines, shown when the check could not run
FORMATS = ("text", "json", "junit", "github")
EVERY_TOOL = "every tool callable under PurrA"
DESCRIPTION = f"""\
Connect to one MCP server, list its tools and print PurrA's verdict on each (purra.output-schema/v1, as purra-mcp
decides it), with the reasons and hints a server's author can follow. No tool is ever called.

The server is the command after -- (run without a shell), a Streamable HTTP --url, or --config FILE --server NAME
(an mcpServers or VS Code servers file). Header values, and env values whose names end in a word that says they
are secrets (..._TOKEN, ..._API_KEY, ..._SECRET, ..._PASSWORD ...) or that --secret-env names, are never printed,
not even when the server sends them back: they show as *** (a value under 8 characters is not searched for: it could
be one of the server's words). Every word the server chose is printed on one line, its control characters escaped.

The requirement: {EVERY_TOOL}, or with --require only the tools named (each listed and callable); --expect-digest
also pins the catalog (purra.json-identity/v1 over the listing, as Catalog.digest and %mcp_catalog show it).

exit codes:
  {EXIT_MET}  the requirement holds
  {EXIT_UNMET}  it does not (a required tool is missing or not callable, or the digest differs)
  {EXIT_UNCHECKED}  it could not be checked (a mistake in the command line; the server not reached, or its listing
     refused: the error's code says which)
"""


@dataclass(frozen=True)
class Requirement:
    """What must hold: the tools ``required`` (``None``: every listed tool) callable, and the digest if pinned."""

    required: tuple[str, ...] | None = None
    digest: str | None = None

    def describe(self) -> str:
        tools = EVERY_TOOL if self.required is None else f"callable under PurrA: {quoted_list(self.required)}"
        return tools + (f"; catalog digest {self.digest}" if self.digest else "")

    def requires(self, tool: str) -> bool:
        return self.required is None or tool in self.required

    def problems(self, catalog: Catalog) -> list[Problem]:
        """Each way ``catalog`` falls short (in the order of the requirement)."""
        tools = {tool.name: tool for tool in catalog.tools}
        names = sorted(tools) if self.required is None else self.required
        found = [Problem(name, f"{visible(name)} is not listed by the server") for name in names if name not in tools]
        found += [Problem(name, f"{tools[name].label} is {NOT_CALLABLE}") for name in names
                  if name in tools and not tools[name].callable]  # fmt: skip
        try:
            check_digest(catalog, self.digest)
        except McpSessionError as error:
            found.append(Problem(None, error.message))
        return found


@dataclass(frozen=True)
class Problem:
    """One way the requirement is not met: about ``tool`` (``None``: the catalog as a whole), in one sentence."""

    tool: str | None
    sentence: str


@dataclass(frozen=True)
class CheckReport:
    """One check's outcome: the catalog and the requirement's problems, or the error that stopped the check."""

    server: str
    target: str
    requirement: Requirement
    catalog: Catalog | None = None
    problems: tuple[Problem, ...] = ()
    error: McpSessionError | None = None

    @property
    def exit_code(self) -> int:
        if self.error is not None or self.catalog is None:
            return EXIT_UNCHECKED
        return EXIT_UNMET if self.problems else EXIT_MET

    @property
    def outcome(self) -> str:
        if self.exit_code == EXIT_UNCHECKED:
            return "not checked"
        return "not met" if self.problems else "met"

    @property
    def server_said(self) -> tuple[str, ...]:
        """The last lines the server wrote on stderr before the check could not run (scrubbed as it was read): the
        last ``SERVER_LINES``, where the error that stopped it is, a first line saying how many came before."""
        said = self.error.server_text.splitlines() if self.error is not None else []
        if len(said) <= SERVER_LINES:
            return tuple(said)
        return (f"… ({len(said) - SERVER_LINES + 1} earlier lines cut)", *said[1 - SERVER_LINES :])

    def tool_rows(self) -> list[dict[str, Any]]:
        tools = self.catalog.tools if self.catalog is not None else ()
        return [_tool_row(tool, self.requirement.requires(tool.name)) for tool in tools]

    def to_json(self) -> dict[str, Any]:
        catalog = self.catalog
        error = self.error
        return {
            "server": self.server,
            "target": self.target,
            "requirement": self.requirement.describe(),
            "outcome": self.outcome,
            "exitCode": self.exit_code,
            "problems": [problem.sentence for problem in self.problems],
            "error": None
            if error is None
            else {"code": error.code, "message": error.message, "serverSaid": list(self.server_said)},
            "protocolVersion": catalog.protocol_version if catalog else None,
            "digest": catalog.digest if catalog else None,
            "tools": self.tool_rows(),
        }


def _tool_row(tool: ToolVerdict, required: bool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "callable": tool.callable,
        "required": required,
        "inputVerdict": tool.input_verdict,
        "outputVerdict": tool.output_verdict,
        "bindableAs": tool.bindable_as,
        "refusal": tool.refusal,
        "reasons": list(tool.reasons),
    }


def check(options: ServerOptions, requirement: Requirement, *, timeout: float = 30.0) -> CheckReport:
    """Connect, list, judge, close: the report of one server. A failure to connect or list is the report's
    ``error`` (``exit_code`` 2), never an exception."""
    try:
        config = options.to_config(default_timeout=timeout).with_views(False)
    except McpSessionError as error:
        return CheckReport(options.name, "", requirement, error=error)
    try:
        with connect(config, approval="deny") as session:
            catalog = session.catalog
    except McpSessionError as error:
        return CheckReport(config.name, config.target, requirement, error=error)
    return CheckReport(config.name, config.target, requirement, catalog, tuple(requirement.problems(catalog)))


# --- output ------------------------------------------------------------------------------------------------------


def as_text(report: CheckReport) -> list[CliText]:
    lines = [f"checking {report.server} ({report.target})"]
    catalog = report.catalog
    if catalog is not None:
        lines.append(f"{catalog.summary}, protocol {catalog.protocol_version}")
        for tool in catalog.tools:
            verdict = f"{CALLABLE} (as {tool.bindable_as})" if tool.callable else NOT_CALLABLE
            required = report.requirement.requires(tool.name)
            mark = "ok  " if tool.callable else "FAIL" if required else "--  "
            lines.append(f"{mark} {tool.label}: {verdict}{'' if required else ' (not required)'}")
            lines += [f"       {reason}" for reason in tool.reasons]
    if report.error is not None:
        lines.append(f"could not check: {report.error.code}: {report.error.message}")
        if report.server_said:
            lines += [f"{SERVER_SAID_LABEL}:", *(f"  | {line}" for line in report.server_said)]
    lines.append(f"requirement ({report.requirement.describe()}): {report.outcome}")
    lines += [f"  - {problem.sentence}" for problem in report.problems]
    return [cli_text(line) for line in lines]


def as_json(report: CheckReport) -> list[CliText]:
    """The report as JSON, every character outside ASCII (a bidirectional override too) as its JSON escape: the
    values are exactly the server's, and no line of it can be read as anything but JSON."""
    return [cli_text(line) for line in json.dumps(report.to_json(), indent=2, ensure_ascii=True).split("\n")]


def as_junit(report: CheckReport) -> list[CliText]:
    """One test case per listed tool (a failure when a required tool is not callable), one per unmet requirement
    that no tool stands for (a missing tool, the digest), and an error case when the check could not run."""
    cases = []
    for row in report.tool_rows():
        reasons = tuple(row["reasons"])
        if row["required"] and not row["callable"]:
            cases.append(Case(report.server, row["name"], failure=f"{NOT_CALLABLE} under PurrA", kind="unmet",
                              detail=reasons))  # fmt: skip
        else:
            cases.append(Case(report.server, row["name"], output=(f"{NOT_CALLABLE} (not required)", *reasons)
                              if reasons else ()))  # fmt: skip
    listed = {row["name"] for row in report.tool_rows()}
    for problem in report.problems:  # what no listed tool's case says: a required tool not listed, the digest
        if problem.tool not in listed:
            cases.append(Case(report.server, problem.tool or "catalog digest", failure=problem.sentence, kind="unmet"))
    if report.error is not None:
        error = report.error
        cases.append(Case(report.server, "connect and list", error=f"{error.code}: {error.message}", kind=error.code,
                          detail=report.server_said))  # fmt: skip
    return [cli_text(line) for line in suite(f"purra-jupyter check {report.server}", cases).split("\n")]


def as_github(report: CheckReport) -> list[CliText]:
    """GitHub Actions workflow commands: an error annotation per unmet requirement, a warning per tool that is not
    callable but not required, and a notice with the outcome."""
    lines = []
    if report.error is not None:
        said = f" ({SERVER_SAID_LABEL}: {' | '.join(report.server_said)})" if report.server_said else ""
        lines.append(_annotation("error", "purra-jupyter check", f"{report.error.code}: {report.error.message}{said}"))
    for row in report.tool_rows():
        if not row["callable"]:
            level = "error" if row["required"] else "warning"
            title = f"PurrA: {report.server}/{row['name']} {NOT_CALLABLE}"
            lines.append(_annotation(level, title, "; ".join(row["reasons"]) or NOT_CALLABLE))
    listed = {row["name"] for row in report.tool_rows()}
    lines += [_annotation("error", f"PurrA: {report.server}", problem.sentence) for problem in report.problems
              if problem.tool not in listed]  # fmt: skip
    lines.append(_annotation("notice", "purra-jupyter check", f"{report.requirement.describe()}: {report.outcome}"))
    return lines


def _annotation(level: str, title: str, message: str) -> CliText:
    """One workflow command, the kit's own; its values made one line (``cli_text``) and escaped as GitHub's toolkit
    escapes them, so a server's words cannot end the command early or start another."""
    return CliText(f"::{level} title={_escape(cli_text(title), properties=True)}::{_escape(cli_text(message))}")


def _escape(text: str, *, properties: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if properties else text


WRITERS: dict[str, Callable[[CheckReport], list[CliText]]] = {"text": as_text, "json": as_json, "junit": as_junit,
                                                              "github": as_github}  # fmt: skip


def emit(lines: Sequence[CliText]) -> None:
    """The one way the command writes its report: lines made by ``egress.cli_text`` (or a workflow command of the
    kit's own, ``_annotation``)."""
    print("\n".join(lines))


# --- the command line ---------------------------------------------------------------------------------------------


def parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The command's parser and its ``check`` subcommand's (whose usage a mistake in its options shows)."""
    top = argparse.ArgumentParser(prog="purra-jupyter", description="Command-line tools of purra-jupyter.")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub = commands.add_parser(
        "check", help="PurrA's verdict on every tool of one server, with an exit code for CI",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="purra-jupyter check [options] (-- COMMAND [ARGS...] | --url URL | --config FILE --server NAME)",
    )  # fmt: skip
    sub.add_argument("--url", help="a Streamable HTTP endpoint (https://, or http:// to a loopback host)")
    sub.add_argument("--header", action="append", default=[], metavar="K=V", help="an HTTP header (value never shown)")
    sub.add_argument("--env", action="append", default=[], metavar="K=V", help="an environment variable (stdio)")
    sub.add_argument("--secret-env", action="append", default=[], metavar="K",
                     help="an --env whose value is a secret though its name does not say so")  # fmt: skip
    sub.add_argument("--cwd", help="the working directory of a stdio server")
    sub.add_argument("--config", metavar="FILE", help="an mcpServers / VS Code servers JSON file")
    sub.add_argument("--server", metavar="NAME", help="with --config: the entry to check; else the server's name")
    sub.add_argument("--timeout", type=float, default=30.0, help="seconds to connect and list (default 30)")
    sub.add_argument("--require", action="append", metavar="TOOL", help="require this tool (repeatable)")
    sub.add_argument("--expect-digest", metavar="HEX", help="require this catalog digest")
    sub.add_argument("--format", choices=FORMATS, default="text", help="the report's form (default text)")
    return top, sub


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``purra-jupyter`` with ``argv`` (default: the process's); the exit code. The report goes to stdout."""
    words = list(sys.argv[1:] if argv is None else argv)
    options, command = (words[: words.index("--")], words[words.index("--") + 1 :]) if "--" in words else (words, [])
    top, sub = parsers()
    args = top.parse_args(options)  # a usage mistake exits 2 with argparse's message
    if args.config and not args.server:
        sub.error("--config needs --server NAME, the entry to check")
    if args.expect_digest is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", args.expect_digest):
        sub.error("--expect-digest takes a 64-digit hex digest (Catalog.digest)")
    server = ServerOptions(args.server or "server", command=command, url=args.url, headers=args.header, env=args.env,
                           secret_env=args.secret_env, cwd=args.cwd, config_file=args.config)  # fmt: skip
    requirement = Requirement(tuple(args.require) if args.require else None, args.expect_digest)
    report = check(server, requirement, timeout=args.timeout)
    emit(WRITERS[args.format](report))
    return report.exit_code


def run() -> None:
    """The console script."""
    sys.exit(main())

"""IPython magics: each one parses its line and calls the Python API (``pj.connect``, ``s.call`` ...).

    %load_ext purra_jupyter
    %mcp_connect docs -- python -m purra_jupyter.demo
    %mcp_call docs search_documents {"query": "PurrA", "limit": 3}

Errors show as one line with their code, never a traceback: a mistake in the magic's line (options, JSON,
configuration) as an IPython ``UsageError``, a failure at run time (connect, timeout, closed session ...)
as ``McpSessionError``; either one speaks of magics, not of the Python API.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import shlex
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, cast

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display
from traitlets import Bool, Enum, Float, Int, observe
from traitlets.config import Configurable

from ._base import runner
from ._base.config import ServerConfig, ServerOptions
from ._base.egress import bundle, cell_text, text_bundle
from ._base.errors import KEPT_APART, SERVER_SAID_LABEL, McpSessionError
from ._base.frames import frame_html, is_kit_frame
from ._base.markup import join, pre, tag
from ._base.wire import APPROVAL_POLICIES, CONFIG_INVALID, INVALID_ARGUMENTS, LOG_LEVELS, READY, SESSION_EXISTS, STALE
from ._beside.offerings import template_variables
from ._purra.bindings import allow_any_scope
from ._purra.listing import check_digest
from ._session.opening import connect, with_views_decided
from ._session.session import INSTRUCTIONS_LABEL, McpSession, registry, shown_instructions
from ._ui.records import TICK_SECONDS, LiveOutput, combined, in_kernel, redraw_while

if TYPE_CHECKING:
    import pandas as pd
    from IPython.core.interactiveshell import InteractiveShell

    from ._beside.offerings import Offerings, PromptMessages, ResourceContents
    from ._connection.connection import SessionLog
    from ._purra.catalog import Catalog
    from ._purra.envelope import Envelope, RawResult
    from ._ui.approval import PendingCall
    from ._ui.forms import SchemaForm
    from ._ui.offering_forms import OfferingForm

# The codes of mistakes in what the user wrote; every other code is a failure at run time.
USAGE_CODES = (CONFIG_INVALID, INVALID_ARGUMENTS)
# What --sampling and --elicitation take: the person answers, or nobody (refused).
ANSWER_WAYS: dict[str, str | None] = {"prompt": "prompt", "none": None}
# What the API's messages advise, said the way a magic user does it.
_MAGIC_WORDS = (
    ("%mcp_connect or pj.connect()", "%mcp_connect"),
    ("pj.connect()", "%mcp_connect"),
    ("pj.sessions() lists them", "%mcp_sessions lists them"),
    ("Call refresh() first", "Run %mcp_catalog NAME --refresh first"),
    ("Explore it with raw=True", "Explore it with --raw"),
    ("check_arguments=False is for raw calls only (raw=True)", "--unchecked is for raw calls only (--raw)"),
    (KEPT_APART, "shown above, as text"),
)


def in_magic_words(message: str) -> str:
    for api, magic in _MAGIC_WORDS:
        message = message.replace(api, magic)
    return message


@contextmanager
def _one_line_errors() -> Iterator[None]:
    """Our errors and purra-mcp's become one line carrying their code, in a magic's words: a ``UsageError``
    for a mistake in the line, an ``McpSessionError`` for a failure at run time."""
    from purra_mcp import McpAdapterError

    try:
        yield
    except McpSessionError as error:
        if error.code in USAGE_CODES:
            raise UsageError(in_magic_words(str(error))) from None
        if error.server_text:  # its own block, escaped: no frontend makes a link of it
            _show_server_words(SERVER_SAID_LABEL, error.server_text)
        raise McpSessionError(error.code, in_magic_words(error.message), server_text=error.server_text) from None
    except McpAdapterError as error:
        raise McpSessionError(error.code, "purra-mcp refused the operation.") from None


def _show_server_words(label: str, text: str) -> None:
    """A server's own words in a block of their own, under ``label``, as text (no frontend makes a link of it)."""
    html = join([tag("small", label), pre(text)])
    display(bundle(html, cell_text(f"{label}:\n{text}")), raw=True)


@contextmanager
def _connecting_line(config: ServerConfig) -> Iterator[None]:
    """A line that says what is being reached, where, for how long and until when, while ``connect`` holds the
    cell; it ends saying how long it took, or that it failed."""
    if not in_kernel():  # a terminal would print the line anew each time
        yield
        return
    what = f"connecting {config.name} ({config.transport}: {config.target})"
    limit = f"timeout {config.timeout:g} s" + (", not counting your authorization" if config.oauth else "")
    started = time.monotonic()
    outcome = ""

    def draw() -> None:
        output.update(text_bundle(f"{what} — {outcome or 'waiting'} {time.monotonic() - started:.1f} s ({limit})"))

    output = LiveOutput()
    output.show(text_bundle(f"{what} — waiting 0.0 s ({limit})"))
    ticker = runner.submit(redraw_while, lambda: not outcome, draw)
    connected = False
    try:
        yield
        connected = True
    finally:
        outcome = "connected in" if connected else "failed after"
        with suppress(Exception):
            ticker.result(timeout=2 * TICK_SECONDS + 1)


def parse_json_arguments(text: str) -> dict[str, Any]:
    """Tool arguments from JSON text (an object); a mistake names its line and column."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(
            f"{INVALID_ARGUMENTS}: the arguments are not valid JSON: {error.msg} at line {error.lineno}, "
            f"column {error.colno}."
        ) from None
    if not isinstance(value, dict):
        raise UsageError(f'{INVALID_ARGUMENTS}: the arguments must be a JSON object, like {{"query": "x"}}.')
    return value


class MagicHelp:
    """What ``%mcp_... --help`` returns: the magic's usage and options, shown as text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as error:
        raise UsageError(f"{CONFIG_INVALID}: {error} in the magic's line.") from None


class ArgumentMagic(Protocol):
    """A magic method under ``@magic_arguments()``: its docstring and parser hold its options."""

    __doc__: str | None
    parser: argparse.ArgumentParser


def parse(magic: object, line: str | list[str]) -> argparse.Namespace | MagicHelp:
    """The magic's parsed options (from its line, or its words), or its ``MagicHelp`` when they ask for
    ``--help``. ``magic`` is an ``ArgumentMagic``, which IPython's unannotated decorators cannot say."""
    words = _words(line) if isinstance(line, str) else line
    options = words[: words.index("--")] if "--" in words else words
    described = cast(ArgumentMagic, magic)
    if "-h" in options or "--help" in options:
        return MagicHelp(inspect.cleandoc(described.__doc__ or ""))  # magic_arguments put the options in it
    try:
        return described.parser.parse_args(options)
    except UsageError as error:
        raise UsageError(f"{error}. {what_to_type(described)}") from None


def what_to_type(magic: ArgumentMagic) -> str:
    """The line a magic takes (its docstring's ``%mcp_...`` form), and the sessions one may name there."""
    found = re.search(r"``(%mcp_[^`]+)``", magic.__doc__ or "")
    usage = found.group(1) if found else " ".join(magic.parser.format_usage().replace("::", " ").split())
    if not re.search(r"\bname\b", usage, re.IGNORECASE):
        return f"Type {usage}"
    names = [session.name for session in registry.list()]
    sessions = f"the open sessions: {', '.join(names)}" if names else "none is open: %mcp_connect NAME -- COMMAND"
    return f"Type {usage} (NAME: a session; {sessions})"


# --- what a magic's line describes --------------------------------------------------------------


def _config(args: argparse.Namespace, command: list[str], *, default_timeout: float) -> ServerConfig:
    """The server ``%mcp_connect``'s options describe: a --config entry, a --url or the command after ``--``;
    ``default_timeout`` (``McpMagics.timeout``) applies where neither --timeout nor the entry gives one."""
    options = ServerOptions(
        args.name, command=command, url=args.url, headers=args.header or (), env=args.env or (),
        secret_env=args.secret_env or (), cwd=args.cwd,
        config_file=args.config, timeout=args.timeout, oauth=args.oauth, scopes=args.scope or (),
        client_id=args.client_id,
    )  # fmt: skip
    return options.to_config(default_timeout=default_timeout)


def _held_config(namespace: Mapping[str, Any], args: argparse.Namespace, command: list[str]) -> ServerConfig:
    """The server a notebook variable holds (``--from``): a ``ServerConfig``, or NAME's of a dict of them; it takes
    NAME, and ``--timeout`` if given. Every other way of describing a server is the variable's to say."""
    described = (args.url, args.config, args.header, args.env, args.secret_env, args.cwd, args.oauth, args.scope,
                 args.client_id)  # fmt: skip
    if command or any(described):
        raise UsageError(f"{CONFIG_INVALID}: --from takes the whole server from '{args.source}'; give no command, "
                         "--url, --config or server options (only --timeout).")  # fmt: skip
    held = _variable(namespace, args.source, (ServerConfig, Mapping), "a ServerConfig or a dict of them")
    if isinstance(held, Mapping) and not isinstance(held.get(args.name), ServerConfig):
        listed = ", ".join(str(key) for key in held) or "none"
        raise UsageError(f"{CONFIG_INVALID}: '{args.source}' holds no server '{args.name}'; it has: {listed}.")
    config: ServerConfig = held[args.name] if isinstance(held, Mapping) else held
    if config.name != args.name:
        config = replace(config, name=args.name)
    return config if args.timeout is None else config.with_timeout(args.timeout)


def _reuse(session: McpSession, config: ServerConfig, approval: str, expect_digest: str | None) -> str:
    """Take the open ``session`` for a rerun of the ``%mcp_connect`` that opened it (same server; the timeout and
    the approval policy may change on an open session); what changed, in words. ``mcp_session_exists`` if the
    server differs or the session failed: a rerun must not quietly talk to another server than the line says."""
    name = session.name
    if with_views_decided(replace(config, timeout=session.config.timeout)) != session.config:
        raise McpSessionError(
            SESSION_EXISTS,
            f"A session named '{name}' is already open with another server configuration. Add --replace to close "
            f"it and connect anew, or close it first with %mcp_disconnect {name}.",
        )
    if session.state not in (READY, STALE):
        raise McpSessionError(
            SESSION_EXISTS,
            f"Session '{name}' is open but {session.state} ({session.cause}). Add --replace to connect anew.",
        )
    check_digest(session.catalog, expect_digest)
    changes = []
    if config.timeout != session.config.timeout:
        session.set_timeout(config.timeout)
        changes.append(f"timeout now {config.timeout:g} s")
    if approval != session.approval:
        session.set_approval(approval)
        changes.append(f"approval policy now '{approval}'")
    changed = f"; {', '.join(changes)}" if changes else ""
    return f"reusing the open session '{name}' (same server, {session.state}{changed}); --replace connects anew"


def _variable(
    namespace: Mapping[str, Any], name: str, kind: type | tuple[type, ...] = dict, what: str = "a dict of arguments"
) -> Any:
    """The notebook variable a magic's option names (``--args``, ``--rows`` ...), checked to be of ``kind``."""
    if name not in namespace:
        raise UsageError(f"{INVALID_ARGUMENTS}: no variable named '{name}' in the notebook.")
    value = namespace[name]
    if not isinstance(value, kind):
        raise UsageError(f"{INVALID_ARGUMENTS}: '{name}' must hold {what}.")
    return value


def _function(namespace: Mapping[str, Any], name: str, what: str, code: str) -> Callable[..., Any]:
    """The function a notebook variable holds (a scope validator, a check); ``code`` is the mistake's code."""
    value = _variable(namespace, name, object, what)
    if not callable(value):
        raise UsageError(f"{code}: '{name}' must hold {what}.")
    return cast("Callable[..., Any]", value)


def _scope_validator(namespace: Mapping[str, Any], args: argparse.Namespace) -> Callable[..., Any] | None:
    """The scope validator ``%mcp_bind``'s options name; a write must name one (or --allow-any-scope)."""
    if args.scope_validator and args.allow_any_scope:
        raise UsageError(f"{CONFIG_INVALID}: give --scope-validator or --allow-any-scope, not both.")
    validator: Callable[..., Any] | None = None
    if args.scope_validator:
        validator = _function(namespace, args.scope_validator, "a scope validator function", CONFIG_INVALID)
    elif args.allow_any_scope:
        validator = allow_any_scope
    if args.effect != "read" and validator is None:
        raise UsageError(
            f"{CONFIG_INVALID}: a --{args.effect} binding needs --scope-validator VARIABLE or --allow-any-scope."
        )
    return validator


def _call_arguments(
    namespace: Mapping[str, Any], variable: str | None, json_text: str, cell: str | None
) -> dict[str, Any]:
    """A call's arguments from one place: the dict in ``--args VARIABLE``, the cell's JSON or the line's."""
    if cell is not None and json_text:
        raise UsageError(f"{INVALID_ARGUMENTS}: give the JSON arguments in the cell body or on the line, not both.")
    if variable and (json_text or (cell or "").strip()):
        raise UsageError(f"{INVALID_ARGUMENTS}: give --args or JSON arguments, not both.")
    if variable:
        return cast("dict[str, Any]", _variable(namespace, variable))
    return parse_json_arguments(cell if cell is not None else json_text)


def _sessions_frame(sessions: list[McpSession]) -> pd.DataFrame:
    """One row per session, indexed by its name: how it is reached, its state, its server and its tools."""
    import pandas as pd

    rows = [
        {
            "session": session.name,
            "transport": session.transport,
            "target": session.config.target,
            "state": session.state,
            "protocol": session.protocol_version,
            "server": session.connection.hello.label,
            "tools": len(session.catalog),
            "callable": sum(tool.callable for tool in session.catalog.tools),
            "bound": session.bound_count,
        }
        for session in sessions
    ]
    columns = ["session", "transport", "target", "state", "protocol", "server", "tools", "callable", "bound"]
    return pd.DataFrame(rows, columns=columns).set_index("session")


def _apply_to_open_sessions(setting: str, apply: Callable[[McpSession], None]) -> None:
    """A ``%config McpMagics`` change is the notebook's wish for every session, the open ones too: say which."""
    sessions = registry.list()
    for session in sessions:
        apply(session)
    if sessions:
        names = ", ".join(session.name for session in sessions)
        print(f"{setting} applies to new sessions and to the open ones: {names}.")


class ShellMagics(Magics):
    """Magics made with their shell (``Magics`` allows it to be None)."""

    @property
    def _shell(self) -> InteractiveShell:
        assert self.shell is not None
        return self.shell


@magics_class
class McpMagics(ShellMagics, Configurable):
    """Magics for MCP sessions; ``%config McpMagics.timeout = 60`` and friends set their defaults."""

    timeout = Float(30.0, config=True, help="seconds a server has to answer (connect and each request)")
    approval = Enum(APPROVAL_POLICIES, default_value="prompt", config=True,
                    help="approval policy of new sessions: prompt, auto or deny")  # fmt: skip
    max_rows = Int(50, config=True, help="rows shown by %mcp_sessions and %mcp_log")
    views = Bool(None, allow_none=True, config=True,
                 help="tools' own views (MCP Apps) in new sessions: True, False or None (on in a kernel)")  # fmt: skip

    def __init__(self, shell: InteractiveShell) -> None:
        Configurable.__init__(self, config=shell.config)
        Magics.__init__(self, shell=shell)
        # IPython's annotations make configurables a list of shells; it holds every Configurable of the shell.
        shell.configurables.append(self)  # type: ignore[arg-type]

    @observe("approval")
    def _approval_changed(self, change: dict[str, Any]) -> None:
        _apply_to_open_sessions(f"approval policy '{change['new']}'", lambda s: s.set_approval(change["new"]))

    @observe("timeout")
    def _timeout_changed(self, change: dict[str, Any]) -> None:
        _apply_to_open_sessions(f"timeout {change['new']:g} s", lambda s: s.set_timeout(change["new"]))

    # --- sessions ----------------------------------------------------------------------------

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("name", help="the session's name (also its PurrA server id)")
    @argument("--url", help="a Streamable HTTP endpoint (https://, or http:// to a loopback host)")
    @argument("--header", action="append", metavar="K=V", help="an HTTP header (value never shown)")
    @argument("--oauth", action="store_true", help="use the MCP authorization flow (OAuth) for --url")
    @argument("--scope", action="append", metavar="S", help="with --oauth: a scope to ask for (repeatable)")
    @argument("--client-id", metavar="ID", help="with --oauth: a client registered beforehand (no secret)")
    @argument("--env", action="append", metavar="K=V", help="an environment variable for a stdio server")
    @argument("--secret-env", action="append", metavar="K", help="an --env whose value is a secret though its name "
              "does not say so: scrubbed from all the server sends")  # fmt: skip
    @argument("--cwd", help="working directory of a stdio server")
    @argument("--config", metavar="FILE", help="take NAME from an mcpServers / VS Code servers JSON file")
    @argument("--from", dest="source", metavar="VAR", help="the pj.ServerConfig a notebook variable holds (or NAME "
              "of a dict of them, as pj.load_servers gives): a server object of this kernel too")  # fmt: skip
    @argument("--timeout", type=float, help="seconds (default: %%config McpMagics.timeout)")
    @argument("--approval", choices=APPROVAL_POLICIES, help="approval policy (default: McpMagics.approval)")
    @argument("--expect-digest", metavar="HEX", help="fail with mcp_digest_mismatch if the catalog changed")
    @argument("--replace", action="store_true", help="close an open session of that name first, then connect")
    @argument("--record", action="store_true", help="keep a transcript of every message (session.transcript)")
    @argument("--sampling", choices=ANSWER_WAYS, help="who answers the server's sampling requests (default: prompt)")
    @argument("--elicitation", choices=ANSWER_WAYS, help="who answers its elicitation requests (default: prompt)")
    @argument("--root", action="append", metavar="PATH", help="a folder the server may work in (roots/list)")
    def mcp_connect(self, line: str) -> McpSession | MagicHelp:
        """Open a monitored MCP session that lives across cells.

        Usage::

            %mcp_connect NAME [options] -- COMMAND [ARGS...]     stdio: the command runs without a shell
            %mcp_connect NAME --url URL [--header K=V]...         Streamable HTTP
            %mcp_connect NAME --url URL --oauth [--scope S]...    ... behind the MCP authorization flow
            %mcp_connect NAME --config mcp.json                   an entry of an mcpServers file
            %mcp_connect NAME --from VAR                          a pj.ServerConfig held in a variable

        Examples::

            %mcp_connect demo -- {sys.executable} -m purra_jupyter.demo
            %mcp_connect time --approval auto -- mcp-server-time
            %mcp_connect files --root ./data --sampling none -- npx some-server

        The server's questions during a call (sampling, elicitation) are the person's to answer (``prompt``) or
        refused (``none``); ``--root`` gives the folders it is told when it asks (``roots/list``).

        ``{expression}`` and ``$name`` are expanded from the notebook's variables, as in other magics, one
        word at a time: a value with spaces (a Python path) stays one argument.

        Run again (Run All twice), it reuses the open session of that name when the line names the same server,
        and says so; a line naming another server fails with ``mcp_session_exists`` unless ``--replace`` is given.
        """
        words = [self._shell.var_expand(word, depth=2) for word in _words(line)]
        args = parse(self.mcp_connect, words)
        if isinstance(args, MagicHelp):
            return args
        command = words[words.index("--") + 1 :] if "--" in words else []
        with _one_line_errors():
            config = (
                _held_config(self._shell.user_ns, args, command)
                if args.source
                else _config(args, command, default_timeout=self.timeout)
            )
            if config.views is None and self.views is not None:
                config = config.with_views(self.views)
            if args.root:
                config = replace(config, roots=args.root)
            approval = args.approval or self.approval
            session = registry.find(config.name)
            if session is not None and not args.replace:
                display(text_bundle(_reuse(session, config, approval, args.expect_digest)), raw=True)
            else:
                if session is not None:
                    session.close("replaced with %mcp_connect --replace")
                with _connecting_line(config):
                    asked = {"sampling": args.sampling, "elicitation": args.elicitation}
                    ways: dict[str, Any] = {kind: ANSWER_WAYS[way] for kind, way in asked.items() if way}
                    session = connect(
                        config, approval=approval, expect_digest=args.expect_digest, record=args.record, **ways
                    )
        display(session.status_widget())
        if session.instructions:
            _show_server_words(INSTRUCTIONS_LABEL, shown_instructions(session.instructions))
        display(text_bundle(f"{session.catalog.summary} — %mcp_catalog {session.name} shows the tools"), raw=True)
        return session

    @line_magic
    @magic_arguments()
    @argument("name", help="the session")
    @argument("level", choices=LOG_LEVELS, help="the least severe level the server is to send")
    def mcp_log_level(self, line: str) -> MagicHelp | None:
        """Ask a server for its log messages of LEVEL and above: ``%mcp_log_level NAME debug``. They arrive as
        ``server_log`` rows of ``%mcp_log NAME`` (the server's words, outside the PurrA contract)."""
        args = parse(self.mcp_log_level, line)
        if isinstance(args, MagicHelp):
            return args
        with _one_line_errors():
            registry.get(args.name).set_log_level(args.level)
        shown = f"%mcp_log {args.name} shows them"
        print(f"Asked '{args.name}' for its log messages of level {args.level} and above; {shown}.")
        return None

    @line_magic
    @magic_arguments()
    @argument("name", nargs="?", help="the session to close")
    @argument("--all", action="store_true", help="close every open session")
    def mcp_disconnect(self, line: str) -> MagicHelp | None:
        """Close a session and its server process: ``%mcp_disconnect NAME`` or ``%mcp_disconnect --all``."""
        args = parse(self.mcp_disconnect, line)
        if isinstance(args, MagicHelp):
            return args
        if args.all == bool(args.name):
            raise UsageError(f"{CONFIG_INVALID}: give a session name or --all.")
        with _one_line_errors():
            if args.all:
                names = [session.name for session in registry.list()]
                registry.close_all("closed with %mcp_disconnect --all")
                print(f"Closed {len(names)} session{'s' if len(names) != 1 else ''}: {', '.join(names)}." if names
                      else "No open sessions to close.")  # fmt: skip
            else:
                registry.get(args.name).close("closed with %mcp_disconnect")
                print(f"Closed session '{args.name}'.")
        return None

    @line_magic
    @magic_arguments()
    def mcp_sessions(self, line: str) -> pd.DataFrame | MagicHelp | None:
        """The open sessions as a DataFrame: ``%mcp_sessions`` (with none open, a line that says so)."""
        args = parse(self.mcp_sessions, line)
        if isinstance(args, MagicHelp):
            return args
        sessions = registry.list()
        if not sessions:
            print("No open sessions. Open one with %mcp_connect NAME -- COMMAND (or --url URL).")
            return None
        return _sessions_frame(sessions).head(self.max_rows)

    @line_magic
    @magic_arguments()
    @argument("name", help="the session")
    def mcp_log(self, line: str) -> SessionLog | MagicHelp:
        """The session's event log (connect, list, bind, approvals, calls, stderr, close ...): its last rows
        (``McpMagics.max_rows``); ``s.log.to_frame()`` has them all as a DataFrame."""
        args = parse(self.mcp_log, line)
        if isinstance(args, MagicHelp):
            return args
        with _one_line_errors():
            return registry.get(args.name).log.last(self.max_rows)


@magics_class
class ToolMagics(ShellMagics):
    """The magics of a session's tools: its catalog, bindings, calls and batches."""

    # --- catalog and bindings ----------------------------------------------------------------

    @line_magic
    @magic_arguments()
    @argument("name", help="the session")
    @argument("--refresh", action="store_true", help="list the tools again (after tools/list_changed)")
    def mcp_catalog(self, line: str) -> Catalog | MagicHelp:
        """The session's tools with PurrA's verdicts: ``%mcp_catalog NAME [--refresh]``."""
        args = parse(self.mcp_catalog, line)
        if isinstance(args, MagicHelp):
            return args
        with _one_line_errors():
            session = registry.get(args.name)
            return session.refresh() if args.refresh else session.catalog

    @line_magic
    @magic_arguments()
    @argument("name", help="the session")
    @argument("tool", help="the tool's name on the server")
    @argument("--as", dest="local_name", metavar="LOCAL", help="the local name (default: derived from the tool's)")
    @argument("--title", help="the binding's title")
    @argument("--concurrency-safe", action="store_true", help="declare that calls may run concurrently (reads)")
    @argument("--write", dest="effect", action="store_const", const="write", default="read",
              help="bind as a write under PurrA's confirm policy")  # fmt: skip
    @argument("--destructive", dest="effect", action="store_const", const="destructive",
              help="bind as a destructive write under PurrA's confirm policy")  # fmt: skip
    @argument("--scope-validator", metavar="VARIABLE", help="a write's scope validator, from a notebook variable")
    @argument("--allow-any-scope", action="store_true", help="a write that checks no scope (logged)")
    @argument("--scope-id", metavar="S", help="the scope a write's approvals are bound to")
    @argument("--scope-revision", metavar="R", help="the revision of that scope")
    @argument("--assume-read-only", action="store_true", help="declare read a tool its server marks as a write")
    def mcp_bind(self, line: str) -> dict[str, Any] | MagicHelp:
        """Bind a tool through purra-mcp.

        Usage::

            %mcp_bind NAME TOOL [--as LOCAL] [--title TEXT] [--concurrency-safe] [--assume-read-only]
            %mcp_bind NAME TOOL --write|--destructive [--scope-validator VARIABLE | --allow-any-scope]
                      [--scope-id S] [--scope-revision R]
        """
        args = parse(self.mcp_bind, line)
        if isinstance(args, MagicHelp):
            return args
        validator = _scope_validator(self._shell.user_ns, args)
        with _one_line_errors():
            return registry.get(args.name).bind(
                args.tool,
                local_name=args.local_name,
                title=args.title,
                scope_validator=validator,
                concurrency_safe=args.concurrency_safe,
                effect=args.effect,
                scope_id=args.scope_id,
                scope_revision=args.scope_revision,
                assume_read_only=args.assume_read_only,
            )

    # --- calls -------------------------------------------------------------------------------

    @no_var_expand
    @line_cell_magic
    @magic_arguments()
    @argument("name", help="the session")
    @argument("tool", help="the tool (local or remote name)")
    @argument("--raw", action="store_true", help="a raw MCP call, for tools outside the PurrA profile")
    @argument("--form", action="store_true", help="show an argument form instead of calling")
    @argument("--task", action="store_true", help="run the raw call as an MCP task (a tool that supports tasks)")
    @argument(
        "--unchecked",
        action="store_true",
        help="with --raw: send the arguments without checking them against the tool's schema, to probe the "
        "server's own validation (still behind approval, which says so; a raw form has its own toggle)",
    )
    @argument("--yes", action="store_true", help="approve this call in code (logged as such)")
    @argument("--timeout", type=float, help="seconds for this call (at most 300)")
    @argument("--args", metavar="VARIABLE", help="take the arguments from a dict in a notebook variable")
    def mcp_call(
        self, line: str, cell: str | None = None
    ) -> Envelope | RawResult | PendingCall | SchemaForm | MagicHelp:
        """Call a tool; nothing is sent before the call is approved.

        Usage::

            %mcp_call NAME TOOL [--raw] [--yes] [--timeout S] {"json": "arguments"}
            %mcp_call NAME TOOL --raw --task {...}       run it as a task (status, Cancel, result)
            %mcp_call NAME TOOL --raw --unchecked {...}  sent unchecked: the server's own validation decides
            %mcp_call NAME TOOL --args VARIABLE          arguments from a Python dict
            %mcp_call NAME TOOL --form                   an argument form
            %%mcp_call NAME TOOL [--raw] [--yes]         the cell holds the JSON arguments

        Options come before the JSON. The line is passed as written: ``{...}`` is never expanded as a
        Python expression; use ``--args`` to pass Python values.
        """
        start = min((index for index in (line.find("{"), line.find("[")) if index >= 0), default=len(line))
        args = parse(self.mcp_call, line[:start])
        if isinstance(args, MagicHelp):
            return args
        arguments = _call_arguments(self._shell.user_ns, args.args, line[start:], cell)
        with _one_line_errors():
            session = registry.get(args.name)
            if args.form:
                return session.form(args.tool)
            return session.call(args.tool, arguments, approve=True if args.yes else None, raw=args.raw,
                                timeout=args.timeout, task=args.task,
                                check_arguments=not args.unchecked)  # fmt: skip

    @line_magic
    @magic_arguments()
    @argument("name", help="the session")
    @argument("tool", help="the tool (local or remote name)")
    @argument("--rows", metavar="VARIABLE", required=True, help="a DataFrame or a list of argument dicts")
    @argument("--concurrency", type=int, default=1, help="calls in flight at once (needs --concurrency-safe)")
    @argument("--check", metavar="VARIABLE", help="a function of each result: True, False or a failure message")
    @argument("--raw", action="store_true", help="raw MCP calls, for tools outside the PurrA profile")
    @argument("--yes", action="store_true", help="approve the batch in code (logged as such)")
    @argument("--timeout", type=float, help="seconds for each call (at most 300)")
    @argument("--checkpoint", metavar="FILE", help="keep each row as it settles; a rerun sends only the rest")
    def mcp_evaluate(self, line: str) -> pd.DataFrame | PendingCall | MagicHelp:
        """Call a tool once per row, behind one approval for the batch; returns a DataFrame.

        Usage::

            %mcp_evaluate NAME TOOL --rows VARIABLE [--concurrency N] [--check VARIABLE] [--raw] [--yes]
                                                    [--checkpoint FILE]
        """
        import pandas as pd

        args = parse(self.mcp_evaluate, line)
        if isinstance(args, MagicHelp):
            return args
        namespace = self._shell.user_ns
        rows = _variable(namespace, args.rows, (pd.DataFrame, list), "a DataFrame or a list of argument dicts")
        check = _function(namespace, args.check, "a function of a result", INVALID_ARGUMENTS) if args.check else None
        with _one_line_errors():
            return registry.get(args.name).evaluate(
                args.tool, rows, approve=True if args.yes else None, concurrency=args.concurrency,
                timeout=args.timeout, check=check, raw=args.raw, checkpoint=args.checkpoint,
            )  # fmt: skip


@magics_class
class OfferingMagics(ShellMagics):
    """The magics of what a server offers besides tools (raw exploration, outside the PurrA contract)."""

    # --- what the server offers besides tools (raw exploration) -------------------------------------

    @line_magic
    @magic_arguments()
    @argument("name", help="the session")
    def mcp_resources(self, line: str) -> Listings | MagicHelp:
        """The server's resources and resource templates, as tables (raw MCP, outside the PurrA contract):
        ``%mcp_resources NAME``. Listed again when the server said they changed."""
        args = parse(self.mcp_resources, line)
        if isinstance(args, MagicHelp):
            return args
        with _one_line_errors():
            session = registry.get(args.name)
            return Listings((session.resources, session.resource_templates))

    @line_magic
    @magic_arguments()
    @argument("name", help="the session")
    def mcp_prompts(self, line: str) -> Offerings | MagicHelp:
        """The server's prompts with their arguments, as a table (raw MCP): ``%mcp_prompts NAME``."""
        args = parse(self.mcp_prompts, line)
        if isinstance(args, MagicHelp):
            return args
        with _one_line_errors():
            return registry.get(args.name).prompts

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("name", help="the session")
    @argument("uri", help="the resource's URI, or a resource template's URI template")
    @argument("values", nargs="?", metavar="JSON", help="a template's values, as a JSON object")
    def mcp_read(self, line: str) -> ResourceContents | OfferingForm | MagicHelp:
        """Read a resource (raw MCP, outside the PurrA contract); its contents show by type.

        Usage::

            %mcp_read NAME URI
            %mcp_read NAME URI_TEMPLATE {"variable": "value"}     the template filled in (RFC 6570)
            %mcp_read NAME URI_TEMPLATE                           a form, one field per variable

        The line is passed as written: ``{...}`` is never expanded as a Python expression.
        """
        found = _two_words_and_json(self.mcp_read, line)
        if isinstance(found, MagicHelp):
            return found
        args, rest = found
        with _one_line_errors():
            session = registry.get(args.name)
            if rest.strip():
                return session.read_resource(args.uri, parse_json_arguments(rest))
            if template_variables(args.uri):
                return session.resource_form(args.uri)
            return session.read_resource(args.uri)

    @no_var_expand
    @line_magic
    @magic_arguments()
    @argument("name", help="the session")
    @argument("prompt", help="the prompt's name")
    @argument("arguments", nargs="?", metavar="JSON", help="the prompt's arguments, as a JSON object of strings")
    def mcp_prompt(self, line: str) -> PromptMessages | OfferingForm | MagicHelp:
        """Get a prompt (raw MCP, outside the PurrA contract), shown as its messages.

        Usage::

            %mcp_prompt NAME PROMPT {"argument": "value"}
            %mcp_prompt NAME PROMPT        a prompt without arguments; one with arguments shows its form

        The line is passed as written: ``{...}`` is never expanded as a Python expression.
        """
        found = _two_words_and_json(self.mcp_prompt, line)
        if isinstance(found, MagicHelp):
            return found
        args, rest = found
        with _one_line_errors():
            session = registry.get(args.name)
            if rest.strip():
                return session.get_prompt(args.prompt, parse_json_arguments(rest))
            if session.prompts[args.prompt].get("arguments"):
                return session.prompt_form(args.prompt)
            return session.get_prompt(args.prompt)


# Every class of magics ``%load_ext purra_jupyter`` registers; ``McpMagics`` holds the ``%config`` options.
MAGICS = (McpMagics, ToolMagics, OfferingMagics)


def frame_formatter(frame: Any) -> str | None:
    """IPython's HTML of a DataFrame: the kit's own for a frame it made (``frames.frame_html``: tabs and line breaks
    as whitespace, where pandas writes ``\\t``), pandas' for any other."""
    if not is_kit_frame(frame):
        html: str | None = frame._repr_html_()
        return html
    return str(frame_html(frame))


def show_frames(shell: InteractiveShell) -> None:
    """Make ``frame_formatter`` the shell's HTML of DataFrames (named, so pandas is not imported for it: pandas 3
    names the class's module ``pandas``, earlier versions ``pandas.core.frame``)."""
    if shell.display_formatter is None:  # (a shell that displays nothing)
        return
    html = shell.display_formatter.formatters["text/html"]
    for module in ("pandas", "pandas.core.frame"):
        html.for_type_by_name(module, "DataFrame", frame_formatter)


class Listings(tuple[Any, ...]):
    """Listings shown one after another (``%mcp_resources``: the resources, then the templates)."""

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, Any]:
        return combined([item._repr_mimebundle_() for item in self])


def _two_words_and_json(magic: object, line: str) -> tuple[argparse.Namespace, str] | MagicHelp:
    """A line of two words (a session, then a URI or a prompt, which hold no spaces) and what follows as it is
    written (JSON, whose quotes and spaces a shell-like split would lose)."""
    words = line.split(None, 2)
    if "-h" in words[:2] or "--help" in words[:2]:
        return cast(MagicHelp, parse(magic, ["--help"]))
    args = parse(magic, words[:2])
    assert not isinstance(args, MagicHelp)
    return args, words[2] if len(words) > 2 else ""

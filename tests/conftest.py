"""Shared fixtures: the demo server in memory for the core's tests, real servers on real pipes and real HTTP on
127.0.0.1 for the transports' and end-to-end tests, waited on with deadlines."""

from __future__ import annotations

import base64
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from mcp import ClientSession
from purra.contracts import ToolPolicy
from purra_mcp import McpToolBinding, McpWriteToolBinding, discover_mcp_tools, discover_mcp_write_tools

import purra_jupyter as pj
from purra_jupyter._purra.bindings import call_limits
from purra_jupyter._purra.catalog import default_local_name
from purra_jupyter.demo import LISTENING_PREFIX

ROOT = Path(__file__).parent.parent
SERVERS = Path(__file__).parent / "servers"


# The parts of the suite that ``scripts/test --fast`` leaves out (each a marker, by module): real browsers, the Binder
# environment, the docs build and the published npm servers (a test of another module that uses one carries the
# marker itself). The rest is the core, the loop to run while working.
SLOW_PARTS = {
    "test_browser": "browser",
    "test_views": "browser",
    "test_binder": "binder",
    "test_docs": "docs",
    "test_published_servers": "published",
    "test_conformance": "published",  # the MCP conformance suite, from npm
}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the xdist_group markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the slow parts (``SLOW_PARTS``); with pytest-xdist (scripts/test runs two workers), the tests that use
    the Binder environment run on one worker, so that it is built once per run, not once per worker."""
    for item in items:
        part = SLOW_PARTS.get(item.path.stem)
        if part is not None:
            item.add_marker(getattr(pytest.mark, part))
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "binder_env" in getattr(item, "fixturenames", ()) or params.get("lab") == "lab-4.4-binder":
            item.add_marker(pytest.mark.binder)
            item.add_marker(pytest.mark.xdist_group("binder"))


RUN_STARTED = time.time()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """List the browser screenshots this run took in its log (before pytest's closing line)."""
    taken = (ROOT / "tests" / "artifacts" / "browser").glob("*.png")
    shots = sorted(shot for shot in taken if shot.stat().st_mtime >= RUN_STARTED)
    if shots:
        terminalreporter.write_sep("-", "browser screenshots")
        for shot in shots:
            terminalreporter.write_line(str(shot))


# The one bound a test puts on how long something takes: a guard against a hang, not a speed claim (how fast
# things are is measured in bench/). Generous, since the machine may be busy with other work: a wait for
# something that should take a second or two, or start a process, fails only after this long.
HANG_GUARD = 30.0  # seconds
BINDER_BUILD_GUARD = 900  # seconds: a hang guard for a test that may build the Binder environment (pip, postBuild)


def wait_until(condition: Callable[[], object], *, timeout: float = HANG_GUARD, what: str = "condition") -> object:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds (a deadline against a
    hang: a condition that holds ends the wait at once)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def stderr_after(session: pj.McpSession, prefix: str, *, what: str) -> str:
    """The rest of the first line of the server's stderr that starts with ``prefix``, once it came."""
    line = wait_until(
        lambda: next((line for line in session.stderr.splitlines() if line.startswith(prefix)), None), what=what
    )
    return str(line).removeprefix(prefix)


@contextmanager
def interrupt_when(condition: Callable[[], object], what: str) -> Iterator[list[float]]:
    """Send this process a SIGINT (what a kernel interrupt is) once ``condition`` holds; yields a list that
    then holds the moment it was sent."""
    sent_at: list[float] = []

    def watch() -> None:
        wait_until(condition, what=what)
        sent_at.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    watcher = threading.Thread(target=watch, name="interrupter")
    watcher.start()
    try:
        yield sent_at
    finally:
        watcher.join()


def descendants(widget: Any) -> Iterator[Any]:
    """``widget`` and every widget inside it (boxes' children)."""
    yield widget
    for child in getattr(widget, "children", ()) or ():
        yield from descendants(child)


def open_fds() -> set[tuple[int, str]]:
    """This process's open file descriptors, each with what it refers to (device and inode, and on Linux its
    name: a path, ``pipe:[...]``, ``socket:[...]``): an fd number closed and reused for something else counts as
    a new descriptor."""
    found = set()
    for name in os.listdir("/dev/fd"):
        fd = int(name)
        try:
            info = os.fstat(fd)
        except OSError:  # the listing's own descriptor, closed since
            continue
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = "?"
        found.add((fd, f"{target} (device {info.st_dev}, inode {info.st_ino})"))
    return found


def children() -> set[int]:
    """This process's live descendants (server processes), zombies and those gone while listed left out."""
    return {p.pid for p in psutil.Process().children(recursive=True) if _alive(p)}


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:  # it exited between the listing and this look
        return False


@pytest.fixture(scope="module")
def ip() -> Any:
    """The process's one IPython shell with the extension loaded (widget tests may have made it already)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.history_manager.enabled = False
    shell.run_line_magic("load_ext", "purra_jupyter")
    shell.user_ns["sys"] = sys
    shell.run_line_magic("config", 'McpMagics.approval = "prompt"')
    return shell


# --- untrusted text in HTML -----------------------------------------------------------------------------

_SAFE_TAGS = {"div", "b", "span", "code", "pre", "p", "table", "thead", "tbody", "tr", "th", "td", "small", "img",
              "ul", "li", "br", "i", "em", "strong", "details", "summary"}  # fmt: skip
_SAFE_ATTRIBUTES = {"style", "class", "alt", "src", "title"}  # title: inert text shown on hover (always escaped)


class Tokens(HTMLParser):
    """Every start tag (with its attributes), text run and comment of an HTML text, as a browser's tokenizer
    reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def tokens(html: str) -> Tokens:
    parser = Tokens()
    parser.feed(html)
    parser.close()
    return parser


def unsafe_markup(html: str, *, pandas: bool = False) -> list[str]:
    """What in ``html`` is not the kit's own inert markup: any tag or attribute outside a small allow-list,
    event handlers, ``javascript:`` in any attribute, and images that are not raster data URIs. ``pandas``
    also allows what a DataFrame's own HTML holds (a scoped style sheet, a table border)."""
    parser = tokens(html)
    found = [f"comment {text!r}" for text in parser.comments]
    tags, attributes = (_SAFE_TAGS | {"style"}, _SAFE_ATTRIBUTES | {"border", "scoped"}) if pandas else (
        _SAFE_TAGS, _SAFE_ATTRIBUTES)  # fmt: skip
    for tag, attrs in parser.tags:
        if tag not in tags:
            found.append(f"<{tag}>")
        for name, value in attrs.items():
            if name not in attributes or name.startswith("on"):
                found.append(f"<{tag} {name}>")
            if value and "javascript:" in value.replace(" ", "").lower():
                found.append(f"<{tag} {name}={value!r}>")
        if tag == "img":
            src = attrs.get("src") or ""
            head, _, data = src.partition(";base64,")
            if head not in {"data:image/png", "data:image/jpeg", "data:image/gif", "data:image/webp"}:
                found.append(f"<img src={src[:80]!r}>")
            else:
                try:
                    base64.b64decode(data, validate=True)
                except ValueError:
                    found.append(f"<img src={src[:80]!r}> (not base64)")
    return found


def assert_safe(html: str, *payloads: str, pandas: bool = False) -> None:
    """``html`` carries no live markup, and each payload shows as escaped text."""
    assert unsafe_markup(html, pandas=pandas) == [], html[:3000]
    for payload in payloads:
        assert escape(payload) in html or escape(payload, quote=False) in html, (payload, html[:3000])


@contextmanager
def plan_argument(plan: dict[str, Any], *, inline_below: int = 100_000) -> Iterator[str]:
    """A test server's plan as its argument: its JSON when shorter than ``inline_below`` characters, else ``@FILE``
    (a long plan is too long for a command line; a file also keeps a hostile plan out of the command line shown)."""
    text = json.dumps(plan)
    if len(text) < inline_below:
        yield text
        return
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "plan.json"
        path.write_text(text)
        yield f"@{path}"


def demo_config(name: str = "demo", **kwargs: object) -> pj.ServerConfig:
    return pj.ServerConfig(name, command=sys.executable, args=["-m", "purra_jupyter.demo"], **kwargs)


def demo_in_memory(name: str = "demo") -> pj.ServerConfig:
    """The demo server for a test of the core: a fresh server object in this process, reached in memory (what is
    tested is the kit, not a pipe)."""
    from purra_jupyter.demo.server import build_server

    return pj.ServerConfig(name, server=build_server())


def server_said(session: pj.McpSession) -> str:
    """What the in-memory demo server of ``session`` wrote on stderr so far (its own record: ``DemoServer.said``)."""
    from purra_jupyter.demo.server import DemoServer

    server = session.config.server
    assert isinstance(server, DemoServer), "a demo server object, reached in memory"
    return "\n".join(server.said)


# --- the demo server's notes, and a person's decision on a pending call -------------------------------


def notes(session: pj.McpSession) -> list[dict[str, str]]:
    """The demo server's notes, read through the raw SDK client (not the kit's call path)."""
    return session.connection.request(lambda client: client.call_tool("list_notes", {})).structuredContent["notes"]


def bind_notes(session: pj.McpSession) -> None:
    """Bind the demo server's notes tools as writes: ``add_note`` a write, ``delete_note`` a destructive one."""
    session.bind("add_note", effect="write", scope_validator=pj.allow_any_scope)
    session.bind("delete_note", effect="destructive", scope_validator=pj.allow_any_scope, scope_id="notes")


def decided(pending: Any, button: str) -> Any:
    """Click ``button`` (approve, deny) on a pending call's widget; its result once it settled."""
    getattr(pending.widget, f"{button}_button").click()
    wait_until(lambda: pending.state in ("done", "denied", "void"), what=f"the call to settle after {button}")
    return pending.result


# --- what purra-mcp itself decides on a session's connection: what the kit is held equal to --------------


def read_binding(remote: str, **kwargs: Any) -> McpToolBinding:
    return McpToolBinding(default_local_name(remote), ToolPolicy(mode="read", title=remote, risk_level="read"), None,
                          **kwargs)  # fmt: skip


def purra_refusal(session: pj.McpSession, tool: str) -> str | None:
    """The code purra-mcp itself refuses to bind ``tool`` with on this session's connection, or ``None`` when it
    binds it (independent of our bind code)."""

    async def discover(client: ClientSession) -> Any:
        return await discover_mcp_tools(client, session.name, {tool: read_binding(tool)}, monitor=session.monitor,
                                        limits=session.limits)  # fmt: skip

    try:
        session.connection.request(discover)
    except pj.McpSessionError as error:
        assert error.code in {"mcp_schema_unsupported", "mcp_tool_unsupported", "mcp_catalog_limit_exceeded",
                              "mcp_binding_invalid"}, error  # fmt: skip
        return error.code
    return None


def assert_verdicts_match_purra(session: pj.McpSession) -> None:
    """Each tool of the session's catalog is callable exactly when purra-mcp binds it, refused with its code."""
    for tool in session.catalog.tools:
        refusal = purra_refusal(session, tool.name)
        assert (tool.callable, tool.refusal) == (refusal is None, refusal), tool.name
        assert bool(tool.reasons) == (not tool.callable), tool.name


def discovered_by_purra(session: pj.McpSession) -> Any:
    """purra-mcp's ``discover_mcp_write_tools`` for the same write bindings as the session's (each rebuilt from its
    snapshot entry: local name, effect, identity), called directly on the session's client."""
    bindings = {
        entry["remoteName"]: McpWriteToolBinding(
            entry["localName"],
            ToolPolicy(mode="confirm", title=entry["policy"]["title"], risk_level=entry["authorization"]["effect"]),
            pj.allow_any_scope,
            entry["authorization"]["bindingId"],
            entry["authorization"]["bindingRevision"],
            entry["authorization"]["scopeId"],
            entry["authorization"]["scopeRevision"],
            entry["authorization"]["effect"],
        )
        for entry in session.write_bindings["entries"]
    }
    return session.connection.request(
        lambda client: discover_mcp_write_tools(
            client, session.name, bindings, monitor=session.monitor, limits=call_limits(session.limits)
        )
    )


def raw_config(name: str, *args: str, **kwargs: object) -> pj.ServerConfig:
    return pj.ServerConfig(name, command=sys.executable, args=[str(SERVERS / "raw_server.py"), *args], **kwargs)


@dataclass
class DemoHttpServer:
    """The demo server as a process on an ephemeral loopback port; its stderr is pumped into a queue."""

    process: subprocess.Popen[str]
    url: str
    stderr_lines: queue.Queue[str | None]
    seen: list[str] = field(default_factory=list)

    def stderr_so_far(self) -> str:
        """Everything it has written to stderr up to now."""
        while True:
            try:
                line = self.stderr_lines.get_nowait()
            except queue.Empty:
                break
            if line is None:
                self.stderr_lines.put(None)  # it ended: keep saying so
                break
            self.seen.append(line)
        return "".join(self.seen)

    def stderr_rest(self, timeout: float = 20.0) -> str:
        """Everything it writes to stderr until it exits (within ``timeout`` seconds per line)."""
        while True:
            try:
                line = self.stderr_lines.get(timeout=timeout)
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
        return "".join(self.seen)


def stop_tree(process: subprocess.Popen[bytes], *, timeout: float) -> None:
    """Terminate ``process`` (JupyterLab shuts its kernels down on SIGTERM), then kill any descendant left."""
    try:
        descendants = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        descendants = []
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout)
    _, alive = psutil.wait_procs(descendants, timeout=5)
    for leftover in alive:
        try:
            leftover.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)


@contextmanager
def untrusted_server(
    transport: str,
    name: str,
    plan: str,
    *,
    env: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    **options: Any,
) -> Iterator[pj.ServerConfig]:
    """tests/servers/untrusted_server.py with ``plan`` (its argument: JSON, or ``@FILE``) over ``transport``: its
    config (stdio, with ``env``), or its config once it listens on 127.0.0.1 (HTTP, with ``headers``); the server ends
    with the block."""
    server = str(SERVERS / "untrusted_server.py")
    if transport == "stdio":
        yield pj.ServerConfig(name, command=sys.executable, args=[server, plan], env=env, **options)
        return
    process = subprocess.Popen(
        [sys.executable, server, plan, "--http"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert line.startswith("listening on "), line
        yield pj.ServerConfig(name, url=line.split()[-1], headers=headers, **options)
    finally:
        stop_tree(process, timeout=10)
        assert process.stdout is not None
        process.stdout.close()


def _pump(stream: Any, sink: queue.Queue[str | None]) -> None:
    for line in stream:
        sink.put(line)
    sink.put(None)


@contextmanager
def demo_http(timeout: float = 30.0) -> Iterator[DemoHttpServer]:
    process = subprocess.Popen(
        [sys.executable, "-m", "purra_jupyter.demo", "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(process.stderr, lines), daemon=True).start()
    try:
        deadline = time.monotonic() + timeout
        url = None
        while url is None:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail("the HTTP demo server did not report its URL in time")
            if line is None:
                pytest.fail(f"the HTTP demo server exited early with code {process.wait(timeout)}")
            if line.startswith(LISTENING_PREFIX):
                url = line[len(LISTENING_PREFIX) :].strip()
        yield DemoHttpServer(process, url, lines)
    finally:
        stop_tree(process, timeout=timeout)


@pytest.fixture
def demo_http_server() -> Iterator[DemoHttpServer]:
    with demo_http() as server:
        yield server


@pytest.fixture(scope="module")
def demo_http_url() -> Iterator[str]:
    with demo_http() as server:
        yield server.url


@pytest.fixture(autouse=True)
def _no_session_left_open() -> Iterator[None]:
    yield
    left = pj.sessions()
    for session in left:
        session.close("test cleanup")
    assert not left, f"a test left sessions open: {left}"


@dataclass
class BinderEnv:
    """A virtual environment built only from binder/ (requirements, then postBuild), as repo2docker does."""

    venv: Path
    post_build_output: str = ""

    def run(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``program`` (this environment's own, else from PATH) in the repository root, with this environment
        first on PATH; fail the test on a non-zero exit."""
        own = self.venv / "bin" / program
        env = {
            **os.environ,
            "PATH": f"{self.venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "VIRTUAL_ENV": str(self.venv),
        }
        env.pop("PYTHONPATH", None)
        command = [str(own) if own.exists() else program, *args]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done


@pytest.fixture(scope="session")
def binder_env(tmp_path_factory: pytest.TempPathFactory) -> BinderEnv:
    """Built once per test run: the Binder test and the JupyterLab 4.4 browser test share it."""
    env = BinderEnv(tmp_path_factory.mktemp("binder") / "env")
    subprocess.run([sys.executable, "-m", "venv", str(env.venv)], check=True)
    env.run("python", "-m", "pip", "install", "--quiet", "-r", "binder/requirements.txt")
    built = env.run("bash", "binder/postBuild")
    env.post_build_output = built.stdout + built.stderr
    return env


def execute_notebook(source: Path, target: Path) -> None:
    """Run ``source`` on a real kernel as ``scripts/demo --execute`` does, writing the executed copy to ``target``."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "execute_notebook.py"), str(source), str(target)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr


@dataclass(frozen=True)
class OAuthServer:
    """tests/servers/oauth_server.py: the demo server behind the SDK's authorization server, on 127.0.0.1."""

    url: str  # the MCP endpoint
    secrets: Path  # every code, token and client secret it issued, one per line
    process: subprocess.Popen[bytes]

    def events(self) -> dict[str, int]:
        return httpx.get(self.url.replace("/mcp", "/_events"), timeout=10).json()

    def issued(self) -> list[str]:
        return self.secrets.read_text().split() if self.secrets.exists() else []


@contextmanager
def oauth_server(directory: Path, *flags: str) -> Iterator[OAuthServer]:
    secrets = directory / "issued-secrets.txt"
    script = Path(__file__).parent / "servers" / "oauth_server.py"
    process = subprocess.Popen(
        [sys.executable, str(script), "--secrets", str(secrets), *flags],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    line = process.stdout.readline().decode()
    try:
        assert line.startswith("listening on http://127.0.0.1:"), line
        yield OAuthServer(line.split()[-1], secrets, process)
    finally:
        stop_tree(process, timeout=10)


def follow_authorization(url: str) -> str:
    """What a browser does with the authorization URL of the test server (which consents at once): the address
    it is sent back to, not followed."""
    response = httpx.get(url, follow_redirects=False, timeout=10)
    assert response.status_code in (302, 307), (response.status_code, response.text[:200])
    return response.headers["location"]


@pytest.fixture
def kernel() -> Iterator[tuple[Any, Any]]:
    """A real IPython kernel (manager, blocking client), shut down after the test."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        yield manager, client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


class KernelCell:
    """One execution, read as it goes: its outputs, the kernel's input requests, its end."""

    def __init__(self, client: Any, code: str) -> None:
        self.client = client
        self.msg_id = client.execute(code, allow_stdin=True)
        self.messages: list[dict] = []
        self.prompts: list[dict] = []
        self.done = False

    def pump(self) -> None:
        while True:
            try:
                message = self.client.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                break
            if message["parent_header"].get("msg_id") != self.msg_id:
                continue
            self.messages.append(message)
            if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                self.done = True
        while True:
            try:
                self.prompts.append(self.client.get_stdin_msg(timeout=0.01)["content"])
            except queue.Empty:
                break

    def texts(self) -> list[str]:
        return [m["content"]["data"].get("text/plain", "") for m in self.messages if "data" in m["content"]]

    def prompted(self, timeout: float = 30) -> dict:
        wait_until(lambda: self.pump() or self.prompts, timeout=timeout, what="the kernel's input box")
        return self.prompts[-1]

    def finish(self, timeout: float = 60) -> KernelCell:
        wait_until(lambda: self.pump() or self.done, timeout=timeout, what="the cell's end")
        return self

    def errors(self) -> list[str]:
        return [f"{m['content']['ename']}: {m['content']['evalue']}" for m in self.messages if m["msg_type"] == "error"]

    def result(self) -> str:
        [value] = [m["content"]["data"]["text/plain"] for m in self.messages if m["msg_type"] == "execute_result"]
        return value


def _plain(value: Any) -> Any:
    """``value`` with every ``str`` subclass (the kit's ``CellText``, in an assertion's values) a plain ``str``."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_plain(item) for item in value)
    return value


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(config: pytest.Config, report: Any) -> Any:
    """A report as pytest-xdist sends it from a worker, in plain types: execnet refuses a ``str`` subclass, and a
    failing test whose assertion shows kit text became an INTERNALERROR that ended the worker and hid the failure."""
    serialized = yield
    return _plain(serialized)

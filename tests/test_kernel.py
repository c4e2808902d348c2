"""The session in a real IPython kernel: cells share it, and a kernel interrupt abandons only the wait."""

from __future__ import annotations

import queue
import time
from pathlib import Path

import pytest
from conftest import HANG_GUARD, demo_config, wait_until
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager


def run_cell(client: BlockingKernelClient, code: str, *, timeout: float = 60) -> list[dict]:
    """Execute ``code``; return its iopub messages once the kernel is idle again."""
    msg_id = client.execute(code)
    return collect(client, msg_id, timeout=timeout)


def collect(client: BlockingKernelClient, msg_id: str, *, timeout: float) -> list[dict]:
    messages = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            message = client.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            break
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(message)
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return messages
    raise AssertionError(f"cell did not finish within {timeout} s")


def errors(messages: list[dict]) -> list[dict]:
    return [m["content"] for m in messages if m["msg_type"] == "error"]


def results(messages: list[dict]) -> list[str]:
    return [m["content"]["data"]["text/plain"] for m in messages if m["msg_type"] == "execute_result"]


def results_of(client: BlockingKernelClient, code: str) -> list[str]:
    """Run ``code``, which must raise nothing; its results."""
    messages = run_cell(client, code)
    assert not errors(messages), errors(messages)
    return results(messages)


OPEN_DEMO = (
    "import sys, threading, time, pathlib\n"
    "import purra_jupyter as pj\n"
    "s = pj.connect(pj.ServerConfig('demo', command=sys.executable, args=['-m', 'purra_jupyter.demo']))\n"
    f"def until(condition, what, seconds={HANG_GUARD}):\n"  # a wait with a deadline (against a hang), in the kernel
    "    deadline = time.monotonic() + seconds\n"
    "    while not condition():\n"
    "        assert time.monotonic() < deadline, what\n"
    "        time.sleep(0.05)\n"
)


def open_demo(client: BlockingKernelClient, setup: str = "") -> None:
    """A session ``s`` on the demo server, in the kernel (and ``setup`` run after it)."""
    opened = run_cell(client, OPEN_DEMO + setup + "s.state")
    assert not errors(opened) and results(opened) == ["'ready'"]


def interrupted(kernel: tuple[KernelManager, BlockingKernelClient], marker: Path, logged: str, cell: str) -> list[dict]:
    """Run ``cell`` and interrupt the kernel once the server's stderr shows ``logged`` (the request is in flight:
    a watcher thread in the cell marks the moment); the cell's messages. That the interrupt, not the server,
    ended the wait is told by what the cell got; the wait for its end is bounded against a hang only."""
    manager, client = kernel
    msg_id = client.execute(
        "def mark():\n"
        f"    while {logged!r} not in s.stderr:\n"
        "        time.sleep(0.01)\n"
        f"    pathlib.Path({str(marker)!r}).touch()\n"
        "threading.Thread(target=mark, daemon=True).start()\n" + cell
    )
    wait_until(marker.exists, what=f"the server to log {logged!r}")
    manager.interrupt_kernel()
    return collect(client, msg_id, timeout=HANG_GUARD)


def test_kernel_interrupt_during_a_slow_read_returns_mcp_interrupted_and_the_session_survives(
    kernel: tuple[KernelManager, BlockingKernelClient], tmp_path: Path
) -> None:
    """The interrupt rule for a read (docs/faults.md): the cell gets the call's result, ``mcp_interrupted``."""
    client = kernel[1]
    open_demo(client, "changes = []\ns.observe(lambda change: changes.append(change['new']), names='state')\n")
    messages = interrupted(
        kernel,
        tmp_path / "sleeping",
        "sleep: 30",
        "e = s.call('sleep', {'seconds': 30}, approve=True, timeout=60)\ne.error_code, e.effect_state, e.to_dict()\n",
    )
    assert not errors(messages), errors(messages)  # the interrupt ended the wait, not the server's 30 s
    assert results(messages) == ["('mcp_interrupted', 'not_started', {'text': [], 'structured': None})"]

    # The server was told to cancel; its late answer is discarded, and the session holds after it: ``changes``
    # holds every state change since the session was ready, and a ping answered after the late answer shows that
    # nothing the server sent before it is still to be handled.
    late = run_cell(
        client,
        "until(lambda: any('discarded' in row.detail for row in s.log.events('cancel')), 'no late answer')\n"
        "until(lambda: 'sleep: cancelled' in s.stderr, 'the server did not stop')\n"
        "pinged = s.ping() >= 0\n"
        "'sleep: cancelled' in s.stderr, pinged, s.state, changes",
    )
    assert not errors(late), errors(late)
    assert results(late) == ["(True, True, 'ready', [])"]
    assert results_of(client, "s.state, s.call('echo', {'text': 'ok'}, approve=True).structured") == [
        "('ready', {'text': 'ok'})"
    ]
    closed = run_cell(client, "s.close(); s.state, pj.sessions()")
    assert results(closed) == ["('closed', [])"]


def test_kernel_interrupt_during_a_slow_write_returns_its_unknown_effect_and_the_session_survives(
    kernel: tuple[KernelManager, BlockingKernelClient], tmp_path: Path
) -> None:
    """A write interrupted after it was sent is not an error: the cell shows its result, ``mcp_canceled`` with
    ``effect_state`` unknown, which says the write may have happened."""
    client = kernel[1]
    open_demo(client, "s.bind('add_note', effect='write', scope_validator=pj.allow_any_scope)\n")
    messages = interrupted(
        kernel,
        tmp_path / "writing",
        "add_note: waiting 30",
        "e = s.call('add_note', {'text': 'slow', 'delay_seconds': 30}, approve=True, timeout=60)\n"
        "e.error_code, e.effect_state, e.to_dict()\n",
    )
    assert not errors(messages), errors(messages)
    assert results(messages) == ["('mcp_canceled', 'unknown', {'text': [], 'structured': None})"]
    after = results_of(
        client,
        "until(lambda: 'add_note: cancelled before storing' in s.stderr, 'the server did not stop the write')\n"
        "s.state, s.call('add_note', {'text': 'next'}, approve=True).effect_state",
    )
    assert after == ["('ready', 'committed')"]


def test_load_ext_warms_the_sdk_in_the_background_without_a_cell_importing_it(
    kernel: tuple[KernelManager, BlockingKernelClient],
) -> None:
    """The warm-up is started by ``%load_ext`` and brings ``mcp`` in while the kernel waits for nothing: the
    cells only read ``sys.modules``."""
    client = kernel[1]
    assert results_of(client, "import sys, threading, time\n'mcp' in sys.modules") == ["False"]
    loaded = results_of(
        client,
        "%load_ext purra_jupyter\n"
        "any(t.name == 'purra-jupyter-warm-up' and t.is_alive() for t in threading.enumerate())",
    )
    assert loaded == ["True"]  # the cell ended while the warm-up still ran
    warmed = results_of(
        client,
        "deadline = time.monotonic() + 60\n"
        "while 'mcp.client.session' not in sys.modules or 'purra_mcp' not in sys.modules:\n"
        "    assert time.monotonic() < deadline, 'the warm-up did not import the SDK'\n"
        "    time.sleep(0.05)\n"
        "sorted(name for name in ('mcp', 'mcp.client.session', 'purra_mcp') if name in sys.modules)",
    )
    assert warmed == ["['mcp', 'mcp.client.session', 'purra_mcp']"]


def test_a_connect_while_the_warm_up_runs_waits_for_it_and_works(
    kernel: tuple[KernelManager, BlockingKernelClient],
) -> None:
    client = kernel[1]
    connected = results_of(
        client,
        "%load_ext purra_jupyter\n"
        "import sys, threading\n"
        "import purra_jupyter as pj\n"
        "warming = any(t.name == 'purra-jupyter-warm-up' and t.is_alive() for t in threading.enumerate())\n"
        "s = pj.connect(pj.ServerConfig('demo', command=sys.executable, args=['-m', 'purra_jupyter.demo']))\n"
        "(warming, s.state, s.call('echo', {'text': 'hi'}, approve=True).structured)",
    )
    assert connected == ["(True, 'ready', {'text': 'hi'})"]


def test_a_failed_warm_up_is_logged_and_the_connect_imports_as_before(caplog: pytest.LogCaptureFixture) -> None:
    from purra_jupyter._session.opening import warm_up

    with caplog.at_level("WARNING", logger="purra_jupyter"):
        warm_up(("purra_jupyter_no_such_module", "mcp")).join(timeout=60)
    [record] = [r for r in caplog.records if r.name == "purra_jupyter"]
    assert "importing purra_jupyter_no_such_module failed (ModuleNotFoundError" in record.getMessage()
    assert "the first connect imports it" in record.getMessage()
    import purra_jupyter as pj

    with pj.connect(demo_config()) as session:
        assert session.state == "ready"


def test_kernel_interrupt_during_a_batch_returns_its_table_and_the_session_survives(
    kernel: tuple[KernelManager, BlockingKernelClient], tmp_path: Path
) -> None:
    """The interrupt rule for a batch: the cell gets the table; finished rows keep their results, rows in flight
    were cancelled on the server, rows never sent say ``mcp_interrupted``."""
    client = kernel[1]
    open_demo(client, "s.bind('sleep', concurrency_safe=True)\n")
    messages = interrupted(
        kernel,
        tmp_path / "batch",
        "sleep: 30",
        "rows = [{'seconds': 0}, {'seconds': 0}, {'seconds': 30}, {'seconds': 30}, {'seconds': 30}]\n"
        "df = s.evaluate('sleep', rows, approve=True, concurrency=2)\n"
        "print(*df['error_code'].fillna('ok'))\n"
        "print(*df['elapsed_ms'].isna())\n",
    )
    assert not errors(messages), errors(messages)
    printed = [m["content"]["text"] for m in messages if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"]
    *bar, codes, never_sent = "".join(printed).replace("\r", "\n").splitlines()  # the batch's text bar first
    assert "100%" not in codes and bar, printed
    assert codes.split() == ["ok", "ok", "mcp_interrupted", "mcp_interrupted", "mcp_interrupted"]
    assert never_sent.split() == ["False", "False", "False", "False", "True"]  # the last row was never sent
    after = results_of(
        client,
        "until(lambda: 'sleep: cancelled' in s.stderr, 'the server did not hear of the cancellation')\n"
        "s.state, s.call('echo', {'text': 'ok'}, approve=True).structured",
    )
    assert after == ["('ready', {'text': 'ok'})"]


LEFT_BEHIND = OPEN_DEMO + (
    "import psutil\n"
    "from ipywidgets.widgets.widget import _instances\n"
    "s.bind('echo')\n"
    "before = len(_instances)\n"
    "for i in range(40):\n"
    "    pending = s.call('echo', {'text': f'call {i}'})\n"
    "    display(pending)\n"
    "    pending.approve()\n"
    "    assert pending.wait().ok\n"
    "widgets_left = len(_instances) - before\n"
    "mine = {p.pid for p in psutil.Process().children(recursive=True)}\n"
    "pool = pj.ServerConfig('pool', command=sys.executable, args=['-m', 'purra_jupyter.demo'])\n"
    "batch = pj.evaluate(pool, 'echo', [{'text': str(i)} for i in range(6)], sessions=2)\n"
    "servers = {p.pid for p in psutil.Process().children(recursive=True)} - mine\n"
    "batch.approve()\n"
    "frame = batch.wait()\n"
    "def alive(pids):\n"
    "    return [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]\n"
    "until(lambda: not alive(servers), 'the servers of the batch to end')\n"
    "(widgets_left, len(servers), len(frame), alive(servers))"
)


def test_decided_calls_and_a_settled_pool_leave_no_widget_and_no_process_behind(
    kernel: tuple[KernelManager, BlockingKernelClient],
) -> None:
    """40 prompted calls, each decided: at most 10 more live widgets than before (each approval's ~27 closed once its
    record took its place); a prompted ``pj.evaluate(..., sessions=2)``, once approved and settled: none of its two
    server processes is left."""
    _, client = kernel
    [shown] = results_of(client, LEFT_BEHIND)
    widgets_left, servers, rows, alive = eval(shown)
    assert widgets_left <= 10, shown
    assert servers >= 2 and rows == 6 and alive == [], shown


def run_in_cell(client: BlockingKernelClient, code: str, cell_id: str) -> list[dict]:
    """Execute ``code`` as the cell ``cell_id`` (a frontend sends the cell's id in the request's metadata)."""
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False}
    message = client.session.msg("execute_request", content, metadata={"cellId": cell_id})
    client.shell_channel.send(message)
    return collect(client, message["header"]["msg_id"], timeout=60)


def test_an_undecided_approval_is_denied_when_its_cell_runs_again(
    kernel: tuple[KernelManager, BlockingKernelClient],
) -> None:
    """Run again, a cell's approval that nobody decided is denied (nothing sent), its widgets closed and its session
    no longer holding it; two approvals of one run of a cell both stay; another cell's stays."""
    _, client = kernel
    open_demo(client, "calls = []\nfrom ipywidgets.widgets.widget import _instances\n")
    ask = "p = s.call('echo', {'text': 'x'})\ncalls.append(p)\ndisplay(p)\n"
    assert not errors(run_in_cell(client, ask + ask, "cell-a"))  # two approvals in one run of cell a
    assert not errors(run_in_cell(client, ask, "cell-b"))
    before = eval(results_of(client, "len(_instances)")[0])
    assert not errors(run_in_cell(client, ask, "cell-a"))  # cell a again
    [states] = results_of(client, "until(lambda: calls[0].state == 'denied', 'the denial'); [c.state for c in calls]")
    assert eval(states) == ["denied", "denied", "pending", "pending"], states
    [how] = results_of(client, "calls[0].decision.how")
    assert how == "'its cell ran again before anyone decided'", how
    after = eval(results_of(client, "len(_instances)")[0])
    assert after <= before, (before, after)  # the new approval's widgets, the two old ones' closed

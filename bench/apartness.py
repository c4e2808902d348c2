"""``apartness``: one server's cost is its own. A bystander session's call latency, quiet and while another session
of the same kernel floods the shared loop at the bounds of what a server may send unasked (``_transports/ingress.py``).

The bystander is the demo server over stdio, called ``echo`` on the PurrA path (``s.call(..., approve=True)``), back to
back, from the main thread as a notebook cell does; each call is timed on its own. The hostile session is
``tests/servers/untrusted_server.py`` over stdio, with a secret in its config (so the kit scrubs every value of every
message it admits: the costly case). In a flooded block it runs a call of its own that sends, meanwhile, at about
``SHARE`` of the session's rate (by the ingress' weights):

- ``bounds``: messages of ``UNASKED_BYTES`` bytes holding ``UNASKED_VALUES`` values each (empty objects, the
  costliest value to parse, scrub and validate): three log notifications, then a sampling request (answered by a
  function, so it goes the whole question path), and again;
- ``small``: log notifications of 200 bytes, as many a second as the rate allows (past the flood budget's 1,000 a
  second they are dropped unread; the server's sleeps may send fewer).

The blocks alternate, quiet first and the order rotating every round. Last, a fresh hostile session does what the
issue found: five log notifications of 16 MiB of ``[{},{},…]`` and an elicitation of 16 MiB (each over the bound of
one message, dropped unread; past the burst the session fails, ``mcp_flood_limit_exceeded``), while the bystander is
timed again. Printed beside each other: the bystander's p50 and p99 in each block kind, what the hostile sessions
sent and how they ended, and the process's peak RSS (``ru_maxrss``) before the first flood and at the end.

Target (issue 55): every flooded p99 within 2x the quiet p99, or the quiet p99 + 50 ms, the larger; the headline is
the largest flooded p99 over that allowance.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

from .common import DEMO_ARGS, ROOT, Result, median, percentile, rotated

UNTRUSTED = ROOT / "tests" / "servers" / "untrusted_server.py"
TARGET = "<= 1"  # the largest flooded p99 over its allowance: max(2 x quiet p99, quiet p99 + 50 ms)
SHARE = 0.9  # of the session's rate a flood uses (the rest is the timing's slack)
SMALL_BYTES = 200
ARGUMENTS = {"text": "hi"}
PLAN = {"tools": [{"name": "flood", "inputSchema": {"type": "object"}}], "calls": {"flood": "unasked"}}
SECRET = {"env": {"BENCH_SECRET": "b3nch-s3cret"}, "secret_env": ["BENCH_SECRET"]}


def peak_rss_mib() -> float:
    """The process's peak resident memory so far (Linux reports ``ru_maxrss`` in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def flood_arguments(kind: str, seconds: float) -> dict[str, Any]:
    """The hostile call of one flooded block of ``kind`` (``bounds`` or ``small``; see the module's docstring)."""
    from purra_jupyter._transports import ingress

    rate = SHARE * ingress.UNASKED_RATE
    if kind == "bounds":
        # Empty objects, each counted with its comma: two of the values the ingress counts.
        size, objects = ingress.UNASKED_BYTES - 64, (ingress.UNASKED_VALUES - 64) // 2
        weight = size + ingress.VALUE_WEIGHT * 2 * objects + ingress.MESSAGE_WEIGHT
        kinds: str | list[str] = ["log", "log", "log", "sampling"]
    else:
        size, objects, kinds = SMALL_BYTES, 0, "log"
        handed_on = ingress.FLOOD_RATE * (size + 5 * ingress.VALUE_WEIGHT + ingress.MESSAGE_WEIGHT)
        weight = size + ingress.READ_WEIGHT  # (past the flood budget: dropped unread)
        rate -= handed_on
    every = weight / rate
    return {"kind": kinds, "bytes": size, "values": objects, "every": every, "seconds": seconds, "count": 0}


def finding_arguments(quick: bool) -> dict[str, Any]:
    """What the issue found: log notifications of 16 MiB of empty objects, then an elicitation as large (within the
    transport's bound of one message: over it a stdio session fails at once, another rule)."""
    size = ((4 if quick else 16) << 20) - 1024
    return {"kind": ["log"] * 5 + ["elicit"], "bytes": size, "values": (size - 1024) // 4, "count": 6, "wait": 1}


def sampled(params: dict[str, Any]) -> dict[str, Any]:
    """The hostile session's sampling answer (a function: no person in a bench)."""
    return {"role": "assistant", "content": {"type": "text", "text": "no"}, "model": "bench"}


def run(quick: bool) -> Result:
    import purra_jupyter as pj

    rounds, seconds = (1, 1.0) if quick else (3, 6.0)
    bystander_config = pj.ServerConfig("bystander", command=sys.executable, args=DEMO_ARGS)
    hostile_args = [str(UNTRUSTED), json.dumps(PLAN)]
    hostile_config = pj.ServerConfig("hostile", command=sys.executable, args=hostile_args, timeout=60, **SECRET)
    samples: dict[str, list[float]] = {"quiet": [], "bounds": [], "small": [], "finding": []}
    sent: dict[str, Any] = {"bounds": 0, "questions": 0, "answered": 0, "small": 0}
    with pj.connect(bystander_config) as bystander, pj.connect(hostile_config, sampling=sampled) as hostile:
        assert bystander.call("echo", ARGUMENTS, approve=True).ok  # binds echo: not part of the steady cost
        timed_calls(bystander, counted(20))
        peak_before = peak_rss_mib()

        def quiet() -> None:
            ends = time.monotonic() + seconds
            samples["quiet"].extend(timed_calls(bystander, lambda: time.monotonic() < ends))

        def flooded(kind: str) -> Callable[[], None]:
            def block() -> None:
                said = during(hostile, flood_arguments(kind, seconds), bystander, samples[kind])
                answers = said["answers"].values()
                sent[kind] += said["sent"] - len(answers)
                sent["questions"] += len(answers)
                sent["answered"] += sum(answer is not None for answer in answers)

            return block

        sides = {"quiet": quiet, "bounds": flooded("bounds"), "small": flooded("small")}
        for index in range(rounds):
            for name in rotated(list(sides), index):
                sides[name]()
        sent["hostile"] = hostile.state
        finding_config = pj.ServerConfig("finding", command=sys.executable, args=hostile_args, timeout=60, **SECRET)
        with pj.connect(finding_config) as finding:
            during(finding, finding_arguments(quick), bystander, samples["finding"])
            sent["finding"] = f"{finding.state} ({finding.cause})"
    return summarized(samples, sent, peak_before, peak_rss_mib(), rounds, seconds)


def counted(calls: int) -> Callable[[], bool]:
    left = iter(range(calls))
    return lambda: next(left, None) is not None


def during(hostile: Any, arguments: dict[str, Any], bystander: Any, samples: list[float]) -> Any:
    """Time the bystander's calls while ``hostile`` runs its flood call with ``arguments``; what the call answered
    (``{}`` when it failed: the session ended)."""
    call = hostile.call("flood", arguments, raw=True)
    call.approve()
    samples.extend(timed_calls(bystander, lambda: call.state != "done"))
    return json.loads(call.result.content[0]["text"]) if call.result.ok else {"sent": 0, "answers": {}}


def timed_calls(session: Any, going: Callable[[], bool]) -> list[float]:
    """Milliseconds of each ``echo`` call of ``session`` while ``going()`` (at least one)."""
    out = []
    while going() or not out:
        started = time.perf_counter()
        result = session.call("echo", ARGUMENTS, approve=True)
        out.append((time.perf_counter() - started) * 1000)
        assert result.ok, result
    return out


def summarized(
    samples: dict[str, list[float]], sent: dict[str, Any], peak_before: float, peak_after: float, rounds: int,
    seconds: float,
) -> Result:  # fmt: skip
    from purra_jupyter._transports import ingress

    quiet = samples["quiet"]
    q50, q99 = median(quiet), percentile(quiet, 0.99)
    allowance = max(2 * q99, q99 + 50)
    flooded = {kind: percentile(samples[kind], 0.99) for kind in ("bounds", "small", "finding")}
    worst = max(flooded.values())
    ratio = worst / allowance
    rows = [f"{'quiet':>8}: {len(quiet):5} calls, p50 {q50:7.2f} ms, p99 {q99:7.2f} ms"] + [
        f"{kind:>8}: {len(samples[kind]):5} calls, p50 {median(samples[kind]):7.2f} ms, p99 {flooded[kind]:7.2f} ms"
        for kind in flooded
    ]
    return Result(
        scenario="apartness",
        metric="bystander's worst flooded p99 / max(2 x quiet p99, quiet p99 + 50 ms)",
        ratio=ratio,
        target=TARGET,
        target_met=ratio <= 1 and sent["hostile"] == "ready",
        summary=f"{ratio:.3f} (p99 {q99:.1f} ms quiet, {worst:.1f} ms flooded)",
        human=[
            f"{rounds} rounds of a quiet, a bounds and a small block of {seconds:g} s, then the finding; the hostile "
            f"session sent at about {SHARE:.0%} of {ingress.UNASKED_RATE / 2**20:g} MiB a second: {sent['bounds']} "
            f"log notifications and {sent['questions']} sampling requests ({sent['answered']} answered) of "
            f"{ingress.UNASKED_BYTES} bytes and {ingress.UNASKED_VALUES} values (less 64 each), and {sent['small']} "
            f"log notifications of {SMALL_BYTES} bytes; it ended {sent['hostile']}. The finding's session ended "
            f"{sent['finding']}",
            f"bystander echo calls (allowance of a flooded p99: {allowance:.2f} ms)",
            *rows,
            f"peak RSS of this process: {peak_before:.0f} MiB before the first flood, {peak_after:.0f} MiB at the end",
        ],
        extra={
            "quiet_p50_ms": q50,
            "quiet_p99_ms": q99,
            **{f"{kind}_p50_ms": median(samples[kind]) for kind in flooded},
            **{f"{kind}_p99_ms": flooded[kind] for kind in flooded},
            "allowance_ms": allowance,
            **{f"{kind}_calls": len(samples[kind]) for kind in samples},
            "hostile_sent": {key: sent[key] for key in ("bounds", "questions", "answered", "small")},
            "hostile_state": sent["hostile"],
            "finding_state": sent["finding"],
            "peak_rss_before_mib": peak_before,
            "peak_rss_after_mib": peak_after,
        },
    )

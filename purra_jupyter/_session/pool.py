"""An evaluation that scales: one batch over several sessions of a server (``sessions=N``), and past one process,
the same evaluation split into shards that other processes run (``engine=``, e.g. a dask.distributed ``Client``).

A ``Shard`` is picklable: the server's config, the tool, its part of the rows and the options. Each runs where its
engine puts it, opening its own sessions (its own server processes for stdio); the parts come back in order and make
one frame, the same rows and results as one process would give, and one summary (``batches.merged``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .._base.config import ServerConfig
from .._base.errors import McpSessionError
from .._base.frames import kit_frame
from .._base.wire import CONFIG_INVALID
from .._evaluation.batches import input_rows, merged
from .._purra.calls import check_approve, ms_since
from .opening import on_own_sessions
from .session import McpSession

if TYPE_CHECKING:
    import pandas as pd

    from .._ui.approval import PendingCall

MAX_SESSIONS = 16  # of one process's part: server processes, each a session
MAX_SHARDS = 1024


class Engine(Protocol):
    """What runs shards in other processes: ``submit(function, argument)`` returning a future with ``result()``
    (a dask.distributed ``Client``; a ``concurrent.futures.ProcessPoolExecutor`` too)."""

    def submit(self, function: Callable[..., Any], /, *args: Any) -> Any: ...


def evaluate(
    config: ServerConfig,
    tool: str,
    rows: Any,
    *,
    sessions: int = 1,
    concurrency: int = 1,
    approve: bool | None = None,
    timeout: float | None = None,
    check: Callable[[Any], object] | None = None,
    raw: bool = False,
    checkpoint: str | Path | None = None,
    shards: int = 1,
    engine: Engine | None = None,
) -> pd.DataFrame | PendingCall:
    """Evaluate ``tool`` over ``rows`` on ``sessions`` sessions of ``config``'s server (for stdio, as many server
    processes), behind one approval: the same frame and summary as ``McpSession.evaluate``, the rows spread over the
    sessions in turn, at most ``concurrency`` at once on each. With more than one session (or call at once) the tool
    is bound as a concurrency-safe read on each, which declares it so: use it for reads that are. Decided in code
    (``approve``), the sessions close once the batch is done; waiting for a person, they stay open until closed.

    With ``engine`` (a dask.distributed ``Client``, or any executor with ``submit``), the rows are split into
    ``shards`` parts in order, each run in the engine's processes with ``sessions`` sessions of its own, and the parts
    make one frame. Nobody can click in a worker: a sharded evaluation is approved in code (``approve=True``), and
    each part's log says so; ``check`` goes with the parts, so it must be picklable (dask's cloudpickle takes a
    lambda)."""
    check_approve(approve)
    _check_counts(sessions, concurrency, raw)
    if engine is None:
        if shards != 1:
            raise McpSessionError(CONFIG_INVALID, "shards > 1 needs an engine to run them (engine=, a dask Client).")
        return _evaluate_here(config, tool, rows, sessions=sessions, concurrency=concurrency, approve=approve,
                              timeout=timeout, check=check, raw=raw, checkpoint=checkpoint)  # fmt: skip
    if approve is not True:
        raise McpSessionError(CONFIG_INVALID, "A sharded evaluation runs where nobody can click: approve it in code "
                              "(approve=True).")  # fmt: skip
    if checkpoint is not None:
        raise McpSessionError(CONFIG_INVALID, "checkpoint= is for one process's evaluation, not for shards.")
    plan = shard(config, tool, rows, shards=shards, sessions=sessions, concurrency=concurrency, timeout=timeout,
                 check=check, raw=raw)  # fmt: skip
    started = time.perf_counter()
    futures = [engine.submit(run_shard, part) for part in plan]
    return combine([future.result() for future in futures], wall_ms=ms_since(started))


def _check_counts(sessions: int, concurrency: int, raw: bool) -> None:
    if isinstance(sessions, bool) or not isinstance(sessions, int) or not 1 <= sessions <= MAX_SESSIONS:
        raise McpSessionError(CONFIG_INVALID, f"sessions must be an integer from 1 to {MAX_SESSIONS}.")
    if raw and (sessions > 1 or concurrency != 1):
        raise McpSessionError(CONFIG_INVALID, "raw=True calls run one at a time on one session (sessions=1, "
                              "concurrency=1): a raw tool has no binding to declare it concurrency-safe.")  # fmt: skip


def _evaluate_here(
    config: ServerConfig, tool: str, rows: Any, *, sessions: int, approve: bool | None, **options: Any
) -> pd.DataFrame | PendingCall:
    """The evaluation in this process, on ``sessions`` sessions opened for it, the tool bound on each."""
    names = [config.name if index == 0 else f"{config.name}-{index + 1}" for index in range(sessions)]

    def work(opened: list[McpSession]) -> pd.DataFrame | PendingCall:
        if not options["raw"]:
            for session in opened:
                session.bind(tool, concurrency_safe=sessions > 1 or options["concurrency"] > 1)
        return opened[0].evaluate(tool, rows, approve=approve, also_on=opened[1:], **options)

    outcome: pd.DataFrame | PendingCall = on_own_sessions([replace(config, name=n) for n in names], work, "evaluate")
    return outcome


@dataclass(frozen=True)
class Shard:
    """One part of a sharded evaluation (picklable): its rows, a slice of the whole table (its labels kept)."""

    config: ServerConfig
    tool: str
    rows: pd.DataFrame
    sessions: int = 1
    concurrency: int = 1
    timeout: float | None = None
    check: Callable[[Any], object] | None = field(default=None, repr=False)
    raw: bool = False


def shard(config: ServerConfig, tool: str, rows: Any, *, shards: int, **options: Any) -> list[Shard]:
    """``rows`` split into ``shards`` parts in order (sizes differing by one at most), each with its own name."""
    if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= MAX_SHARDS:
        raise McpSessionError(CONFIG_INVALID, f"shards must be an integer from 1 to {MAX_SHARDS}.")
    frame, _ = input_rows(rows)
    size, extra = divmod(len(frame), shards)
    parts, start = [], 0
    for index in range(shards):
        end = start + size + (index < extra)
        name = replace(config, name=f"{config.name}-shard{index + 1}")
        parts.append(Shard(name, tool, frame.iloc[start:end], **options))
        start = end
    return [part for part in parts if len(part.rows)]


def run_shard(part: Shard) -> pd.DataFrame:
    """Run one part where the engine put it (approved in code on the driver, as its log says)."""
    frame = _evaluate_here(part.config, part.tool, part.rows, sessions=part.sessions, approve=True,
                           concurrency=part.concurrency, timeout=part.timeout, check=part.check, raw=part.raw,
                           checkpoint=None)  # fmt: skip
    import pandas as pd

    assert isinstance(frame, pd.DataFrame)  # (approved in code: a frame, never a pending call)
    return frame


def combine(frames: Sequence[pd.DataFrame], *, wall_ms: float) -> pd.DataFrame:
    """The parts' frames as one, in order, with one summary."""
    import pandas as pd

    if not frames:
        raise McpSessionError(CONFIG_INVALID, "There are no rows to evaluate.")
    whole = pd.concat(list(frames))
    whole.attrs["summary"] = merged([frame.attrs["summary"] for frame in frames], wall_ms=wall_ms)
    return kit_frame(whole)


__all__ = ["Engine", "Shard", "combine", "evaluate", "run_shard", "shard"]

"""The spine of one ``s.call`` of a bound read tool (the demo server in memory), for a person changing the call path:
the kit's frames on the cell's thread while it waits, and the await chain on the loop into the call's execution.

    .venv/bin/python scripts/call_spine.py
"""

from __future__ import annotations

import sys
import traceback
from types import CodeType, FrameType
from typing import Any

import purra_jupyter as pj
from purra_jupyter._base import runner
from purra_jupyter.demo.server import build_server

KIT = "/purra_jupyter/"
ENDS = {"_serve_until": "cell", "_call_purra": "loop"}  # where each thread's chain ends


def kit_chain(frame: FrameType) -> list[str]:
    """The kit's frames from the outermost to ``frame`` (a coroutine's caller is its awaiting coroutine)."""
    return [label(f.f_code) for f, _ in reversed(list(traceback.walk_stack(frame))) if KIT in f.f_code.co_filename]


def label(code: CodeType) -> str:
    return f"{code.co_filename.split(KIT)[1]}:{code.co_qualname}"


def main() -> None:
    chains: dict[str, list[str]] = {}

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        thread = ENDS.get(frame.f_code.co_name)
        if event == "call" and thread is not None and thread not in chains and KIT in frame.f_code.co_filename:
            chains[thread] = kit_chain(frame)

    with pj.connect(pj.ServerConfig("demo", server=build_server()), approval="auto") as session:
        session.bind("search_documents")
        runner.on_loop(sys.setprofile, hook)
        sys.setprofile(hook)
        result = session.call("search_documents", {"query": "mcp", "limit": 2}, approve=True)
        sys.setprofile(None)
        runner.on_loop(sys.setprofile, None)
    assert result.error_code is None, result
    for thread, what in (("cell", "the cell's thread, waiting"), ("loop", "the loop, into the call's execution")):
        print(f"{what}: {len(chains[thread])} frames of the kit")
        for name in chains[thread]:
            print(f"    {name}")


if __name__ == "__main__":
    main()

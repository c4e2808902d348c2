"""A hand-written JSON-RPC stdio server (no SDK) for faults the SDK refuses to produce.

    python raw_server.py [--protocol VERSION] [--fault mute|garbage|exit-on-initialize]

- ``--protocol``: the version it answers ``initialize`` with (default 2025-11-25).
- ``mute``: reads everything, answers nothing.
- ``garbage``: after ``notifications/initialized``, writes a line that is not JSON to stdout.
- ``exit-on-initialize``: writes a reason to stderr and exits 3 when ``initialize`` arrives.
"""

from __future__ import annotations

import argparse
import json
import sys


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--protocol", default="2025-11-25")
    parser.add_argument("--fault", choices=["none", "mute", "garbage", "exit-on-initialize"], default="none")
    options = parser.parse_args()
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if options.fault == "mute":
            continue
        if method == "initialize":
            if options.fault == "exit-on-initialize":
                print("raw server: refusing to initialize", file=sys.stderr, flush=True)
                return 3
            send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {
                        "protocolVersion": options.protocol,
                        "capabilities": {"tools": {"listChanged": True}},
                        "serverInfo": {"name": "raw-server", "version": "0.1"},
                    },
                }
            )
        elif method == "notifications/initialized" and options.fault == "garbage":
            sys.stdout.write("this line is not JSON-RPC\n")
            sys.stdout.flush()
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}})
        elif "id" in message:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "method not found"}})
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A hand-written JSON-RPC stdio server (no SDK) of protocol 2026-07-28 only: it has no ``initialize``.

    python era_server.py [--initialize-error -32022|-32601] [--discover answer|error|mute]
                         [--versions V,V,...] [--no-error-data]

``initialize`` gets the JSON-RPC error ``--initialize-error``: -32022 is 2026-07-28's UnsupportedProtocolVersionError,
whose ``data`` (``{"supported": [...], "requested": ...}``) lists ``--versions`` unless ``--no-error-data``; -32601
is method not found. ``server/discover`` is answered with ``supportedVersions`` (``--versions``, by default
2026-07-28), with a -32601 error (``--discover error``), or never (``mute``). Every other request gets -32601.
Every message's method is written to stderr (``era server: got server/discover``), so a test can see what reached
the server (a cancellation notice included).
"""

from __future__ import annotations

import argparse
import json
import sys

MODERN = "2026-07-28"


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def error(message: dict, code: int, text: str, data: dict | None = None) -> None:
    body: dict = {"code": code, "message": text}
    if data is not None:
        body["data"] = data
    send({"jsonrpc": "2.0", "id": message["id"], "error": body})


def discover_result(versions: list[str]) -> dict:
    """What 2026-07-28's ``server/discover`` answers (its result names the server in ``_meta``)."""
    return {
        "resultType": "complete",
        "supportedVersions": versions,
        "capabilities": {"tools": {"listChanged": True}},
        "instructions": "A server of protocol 2026-07-28 only.",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "era-server", "version": "0.1"}},
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--initialize-error", type=int, choices=[-32022, -32601], default=-32022)
    parser.add_argument("--discover", choices=["answer", "error", "mute"], default="answer")
    parser.add_argument("--versions", default=MODERN)
    parser.add_argument("--no-error-data", action="store_true")
    options = parser.parse_args()
    versions = options.versions.split(",")
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        print(f"era server: got {method}", file=sys.stderr, flush=True)
        if "id" not in message:
            continue
        if method == "initialize" and options.initialize_error == -32022:
            requested = (message.get("params") or {}).get("protocolVersion")
            data = None if options.no_error_data else {"supported": versions, "requested": requested}
            error(message, -32022, "Unsupported protocol version: initialize is not part of 2026-07-28", data)
        elif method == "server/discover" and options.discover == "answer":
            send({"jsonrpc": "2.0", "id": message["id"], "result": discover_result(versions)})
        elif method == "server/discover" and options.discover == "mute":
            continue
        else:
            error(message, -32601, f"Method not found: {method}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

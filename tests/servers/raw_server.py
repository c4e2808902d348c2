"""A hand-written JSON-RPC stdio server (no SDK) for faults and catalogs the SDK refuses to produce.

    python raw_server.py [--protocol VERSION] [--fault FAULT] [--tools N] [--page-size K]
                         [--cursor ok|repeat|long|empty] [--duplicate-name] [--description-bytes N]
                         [--description TEXT]
                         [--no-tools-capability] [--list-changed-after-initialized]
                         [--call-result ok|bad-structured|no-structured|xss]

Faults: ``mute`` (answers nothing), ``garbage`` (a non-JSON stdout line before answering a ping),
``garbage-at-once`` (a non-JSON line right after ``notifications/initialized``), ``exit-on-initialize``
(a reason on stderr, then exit 3).

The catalog is ``--tools`` tools named ``tool_000``... served ``--page-size`` per page. With
``--list-changed-after-initialized`` the server announces ``tools/list_changed`` as soon as it is
initialized and from then on lists ``tool_new`` too (the published server-everything does the first).
"""

from __future__ import annotations

import argparse
import json
import sys

XSS = [
    "<script>window.__pwned = 1</script>",
    "<img src=x onerror=window.__pwned=1>",
    '"><svg onload=window.__pwned=1>',
    "javascript:window.__pwned=1",
]
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}
XSS_OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "link": {"type": "string"}},
                "required": ["name", "link"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["rows"],
    "additionalProperties": False,
}
SCHEMA = {
    "type": "object",
    "properties": {"x": {"type": "string", "description": "Any text."}},
    "required": ["x"],
    "additionalProperties": False,
}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def catalog(options: argparse.Namespace, changed: bool) -> list[dict]:
    description = "d" * options.description_bytes if options.description_bytes else options.description
    names = [f"tool_{index:03d}" for index in range(options.tools)]
    if options.duplicate_name and names:
        names.append(names[0])
    if changed:
        names.append("tool_new")
    tools = [{"name": name, "description": description, "inputSchema": SCHEMA} for name in names]
    if options.call_result in ("bad-structured", "no-structured"):
        for tool in tools:
            tool["outputSchema"] = OUTPUT_SCHEMA
    if options.call_result == "xss":
        for tool in tools:
            tool["outputSchema"] = XSS_OUTPUT_SCHEMA
        tools.append({"name": XSS[1], "description": XSS[0], "inputSchema": SCHEMA})
    return tools


def call_result(options: argparse.Namespace, tool: str) -> dict:
    """What ``tools/call`` answers, by ``--call-result`` (with ``xss``, only ``tool_000`` answers in text
    alone, so that it fits the PurrA profile; the others add an SVG, a PNG with markup, a link)."""
    if options.call_result == "bad-structured":
        return {"content": [{"type": "text", "text": "n is not a number"}], "structuredContent": {"n": "x"}}
    if options.call_result == "no-structured":
        return {"content": [{"type": "text", "text": "no structured content"}]}
    if options.call_result == "xss":
        rows = [{"name": payload, "link": "javascript:window.__pwned=1"} for payload in XSS]
        blocks = [{"type": "text", "text": payload} for payload in XSS]
        blocks += (
            []
            if tool == "tool_000"
            else [
                {"type": "image", "mimeType": "image/svg+xml", "data": "PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+"},
                {"type": "image", "mimeType": "image/png", "data": '"><script>window.__pwned=1</script>'},
                {"type": "resource_link", "name": XSS[0], "uri": "javascript:window.__pwned=1"},
            ]
        )
        return {"content": blocks, "structuredContent": {"rows": rows}}
    return {"content": [{"type": "text", "text": "ok"}]}


def page(options: argparse.Namespace, tools: list[dict], cursor: str | None) -> dict:
    start = int(cursor.split(":")[-1]) if cursor else 0
    size = options.page_size or len(tools) or 1
    result: dict = {"tools": tools[start : start + size]}
    if start + size < len(tools):
        result["nextCursor"] = {
            "ok": f"page:{start + size}",
            "repeat": "page:0" if start else f"page:{start + size}",
            "long": "x" * 513 + f":{start + size}",
            "empty": "",
        }[options.cursor]
        if options.cursor == "repeat" and start:
            result["nextCursor"] = cursor
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--protocol", default="2025-11-25")
    parser.add_argument(
        "--fault", choices=["none", "mute", "garbage", "garbage-at-once", "exit-on-initialize"], default="none"
    )
    parser.add_argument("--tools", type=int, default=1)
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--cursor", choices=["ok", "repeat", "long", "empty"], default="ok")
    parser.add_argument("--duplicate-name", action="store_true")
    parser.add_argument("--description-bytes", type=int, default=0)
    parser.add_argument("--description", default="A generated tool.")
    parser.add_argument("--no-tools-capability", action="store_true")
    parser.add_argument("--list-changed-after-initialized", action="store_true")
    parser.add_argument("--call-result", choices=["ok", "bad-structured", "no-structured", "xss"], default="ok")
    options = parser.parse_args()
    changed = False
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if options.fault == "mute":
            continue
        if method == "initialize":
            if options.fault == "exit-on-initialize":
                print("raw server: refusing to initialize", file=sys.stderr, flush=True)
                return 3
            capabilities = {} if options.no_tools_capability else {"tools": {"listChanged": True}}
            result = {
                "protocolVersion": options.protocol,
                "capabilities": capabilities,
                "serverInfo": {"name": "raw-server", "version": "0.1"},
            }
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif method == "notifications/initialized":
            if options.fault == "garbage-at-once":
                sys.stdout.write("this line is not JSON-RPC\n")
                sys.stdout.flush()
            if options.list_changed_after_initialized:
                changed = True
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        elif method == "ping":
            if options.fault == "garbage":
                sys.stdout.write("this line is not JSON-RPC\n")
            send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        elif method == "tools/list":
            cursor = (message.get("params") or {}).get("cursor")
            send({"jsonrpc": "2.0", "id": message["id"], "result": page(options, catalog(options, changed), cursor)})
        elif method == "tools/call":
            send({"jsonrpc": "2.0", "id": message["id"], "result": call_result(options, message["params"]["name"])})
        elif "id" in message:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "method not found"}})
    return 0


if __name__ == "__main__":
    sys.exit(main())

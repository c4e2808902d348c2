"""A hand-written JSON-RPC stdio server (no SDK) for faults and catalogs the SDK refuses to produce.

    python raw_server.py [--protocol VERSION] [--fault FAULT] [--tools N] [--page-size K]
                         [--cursor ok|repeat|long|longest|empty] [--duplicate-name] [--description-bytes N]
                         [--description TEXT]
                         [--no-tools-capability] [--list-changed-after-initialized]
                         [--call-result RESULT] [--schema flat|deep|wide] [--list-changed-on-ping]
                         [--page-delay SECONDS] [--page-delay-from N] [--echo-env NAME] [--linger]

Faults: ``mute`` (answers nothing), ``mute-list`` (never answers ``tools/list``), ``garbage`` (a non-JSON
stdout line before answering a ping), ``not-utf8`` (a line of bytes that are not UTF-8 before answering a
ping), ``garbage-at-once`` (a non-JSON line right after
``notifications/initialized``), ``exit-on-initialize`` (a reason on stderr, then exit 3).

The catalog is ``--tools`` tools named ``tool_000``... served ``--page-size`` per page. With
``--list-changed-after-initialized`` the server announces ``tools/list_changed`` as soon as it is
initialized and from then on lists ``tool_new`` too (the published server-everything does the first);
``--list-changed-on-ping`` announces it before answering each ping. ``--schema deep`` gives
``tool_000`` an input schema nested 40 levels deep, ``wide`` one of about 5,000 nodes. With
``--page-delay`` every ``tools/list`` answer from the ``--page-delay-from``-th request on (counting from 1)
comes that many seconds late.

``--linger`` plays a server that hangs on exit: it starts a ``sleep`` in its process group and, when its stdin
ends, ignores SIGTERM and stays (pids on stderr: ``raw server: pids SERVER CHILD``).

``--echo-env NAME`` plays a server that leaks a secret: it writes the value of its environment variable
``NAME`` to stderr at start and with each request, and puts it into its JSON-RPC errors, its garbage line
and its last words.

``--call-result`` is what every ``tools/call`` gets: ``ok``, ``bad-structured`` / ``no-structured``
(against a declared output schema), ``xss``, ``mute`` (never answered), ``exit`` (the server exits
mid-call), ``huge`` (a result over 1 MiB), ``blocks`` (129 content blocks), ``image``, ``error``
(``isError``), ``list-changed`` (``tools/list_changed`` before the answer), ``storm`` (10,000
``tools/list_changed`` before the answer), ``stderr-flood`` (10 MB on stderr before the answer),
``rpc-error`` (a JSON-RPC error -32603 whose message names a failed host lookup, with markup), ``late`` (the
answer comes 3 s later, whatever the client sent meanwhile). A call whose argument ``x`` is ``"mute"`` is
never answered, whatever ``--call-result`` says.
Every request's method is written to stderr (``raw server: got tools/call``), so a test can see what
reached the server.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

XSS = [
    "<script>window.__pwned = 1</script>",
    "<img src=x onerror=window.__pwned=1>",
    '"><svg onload=window.__pwned=1>',
    "javascript:window.__pwned=1",
    "https://evil.example/phish?token=abc",  # a URL: shown as text, never made a link
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


PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
LIST_CHANGED = json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}) + "\n"


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def deep_schema(depth: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}, "additionalProperties": False}
    return schema


def wide_schema(properties: int) -> dict:
    """A flat schema of about ``4 * properties`` nodes in little space (within the 64 KiB limit)."""
    props = {f"p{index}": {"type": "integer"} for index in range(properties)}
    return {"type": "object", "properties": props, "additionalProperties": False}


def catalog(options: argparse.Namespace, changed: bool) -> list[dict]:
    description = "d" * options.description_bytes if options.description_bytes else options.description
    names = [f"tool_{index:03d}" for index in range(options.tools)]
    if options.long_name and names:
        names[0] = "long_" + "n" * (options.long_name - 5)  # one unbroken word, longer than PurrA binds if > 128
    if options.duplicate_name and names:
        names.append(names[0])
    if changed:
        names.append("tool_new")
    tools = [{"name": name, "description": description, "inputSchema": SCHEMA} for name in names]
    if options.schema == "deep" and tools:
        tools[0]["inputSchema"] = deep_schema(40)
    if options.schema == "wide" and tools:
        tools[0]["inputSchema"] = wide_schema(1250)
    if options.call_result in ("bad-structured", "no-structured"):
        for tool in tools:
            tool["outputSchema"] = OUTPUT_SCHEMA
    if options.call_result == "xss":
        for tool in tools:
            tool["outputSchema"] = XSS_OUTPUT_SCHEMA
        tools.append({"name": XSS[1], "description": f"{XSS[0]} {XSS[4]}", "inputSchema": SCHEMA})
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
    if options.call_result == "huge":
        return {"content": [{"type": "text", "text": "x" * (1024 * 1024 + 1)}]}
    if options.call_result == "blocks":
        return {"content": [{"type": "text", "text": str(index)} for index in range(129)]}
    if options.call_result == "image":
        return {"content": [{"type": "image", "mimeType": "image/png", "data": PNG_1X1}]}
    if options.call_result == "error":
        return {"content": [{"type": "text", "text": "the tool failed"}], "isError": True}
    return {"content": [{"type": "text", "text": "ok"}]}


def leaked(options: argparse.Namespace) -> str:
    """The secret ``--echo-env`` leaks (empty without it)."""
    return os.environ.get(options.echo_env, "") if options.echo_env else ""


def rpc_error(options: argparse.Namespace) -> dict:
    text = f"getaddrinfo ENOTFOUND api.example.invalid (token {leaked(options)}) {XSS[0]} {XSS[4]} " + "y" * 400
    return {"code": -32603, "message": text}


def before_answering_a_call(options: argparse.Namespace, arguments: dict) -> bool:
    """What ``--call-result`` does before (or instead of) the answer; ``False``: no answer at all."""
    if options.call_result == "mute" or arguments.get("x") == "mute":
        return False
    if options.call_result == "late":
        time.sleep(3)
    if options.call_result == "exit":
        print("raw server: exiting in the middle of a call", file=sys.stderr, flush=True)
        sys.exit(4)
    if options.call_result in ("list-changed", "storm"):
        for _ in range(10_000 if options.call_result == "storm" else 1):
            sys.stdout.write(LIST_CHANGED)
        sys.stdout.flush()
    if options.call_result == "stderr-flood":
        line = "raw server: flooding stderr " + "z" * 100 + "\n"
        for _ in range(10 * 1024 * 1024 // len(line) + 1):
            sys.stderr.write(line)
        sys.stderr.write("raw server: flood done\n")
        sys.stderr.flush()
    return True


def page(options: argparse.Namespace, tools: list[dict], cursor: str | None) -> dict:
    start = int(cursor.split(":")[-1]) if cursor else 0
    size = options.page_size or len(tools) or 1
    result: dict = {"tools": tools[start : start + size]}
    if start + size < len(tools):
        following = f":{start + size}"
        result["nextCursor"] = {
            "ok": f"page{following}",
            "repeat": "page:0" if start else f"page{following}",
            "long": "x" * (513 - len(following)) + following,  # one byte over purra-mcp's 512
            "longest": "x" * (512 - len(following)) + following,
            "empty": "",
        }[options.cursor]
        if options.cursor == "repeat" and start:
            result["nextCursor"] = cursor
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--protocol", default="2025-11-25")
    parser.add_argument(
        "--fault",
        choices=["none", "mute", "mute-list", "garbage", "not-utf8", "garbage-at-once", "exit-on-initialize"],
        default="none",
    )
    parser.add_argument("--tools", type=int, default=1)
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--cursor", choices=["ok", "repeat", "long", "longest", "empty"], default="ok")
    parser.add_argument("--duplicate-name", action="store_true")
    parser.add_argument("--description-bytes", type=int, default=0)
    parser.add_argument("--description", default="A generated tool.")
    parser.add_argument("--long-name", type=int, default=0, metavar="LENGTH")
    parser.add_argument("--no-tools-capability", action="store_true")
    parser.add_argument("--list-changed-after-initialized", action="store_true")
    parser.add_argument("--list-changed-on-ping", action="store_true")
    parser.add_argument("--schema", choices=["flat", "deep", "wide"], default="flat")
    parser.add_argument("--page-delay", type=float, default=0.0)
    parser.add_argument("--page-delay-from", type=int, default=1)
    parser.add_argument("--echo-env", metavar="NAME")
    parser.add_argument("--linger", action="store_true")
    parser.add_argument(
        "--call-result",
        choices=["ok", "bad-structured", "no-structured", "xss", "mute", "exit", "huge", "blocks", "image", "error",
                 "list-changed", "storm", "stderr-flood", "rpc-error", "late"],
        default="ok",
    )  # fmt: skip
    options = parser.parse_args()
    if options.linger:
        child = subprocess.Popen(["sleep", "300"])
        print(f"raw server: pids {os.getpid()} {child.pid}", file=sys.stderr, flush=True)
    if options.echo_env:
        print(f"raw server: {options.echo_env} token is {leaked(options)}", file=sys.stderr, flush=True)
    changed = False
    listings = 0
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        secret = f" (token {leaked(options)})" if options.echo_env else ""
        print(f"raw server: got {method}{secret}", file=sys.stderr, flush=True)
        if options.fault == "mute":
            continue
        if method == "initialize":
            if options.fault == "exit-on-initialize":
                print(f"raw server: refusing to initialize {leaked(options)}".rstrip(), file=sys.stderr, flush=True)
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
            if options.list_changed_on_ping:
                changed = True
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            if options.fault == "garbage":
                sys.stdout.write(f"this line is not JSON-RPC {leaked(options)}".rstrip() + "\n")
            if options.fault == "not-utf8":
                sys.stdout.flush()
                sys.stdout.buffer.write(b"not UTF-8: \xff\xfe\n")
            send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        elif method == "tools/list":
            listings += 1
            if options.fault == "mute-list":
                continue
            if options.page_delay and listings >= options.page_delay_from:
                time.sleep(options.page_delay)
            cursor = (message.get("params") or {}).get("cursor")
            send({"jsonrpc": "2.0", "id": message["id"], "result": page(options, catalog(options, changed), cursor)})
        elif method == "tools/call":
            params = message["params"]
            if not before_answering_a_call(options, params.get("arguments") or {}):
                continue
            if options.call_result == "rpc-error":
                send({"jsonrpc": "2.0", "id": message["id"], "error": rpc_error(options)})
            else:
                send({"jsonrpc": "2.0", "id": message["id"], "result": call_result(options, params["name"])})
        elif "id" in message:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "method not found"}})
    if options.linger:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(300)
    return 0


if __name__ == "__main__":
    sys.exit(main())

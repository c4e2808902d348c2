"""A JSON-RPC stdio server (no SDK) whose every string is hostile: server info, tool titles, descriptions,
schema titles, descriptions and property names, annotations, results and stderr.

    python hostile_server.py XSS_JSON [--garbage-on-ping]

``XSS_JSON`` is a JSON list of at least six payloads. With ``--garbage-on-ping`` it writes a hostile non-JSON
line before answering a ping (the session then fails with that line in its cause). The tool ``numbers``
answers with NaN and Infinity in its structured content, as Python's ``json`` writes them.
"""

import json
import sys

XSS = json.loads(sys.argv[1])
GARBAGE = "--garbage-on-ping" in sys.argv
FORM_SCHEMA = {
    "type": "object",
    "properties": {
        "q": {"type": "string", "title": XSS[0], "description": XSS[1]},
        "n": {"type": "integer", "description": XSS[2], "minimum": 0, "maximum": 5},
        "mode": {"type": "string", "enum": [XSS[0], "plain"], "description": XSS[3]},
        "opts": {
            "type": "object",
            "title": XSS[4],
            "description": XSS[5],
            "properties": {"flag": {"type": "boolean", "description": XSS[1]}},
            "additionalProperties": False,
        },
        "tags": {"type": "array", "items": {"type": "string", "description": XSS[2]}, "description": XSS[0]},
        "either": {
            "anyOf": [{"type": "string", "title": XSS[1]}, {"type": "integer", "title": XSS[3]}],
            "description": XSS[4],
        },
    },
    "required": ["q"],
    "additionalProperties": False,
}
BAD_SCHEMA = {
    "type": "object",
    "properties": {XSS[0]: {"type": "string", "format": "uri"}, XSS[1]: {"type": "string", "default": XSS[2]}},
}
TOOLS = [
    {
        "name": "formtool",
        "title": XSS[0],
        "description": XSS[1],
        "inputSchema": FORM_SCHEMA,
        "annotations": {"title": XSS[2], "readOnlyHint": True},
    },
    {"name": "badtool", "description": XSS[4], "inputSchema": BAD_SCHEMA},
    {"name": "numbers", "description": "Non-finite numbers.", "inputSchema": {"type": "object"}},
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for payload in XSS:
    print(payload, file=sys.stderr, flush=True)
for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": ident,
                "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": XSS[0], "version": XSS[1], "title": XSS[2]},
                    "instructions": XSS[3],
                },
            }
        )
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call" and message["params"]["name"] == "numbers":  # JSON as Python writes it
        sys.stdout.write(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": ident,
                    "result": {
                        "content": [{"type": "text", "text": "n"}],
                        "structuredContent": {"nan": float("nan"), "inf": float("inf")},
                    },
                }
            )
            + "\n"
        )
        sys.stdout.flush()
    elif method == "tools/call":
        blocks = [{"type": "text", "text": payload} for payload in XSS]
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": blocks}})
    elif method == "ping":
        if GARBAGE:
            sys.stdout.write(XSS[0] + " " + XSS[1] + "\n")
            sys.stdout.flush()
        send({"jsonrpc": "2.0", "id": ident, "result": {}})
    elif ident is not None:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": XSS[0]}})

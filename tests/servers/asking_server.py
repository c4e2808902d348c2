"""A server that asks its client things during tool calls: a message from its model (sampling), the person's input
(elicitation, as a form or an address to visit) and its roots. Each tool returns, as its text, JSON of exactly what
the client answered (``{"answered": ...}``) or the error it answered with (``{"error": {"code", "message"}}``), so a
test sees what reached the server. ``roots_changes`` counts the ``notifications/roots/list_changed`` it heard.

    python asking_server.py          (stdio)

Tests in this process use ``build()`` (a low-level server reached in memory).
"""

from __future__ import annotations

import json
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import McpError

FORM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name"},
        "age": {"type": "integer", "default": 30},
        "color": {"type": "string", "enum": ["red", "green"]},
    },
    "required": ["name"],
}
TEXT_ARGUMENT = {"type": "object", "properties": {"text": {"type": "string"}}, "additionalProperties": False}
NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}
TOOLS = {
    "ask_model": ("Asks the client's model to answer `text` (sampling).", TEXT_ARGUMENT),
    "ask_form": ("Asks the person for a name, an age and a color, saying `text` (elicitation, form).", TEXT_ARGUMENT),
    "ask_url": ("Asks the person to visit the address `text` (elicitation, url).", TEXT_ARGUMENT),
    "ask_roots": ("Asks the client for its roots.", NO_ARGUMENTS),
    "roots_changes": ("How many times the client said its roots changed.", NO_ARGUMENTS),
    "ask_model_often": ("Asks the client's model `text` (a number) times at once.", TEXT_ARGUMENT),
}


async def _ask_often(session: Any, times: int) -> list[Any]:
    """``times`` sampling requests at once: each one's answer (``"answered"``) or error message, in order."""
    import anyio

    outcomes: list[Any] = [None] * times

    async def one(index: int) -> None:
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=str(index)))
        try:
            await session.create_message([message], max_tokens=8)
            outcomes[index] = "answered"
        except McpError as error:
            outcomes[index] = error.error.message

    async with anyio.create_task_group() as tasks:
        for index in range(times):
            tasks.start_soon(one, index)
    return outcomes


def build() -> Server[Any, Any]:
    server: Server[Any, Any] = Server("asking-server", version="1.0")
    heard = {"roots_changes": 0}

    async def roots_changed(_: types.RootsListChangedNotification) -> None:
        heard["roots_changes"] += 1

    server.notification_handlers[types.RootsListChangedNotification] = roots_changed

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [
            types.Tool(
                name=name, description=text, inputSchema=schema, annotations=types.ToolAnnotations(readOnlyHint=True)
            )
            for name, (text, schema) in TOOLS.items()
        ]

    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        session = server.request_context.session
        text = str(arguments.get("text", ""))
        try:
            if name == "ask_model":
                message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))
                answer: Any = await session.create_message(
                    [message], max_tokens=64, system_prompt="Answer in one word.",
                    model_preferences=types.ModelPreferences(hints=[types.ModelHint(name="small")]),
                )  # fmt: skip
            elif name == "ask_form":
                answer = await session.elicit_form(text, FORM_SCHEMA)  # type: ignore[arg-type]
            elif name == "ask_url":
                answer = await session.elicit_url("Sign in to continue", text, "elicitation-1")
            elif name == "ask_model_often":
                answer = await _ask_often(session, int(text))
                return [types.TextContent(type="text", text=json.dumps({"answers": answer}))]
            elif name == "ask_roots":
                answer = await session.list_roots()
            else:
                return [types.TextContent(type="text", text=json.dumps({"roots_changes": heard["roots_changes"]}))]
        except McpError as error:
            said = {"error": {"code": error.error.code, "message": error.error.message}}
            return [types.TextContent(type="text", text=json.dumps(said))]
        said = {"answered": answer.model_dump(mode="json", by_alias=True, exclude_none=True)}
        return [types.TextContent(type="text", text=json.dumps(said))]

    return server


if __name__ == "__main__":
    from stdio_wire import serve

    serve(build())

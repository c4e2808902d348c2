"""The demo MCP server's tool set, written against the low-level ``mcp.server.lowlevel.Server`` API.

Every schema is hand-written. All tools except ``greet`` stay inside PurrA's ``purra.output-schema/v1``
profile; ``greet`` deliberately uses ``default`` so hosts can show how a refused tool looks. A small notes
store in memory shows writes: ``add_note`` (a write) and ``delete_note`` (destructive) say so in their hints,
``list_notes`` reads it.
"""

from __future__ import annotations

import base64
import math
import sys
from collections import Counter, deque
from importlib import resources
from typing import Any, TypeAlias

import anyio
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.lowlevel.server import CombinationContent, UnstructuredContent
from mcp.server.models import InitializationOptions

from purra_jupyter.demo import corpus

SERVER_NAME = "purra-jupyter-demo"
SERVER_VERSION = "1.0.0"
EXTRA_TOOL = "extra_tool"
# The view of list_notes (MCP Apps): a small page of its own, no network; it calls add_note and list_notes itself.
NOTES_VIEW_URI = "ui://demo/notes.html"
VIEW_MIME = "text/html;profile=mcp-app"
SAID_LINES = 200  # the stderr lines a server object keeps of its own (``DemoServer.said``)

# A real 4x4 RGB PNG (checkerboard), kept as a constant so the server never touches the file system.
TINY_PNG_BASE64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAGElEQVR42mOQz9/yfykDhGSAs4AkA04ZAF6CFzHa091rAAAAAElFTkSuQmCC"
)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# What a tool handler gives the SDK's call_tool: content blocks, blocks with structured content, or a whole result.
ToolAnswer: TypeAlias = UnstructuredContent | CombinationContent | types.CallToolResult

_NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
_NOTE = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "The note's id."},
        "text": {"type": "string", "description": "The note."},
    },
    "required": ["id", "text"],
    "additionalProperties": False,
}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
    }


READ, WRITE, DESTRUCTIVE = "read", "write", "destructive"


def _annotations(title: str, *, idempotent: bool = True, effect: str = READ) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        title=title,
        readOnlyHint=effect == READ,
        destructiveHint=effect == DESTRUCTIVE,
        idempotentHint=idempotent,
        openWorldHint=False,
    )


def _tool(
    name: str,
    title: str,
    description: str,
    input_schema: dict[str, Any],
    output_schema: dict[str, Any] | None = None,
    *,
    idempotent: bool = True,
    effect: str = READ,
    view: str | None = None,
) -> types.Tool:
    return types.Tool(
        name=name,
        title=title,
        description=description,
        inputSchema=input_schema,
        outputSchema=output_schema,
        annotations=_annotations(title, idempotent=idempotent, effect=effect),
        _meta={"ui": {"resourceUri": view}} if view else None,
    )


def _base_tools() -> list[types.Tool]:
    return [
        _tool(
            "search_documents",
            "Search documents",
            "Search the built-in corpus of short notes about MCP, PurrA and Jupyter by term overlap.",
            _object(
                {
                    "query": {"type": "string", "minLength": 1, "description": "Words to look for."},
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 10,
                        "description": "Most hits to return.",
                    },
                }
            ),
            _object(
                {
                    "hits": {
                        "type": "array",
                        "maxItems": 10,
                        "description": "Matching documents, best score first, ties by id.",
                        "items": _object(
                            {
                                "id": {"type": "string", "description": "Document id."},
                                "title": {"type": "string", "description": "Document title."},
                                "score": {
                                    "type": "number",
                                    "minimum": 0,
                                    "maximum": 1,
                                    "description": "Term-overlap score rounded to 3 decimals.",
                                },
                            }
                        ),
                    },
                }
            ),
        ),
        _tool(
            "get_document",
            "Get document",
            "Return one document of the built-in corpus by its id.",
            _object({"id": {"type": "string", "minLength": 1, "description": "Document id, e.g. doc-1."}}),
            _object(
                {
                    "id": {"type": "string", "description": "Document id."},
                    "title": {"type": "string", "description": "Document title."},
                    "body": {"type": "string", "description": "Document text."},
                }
            ),
        ),
        _tool(
            "echo",
            "Echo",
            "Return the given text unchanged.",
            _object({"text": {"type": "string", "description": "Text to echo back."}}),
            _object({"text": {"type": "string", "description": "The same text."}}),
        ),
        _tool(
            "add",
            "Add",
            "Add two numbers.",
            _object(
                {
                    "a": {"type": "number", "description": "First addend."},
                    "b": {"type": "number", "description": "Second addend."},
                }
            ),
            _object({"sum": {"type": "number", "description": "a + b."}}),
        ),
        _tool(
            "sleep",
            "Sleep",
            "Wait the given number of seconds, then report it; useful to try timeouts and interrupts.",
            _object(
                {
                    "seconds": {"type": "number", "minimum": 0, "maximum": 60, "description": "Seconds to wait."},
                }
            ),
            _object({"slept": {"type": "number", "description": "Seconds waited."}}),
        ),
        _tool(
            "greet",
            "Greet",
            "Greet someone; its schema uses a default value, which the PurrA profile refuses.",
            _object(
                {
                    "name": {"type": "string", "description": "Who to greet."},
                    "punctuation": {"type": "string", "default": "!", "description": "Text after the name."},
                },
                required=["name"],
            ),
        ),
        _tool(
            "tiny_image",
            "Tiny image",
            "Return a 4x4 PNG image together with a short caption.",
            dict(_NO_ARGUMENTS),
        ),
        _tool(
            "fail",
            "Fail",
            "Always answer with a tool error whose text is the given message.",
            _object({"message": {"type": "string", "description": "Error text to return."}}),
        ),
        _tool(
            "toggle_extra_tool",
            "Toggle extra tool",
            "Add or remove the tool extra_tool from this server's listing and announce the change.",
            dict(_NO_ARGUMENTS),
            _object(
                {
                    "extra_tool_listed": {"type": "boolean", "description": "Whether extra_tool is now listed."},
                }
            ),
            idempotent=False,
        ),
        _tool(
            "list_notes",
            "List notes",
            "List the notes in this server's in-memory notes store (add_note and delete_note change it).",
            dict(_NO_ARGUMENTS),
            _object({"notes": {"type": "array", "description": "The notes, oldest first.", "items": _NOTE}}),
            view=NOTES_VIEW_URI,
        ),
        _tool(
            "add_note",
            "Add note",
            "Add a note to the in-memory notes store and return its id. A write: it changes the server's state.",
            _object(
                {
                    "text": {"type": "string", "minLength": 1, "maxLength": 500, "description": "The note."},
                    "delay_seconds": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": 60,
                        "description": "Seconds to wait before storing it (leave out for none); to try interrupts.",
                    },
                },
                required=["text"],
            ),
            _object(
                {
                    "id": {"type": "string", "description": "The new note's id."},
                    "count": {"type": "integer", "minimum": 0, "description": "Notes stored now."},
                }
            ),
            idempotent=False,
            effect=WRITE,
        ),
        _tool(
            "delete_note",
            "Delete note",
            "Delete a note from the in-memory notes store by its id (a tool error if there is none). Destructive: "
            "the note is gone for good.",
            _object({"id": {"type": "string", "minLength": 1, "description": "The note's id, e.g. note-1."}}),
            _object(
                {
                    "id": {"type": "string", "description": "The deleted note's id."},
                    "count": {"type": "integer", "minimum": 0, "description": "Notes stored now."},
                }
            ),
            effect=DESTRUCTIVE,
        ),
        _tool(
            "call_counts",
            "Call counts",
            "Report how many tools/call requests this server process has finished, per tool name, and the "
            "most it has had in flight at once.",
            dict(_NO_ARGUMENTS),
            _object(
                {
                    "counts": {
                        # The PurrA profile only allows a boolean additionalProperties, so the integer values
                        # cannot be declared per key; the server always sends non-negative integers.
                        "type": "object",
                        "description": "Finished tools/call requests per tool name (non-negative integers).",
                    },
                    "max_in_flight": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "The most tools/call requests this process was handling at once.",
                    },
                }
            ),
        ),
    ]


def _extra_tool() -> types.Tool:
    return _tool(EXTRA_TOOL, "Extra tool", "A tool toggle_extra_tool adds and removes.", dict(_NO_ARGUMENTS))


BASE_TOOL_NAMES: tuple[str, ...] = tuple(tool.name for tool in _base_tools())


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=_text(text), isError=True)


class DemoServer(Server[dict[str, Any], Any]):
    """A low-level MCP server that owns its per-process state and advertises ``tools.listChanged``."""

    def __init__(self) -> None:
        super().__init__(
            SERVER_NAME,
            version=SERVER_VERSION,
            instructions="Demo tools for purra-jupyter: search a tiny corpus, echo, add, sleep and more.",
        )
        self.extra_tool_listed = False
        self.notes: dict[str, str] = {}  # id -> text, in the order added
        self.notes_added = 0
        self.call_counts: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        # What it wrote on stderr (the last SAID_LINES lines): a client in this same process reads it here.
        self.said: deque[str] = deque(maxlen=SAID_LINES)

    def say(self, line: str) -> None:
        """A line on stderr, where a person sees it (and a client over stdio reads it), kept in ``said`` too."""
        self.said.append(line)
        print(line, file=sys.stderr, flush=True)

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        # StreamableHTTPSessionManager calls this without arguments; announce list_changed support anyway.
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities
        )

    def listed_tools(self) -> list[types.Tool]:
        tools = _base_tools()
        if self.extra_tool_listed:
            tools.append(_extra_tool())
        return tools


def build_server() -> DemoServer:
    """Build a fresh demo server; each instance has its own extra-tool flag and call counters."""
    server = DemoServer()

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return server.listed_tools()

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> ToolAnswer:
        match name:
            case "search_documents":
                hits = corpus.search(arguments["query"], arguments["limit"])
                lines = [f"{hit['id']}\t{hit['score']:.3f}\t{hit['title']}" for hit in hits]
                return _text("\n".join(lines) if lines else "no documents matched"), {"hits": hits}
            case "get_document":
                document = corpus.get_document(arguments["id"])
                if document is None:
                    return _error(f"unknown document id: {arguments['id']}")
                structured = {"id": document.id, "title": document.title, "body": document.body}
                return _text(f"{document.title}\n\n{document.body}"), structured
            case "echo":
                return _text(arguments["text"]), {"text": arguments["text"]}
            case "add":
                total = arguments["a"] + arguments["b"]
                if not math.isfinite(total):
                    return _error("the sum is not a finite number")
                return _text(str(total)), {"sum": total}
            case "sleep":
                seconds = arguments["seconds"]
                # One stderr line per sleep: lets a person (and the interrupt tests) see the call in flight.
                request_id = server.request_context.request_id
                server.say(f"sleep: {seconds:g} s (request {request_id})")
                try:
                    await anyio.sleep(seconds)
                except anyio.get_cancelled_exc_class():
                    # The client sent notifications/cancelled for this request (or left): stop, and say so.
                    server.say(f"sleep: cancelled (request {request_id})")
                    raise
                return _text(f"slept {seconds} s"), {"slept": seconds}
            case "greet":
                return _text(f"Hello, {arguments['name']}{arguments.get('punctuation', '!')}")
            case "tiny_image":
                return [
                    types.TextContent(type="text", text="a 4x4 checkerboard PNG"),
                    types.ImageContent(type="image", data=TINY_PNG_BASE64, mimeType="image/png"),
                ]
            case "fail":
                return _error(arguments["message"])
            case "toggle_extra_tool":
                server.extra_tool_listed = not server.extra_tool_listed
                context = server.request_context
                # related_request_id routes the notification onto this call's own response stream.
                # Over Streamable HTTP an unrelated notification goes to the standalone GET stream instead,
                # and is silently dropped if the client has not opened that stream yet.
                await context.session.send_notification(
                    types.ServerNotification(types.ToolListChangedNotification()),
                    related_request_id=context.request_id,
                )
                listed = server.extra_tool_listed
                return _text(f"extra_tool {'listed' if listed else 'removed'}"), {"extra_tool_listed": listed}
            case "call_counts":
                counts = dict(sorted(server.call_counts.items()))
                text = "\n".join(f"{tool}\t{count}" for tool, count in counts.items()) or "no calls yet"
                text += f"\nmost calls in flight at once\t{server.max_in_flight}"
                return _text(text), {"counts": counts, "max_in_flight": server.max_in_flight}
            case "list_notes":
                notes = [{"id": key, "text": text} for key, text in server.notes.items()]
                return _text("\n".join(f"{n['id']}\t{n['text']}" for n in notes) or "no notes"), {"notes": notes}
            case "add_note":
                delay = arguments.get("delay_seconds", 0)
                if delay:
                    request_id = server.request_context.request_id
                    server.say(f"add_note: waiting {delay:g} s (request {request_id})")
                    try:
                        await anyio.sleep(delay)
                    except anyio.get_cancelled_exc_class():  # notifications/cancelled: nothing is stored
                        server.say(f"add_note: cancelled before storing (request {request_id})")
                        raise
                server.notes_added += 1
                key = f"note-{server.notes_added}"
                server.notes[key] = arguments["text"]
                return _text(f"added {key}"), {"id": key, "count": len(server.notes)}
            case "delete_note":
                if server.notes.pop(arguments["id"], None) is None:
                    return _error(f"no note {arguments['id']}")
                return _text(f"deleted {arguments['id']}"), {"id": arguments["id"], "count": len(server.notes)}
            case "extra_tool" if server.extra_tool_listed:
                return _text("extra")
            case _:
                return _error(f"unknown tool: {name}")

    # Count every finished tools/call request (answered, refused by input validation, failed or cancelled).
    # The count is taken after the handler returns, so call_counts never includes the call reporting it.
    # The requests in flight (this one included) give max_in_flight: what a client's concurrency really was.
    handle_call = server.request_handlers[types.CallToolRequest]

    async def counted_call(request: types.CallToolRequest) -> types.ServerResult:
        server.in_flight += 1
        server.max_in_flight = max(server.max_in_flight, server.in_flight)
        try:
            return await handle_call(request)
        finally:
            server.in_flight -= 1
            server.call_counts[request.params.name] += 1

    server.request_handlers[types.CallToolRequest] = counted_call
    _offer_documents(server)
    return server


DOCUMENT_TEMPLATE = "demo://documents/{id}"
CHECKERBOARD_URI = "demo://images/checkerboard.png"
SUMMARIZE = "summarize"


def _offer_documents(server: DemoServer) -> None:
    """Beside the tools: each corpus document as a resource (and a template), the checkerboard image, a prompt
    that embeds a document, and completions of document ids (what a person explores with s.resources and
    s.prompts)."""
    from mcp.server.lowlevel.helper_types import ReadResourceContents
    from pydantic import AnyUrl

    @server.list_resources()
    async def list_resources() -> list[types.Resource]:
        documents = [types.Resource(uri=AnyUrl(DOCUMENT_TEMPLATE.replace("{id}", d.id)), name=d.id, title=d.title,
                                    mimeType="text/markdown") for d in corpus.DOCUMENTS]  # fmt: skip
        image = types.Resource(uri=AnyUrl(CHECKERBOARD_URI), name="checkerboard.png", mimeType="image/png",
                               size=len(tiny_png()))  # fmt: skip
        return [*documents, image]

    @server.list_resource_templates()
    async def list_templates() -> list[types.ResourceTemplate]:
        return [types.ResourceTemplate(uriTemplate=DOCUMENT_TEMPLATE, name="document", title="A corpus document",
                                       mimeType="text/markdown")]  # fmt: skip

    @server.read_resource()
    async def read_resource(uri: AnyUrl) -> list[ReadResourceContents]:
        if str(uri) == CHECKERBOARD_URI:
            return [ReadResourceContents(tiny_png(), "image/png")]
        if str(uri) == NOTES_VIEW_URI:
            return [ReadResourceContents(notes_view(), VIEW_MIME, meta={"ui": {"prefersBorder": True}})]
        document = corpus.get_document(str(uri).removeprefix(DOCUMENT_TEMPLATE.replace("{id}", "")))
        if document is None:
            raise ValueError(f"no resource {uri}")
        return [ReadResourceContents(f"# {document.title}\n\n{document.body}\n", "text/markdown")]

    argument = types.PromptArgument(name="id", description="a document id", required=True)
    summarize = types.Prompt(name=SUMMARIZE, title="Summarize a document", description="Ask for a one-line summary",
                             arguments=[argument])  # fmt: skip

    @server.list_prompts()
    async def list_prompts() -> list[types.Prompt]:
        return [summarize]

    @server.get_prompt()
    async def get_prompt(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        document = corpus.get_document((arguments or {}).get("id", "")) if name == SUMMARIZE else None
        if document is None:
            raise ValueError(f"no prompt {name} for those arguments")
        resource = types.TextResourceContents(uri=AnyUrl(DOCUMENT_TEMPLATE.replace("{id}", document.id)),
                                              mimeType="text/markdown", text=document.body)  # fmt: skip
        return types.GetPromptResult(description=summarize.description, messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text="Summarize in one line:")),
            types.PromptMessage(role="user", content=types.EmbeddedResource(type="resource", resource=resource)),
        ])  # fmt: skip

    @server.completion()
    async def complete(ref: Any, argument: types.CompletionArgument, context: Any) -> types.Completion:
        ids = [d.id for d in corpus.DOCUMENTS if d.id.startswith(argument.value)] if argument.name == "id" else []
        return types.Completion(values=ids, total=len(ids), hasMore=False)


def notes_view() -> str:
    """The HTML of list_notes' view (a file beside this module)."""
    return resources.files("purra_jupyter.demo").joinpath("notes_view.html").read_text(encoding="utf-8")


def tiny_png() -> bytes:
    """The decoded bytes of the image ``tiny_image`` returns."""
    return base64.b64decode(TINY_PNG_BASE64)

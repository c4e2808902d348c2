"""The embedded demo MCP server, driven as a real process over stdio and Streamable HTTP (no mocks)."""

from __future__ import annotations

import base64
import json
import os
import signal
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import jsonschema
import purra_mcp
import pytest
from conftest import DemoHttpServer
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client
from purra.contracts import ToolPolicy

from purra_jupyter.demo import READY_STDIO, main
from purra_jupyter.demo.transports import parse_http_address

ROOT = Path(__file__).resolve().parents[1]
DEADLINE = 20.0  # seconds; an upper bound for each wait, never a fixed sleep
BASE_TOOLS = {
    "search_documents",
    "get_document",
    "echo",
    "add",
    "sleep",
    "greet",
    "tiny_image",
    "fail",
    "toggle_extra_tool",
    "call_counts",
    "list_notes",
    "add_note",
    "delete_note",
}
# (readOnlyHint, destructiveHint) of the notes store's writes; every other tool says it only reads
WRITE_HINTS = {"add_note": (False, False), "delete_note": (False, True)}
COMPATIBLE_TOOLS = sorted(BASE_TOOLS - {"greet"})
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PROTOCOLS = {"2025-11-25", "2025-06-18"}


def _server_env() -> dict[str, str]:
    # The SDK passes only a minimal environment to stdio servers; make the package importable regardless.
    return {**get_default_environment(), "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}


def _read_policy(name: str) -> ToolPolicy:
    return ToolPolicy(mode="read", title=f"Demo {name}", risk_level="read")


def _bindings(*names: str) -> dict[str, purra_mcp.McpToolBinding]:
    return {name: purra_mcp.McpToolBinding(name, _read_policy(name), None) for name in names}


async def _discover(
    session: ClientSession, monitor: purra_mcp.McpCatalogMonitor, *names: str
) -> purra_mcp.McpToolCatalog:
    return await purra_mcp.discover_mcp_tools(session, "demo", _bindings(*names), monitor=monitor)


@dataclass
class Recorder:
    """message_handler that feeds the PurrA monitor and records list_changed notifications and errors."""

    monitor: purra_mcp.McpCatalogMonitor = field(default_factory=purra_mcp.McpCatalogMonitor)
    errors: list[Exception] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[types.ToolListChangedNotification](100)

    async def __call__(self, message: Any) -> None:
        await self.monitor.on_message(message)
        if isinstance(message, Exception):
            self.errors.append(message)
        elif isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            self._send.send_nowait(message.root)

    async def next_list_changed(self) -> types.ToolListChangedNotification:
        with anyio.fail_after(DEADLINE):
            return await self._receive.receive()


async def _tool_map(session: ClientSession) -> dict[str, types.Tool]:
    return {tool.name: tool for tool in (await session.list_tools()).tools}


def _text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def _assert_png(data: bytes) -> None:
    assert data.startswith(PNG_SIGNATURE)
    position, chunks = len(PNG_SIGNATURE), {}
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind, body = data[position + 4 : position + 8], data[position + 8 : position + 8 + length]
        (crc,) = struct.unpack(">I", data[position + 8 + length : position + 12 + length])
        assert zlib.crc32(kind + body) == crc, kind
        chunks[kind] = chunks.get(kind, b"") + body
        position += 12 + length
    width, height = struct.unpack(">II", chunks[b"IHDR"][:8])
    assert (width, height) == (4, 4)
    assert len(zlib.decompress(chunks[b"IDAT"])) == height * (1 + 3 * width)
    assert b"IEND" in chunks


# --------------------------------------------------------------------------------------------- stdio


async def _stdio_scenario(errlog_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "purra_jupyter.demo"], env=_server_env(), cwd=str(ROOT)
    )
    recorder = Recorder()
    monitor = recorder.monitor
    with errlog_path.open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, message_handler=recorder) as session,
        ):
            with anyio.fail_after(DEADLINE):
                init = await session.initialize()
            assert init.protocolVersion in PROTOCOLS
            assert init.capabilities.tools is not None and init.capabilities.tools.listChanged is True
            monitor.accept_protocol_version(init.protocolVersion)

            tools = await _tool_map(session)
            assert set(tools) == BASE_TOOLS
            for tool in tools.values():
                assert tool.title and tool.description
                assert tool.annotations is not None
                hints = (tool.annotations.readOnlyHint, tool.annotations.destructiveHint)
                assert hints == WRITE_HINTS.get(tool.name, (True, False)), tool.name
                assert tool.annotations.openWorldHint is False

            # PurrA accepts every tool but greet, whose schema uses the refused keyword "default".
            for name in COMPATIBLE_TOOLS:
                catalog = await _discover(session, monitor, name)
                assert [entry["remoteName"] for entry in catalog.snapshot.entries] == [name]
            with pytest.raises(purra_mcp.McpAdapterError) as refused:
                await _discover(session, monitor, "greet")
            assert refused.value.code == "mcp_schema_unsupported"

            # A discovered read tool runs end to end through the PurrA registration.
            catalog = await _discover(session, monitor, "echo", "add")
            registrations = {registration.schema.name: registration for registration in catalog.registrations}
            outcome = await registrations["echo"].handler(None, {"text": "via purra"})
            assert outcome.error_code is None
            assert json.loads(outcome.content) == {"text": ["via purra"], "structured": {"text": "via purra"}}

            # search_documents: schema-valid, sorted, bounded and deterministic.
            arguments = {"query": "MCP tool schema", "limit": 3}
            first = await session.call_tool("search_documents", arguments)
            second = await session.call_tool("search_documents", arguments)
            assert first.isError is False and first.structuredContent is not None
            jsonschema.validate(first.structuredContent, tools["search_documents"].outputSchema)
            hits = first.structuredContent["hits"]
            assert 1 <= len(hits) <= 3
            assert all(hit["score"] > 0 for hit in hits)
            assert hits == sorted(hits, key=lambda hit: (-hit["score"], hit["id"]))
            assert second.structuredContent == first.structuredContent
            assert _text_of(second) == _text_of(first)
            assert len(_text_of(first).splitlines()) == len(hits)

            document = await session.call_tool("get_document", {"id": hits[0]["id"]})
            assert document.isError is False and document.structuredContent is not None
            assert document.structuredContent["id"] == hits[0]["id"]
            jsonschema.validate(document.structuredContent, tools["get_document"].outputSchema)
            unknown = await session.call_tool("get_document", {"id": "doc-999"})
            assert unknown.isError is True

            echoed = await session.call_tool("echo", {"text": "héllo\nworld"})
            assert echoed.structuredContent == {"text": "héllo\nworld"} and _text_of(echoed) == "héllo\nworld"
            added = await session.call_tool("add", {"a": 2, "b": 0.5})
            assert added.structuredContent == {"sum": 2.5}
            refused_input = await session.call_tool("add", {"a": "two", "b": 1})
            assert refused_input.isError is True
            slept = await session.call_tool("sleep", {"seconds": 0})
            assert slept.structuredContent == {"slept": 0} and _text_of(slept) == "slept 0 s"
            greeted = await session.call_tool("greet", {"name": "Ada"})
            assert _text_of(greeted) == "Hello, Ada!"

            image = await session.call_tool("tiny_image", {})
            assert image.isError is False
            images = [block for block in image.content if isinstance(block, types.ImageContent)]
            assert len(images) == 1 and images[0].mimeType == "image/png"
            _assert_png(base64.b64decode(images[0].data, validate=True))
            assert any(isinstance(block, types.TextContent) for block in image.content)

            failed = await session.call_tool("fail", {"message": "boom on purpose"})
            assert failed.isError is True and _text_of(failed) == "boom on purpose"

            # toggle_extra_tool: list_changed reaches the client, the listing grows, the catalog goes stale.
            assert catalog.stale is False
            toggled = await session.call_tool("toggle_extra_tool", {})
            assert toggled.structuredContent == {"extra_tool_listed": True}
            await recorder.next_list_changed()
            assert catalog.stale is True
            tools = await _tool_map(session)
            assert set(tools) == BASE_TOOLS | {"extra_tool"}
            extra = await session.call_tool("extra_tool", {})
            assert extra.isError is False and _text_of(extra) == "extra"
            toggled = await session.call_tool("toggle_extra_tool", {})
            assert toggled.structuredContent == {"extra_tool_listed": False}
            await recorder.next_list_changed()
            assert set(await _tool_map(session)) == BASE_TOOLS

            counts = await session.call_tool("call_counts", {})
            jsonschema.validate(counts.structuredContent, tools["call_counts"].outputSchema)
            assert counts.structuredContent == {
                "counts": {
                    "add": 2,
                    "echo": 2,
                    "extra_tool": 1,
                    "fail": 1,
                    "get_document": 2,
                    "greet": 1,
                    "search_documents": 2,
                    "sleep": 1,
                    "tiny_image": 1,
                    "toggle_extra_tool": 2,
                },
                "max_in_flight": 1,  # this client sent one request at a time
            }
            again = await session.call_tool("call_counts", {})
            assert again.structuredContent is not None
            assert again.structuredContent["counts"]["call_counts"] == 1
            assert recorder.errors == []  # nothing but protocol messages ever reached stdout

    assert errlog_path.read_text(encoding="utf-8").splitlines().count(READY_STDIO) == 1


def test_stdio_server_tools_and_purra_compatibility(tmp_path: Path) -> None:
    anyio.run(_stdio_scenario, tmp_path / "stderr.txt")


# -------------------------------------------------------------------------------------- Streamable HTTP


async def _http_scenario(url: str) -> None:
    recorder = Recorder()
    async with (
        httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(DEADLINE, read=300)) as http,
        streamable_http_client(url, http_client=http) as (read, write, get_session_id),
        ClientSession(read, write, message_handler=recorder) as session,
    ):
        with anyio.fail_after(DEADLINE):
            init = await session.initialize()
        assert init.protocolVersion in PROTOCOLS
        assert init.capabilities.tools is not None and init.capabilities.tools.listChanged is True
        assert get_session_id()  # stateful session
        recorder.monitor.accept_protocol_version(init.protocolVersion)

        catalog = await _discover(session, recorder.monitor, "echo")
        echoed = await session.call_tool("echo", {"text": "over http"})
        assert echoed.structuredContent == {"text": "over http"} and _text_of(echoed) == "over http"

        toggled = await session.call_tool("toggle_extra_tool", {})
        assert toggled.structuredContent == {"extra_tool_listed": True}
        await recorder.next_list_changed()
        assert catalog.stale is True
        assert set(await _tool_map(session)) == BASE_TOOLS | {"extra_tool"}
        assert recorder.errors == []

        # DNS-rebinding protection: a request naming a foreign Host is refused.
        foreign = await http.post(
            url,
            headers={"Host": "attacker.example", "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        assert foreign.status_code == 421


def test_streamable_http_server(demo_http_server: DemoHttpServer) -> None:
    http_server = demo_http_server
    assert http_server.url.startswith("http://127.0.0.1:") and http_server.url.endswith("/mcp")
    anyio.run(_http_scenario, http_server.url)

    http_server.process.send_signal(signal.SIGTERM)
    assert http_server.process.wait(timeout=DEADLINE) == 0
    assert "Traceback" not in http_server.stderr_rest()


# --------------------------------------------------------------------------------------------- refusals


def test_non_loopback_host_exits_with_code_2() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "purra_jupyter.demo", "--http", "0.0.0.0:0"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert completed.returncode == 2
    assert "non-loopback" in completed.stderr
    assert completed.stdout == ""


@pytest.mark.parametrize("address", ["0.0.0.0:0", "[::]:0", "192.168.1.10:80", "example.com:0", "127.0.0.1"])
def test_refused_http_addresses(address: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--http", address]) == 2
    assert capsys.readouterr().err.startswith("error: ")


@pytest.mark.parametrize(
    ("address", "expected"),
    [("127.0.0.1:0", ("127.0.0.1", 0)), ("localhost:8080", ("127.0.0.1", 8080)), ("[::1]:0", ("::1", 0))],
)
def test_accepted_http_addresses(address: str, expected: tuple[str, int]) -> None:
    assert parse_http_address(address) == expected

"""The demo server's built-in document corpus and its deterministic term-overlap search."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    title: str
    body: str


DOCUMENTS: tuple[Document, ...] = (
    Document(
        "doc-1",
        "What the Model Context Protocol is",
        "The Model Context Protocol (MCP) is an open protocol that lets an application expose tools, "
        "resources and prompts to a language model host over JSON-RPC.",
    ),
    Document(
        "doc-2",
        "MCP transports: stdio and Streamable HTTP",
        "An MCP server speaks either over stdio, one JSON-RPC message per line, or over Streamable HTTP, "
        "where each request is a POST and server messages may arrive as server-sent events.",
    ),
    Document(
        "doc-3",
        "Tool schemas in MCP",
        "Every MCP tool declares an input schema and may declare an output schema; both are JSON Schema "
        "objects that describe the arguments and the structured result of a call.",
    ),
    Document(
        "doc-4",
        "PurrA read tools",
        "A PurrA host binds remote MCP tools as read tools with a host-owned policy, validates every "
        "argument against the tool schema and refuses schemas outside its output-schema profile.",
    ),
    Document(
        "doc-5",
        "The PurrA output-schema profile",
        "The purra.output-schema/v1 profile allows a small JSON Schema subset: type, properties, required, "
        "items, enum, const, bounds and unions; keywords such as default, format and pattern are refused.",
    ),
    Document(
        "doc-6",
        "Evaluating tools from Jupyter",
        "A Jupyter notebook can start an MCP server, list its tools, check each tool against the PurrA "
        "profile and call the accepted ones, showing results as tables.",
    ),
    Document(
        "doc-7",
        "Tool list changes",
        "When a server adds or removes a tool it sends notifications/tools/list_changed; a host must treat "
        "its catalog as stale and list the tools again before the next call.",
    ),
    Document(
        "doc-8",
        "Timeouts and cancellation",
        "A host bounds every tool call with a timeout; when a call is interrupted the client sends "
        "notifications/cancelled so the server can stop the work.",
    ),
)

_BY_ID = {document.id: document for document in DOCUMENTS}
_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "the",
        "to",
        "what",
        "when",
        "which",
        "with",
    }
)
_TOKEN = re.compile(r"[a-z0-9]+")


def _terms(text: str) -> list[str]:
    return [token for token in _TOKEN.findall(text.lower()) if token not in _STOPWORDS]


def get_document(document_id: str) -> Document | None:
    return _BY_ID.get(document_id)


def score(query: str, document: Document) -> float:
    """Share of the distinct query terms found in the document: 1 per title hit, 0.5 per body-only hit."""
    terms = sorted(set(_terms(query)))
    if not terms:
        return 0.0
    title, body = set(_terms(document.title)), set(_terms(document.body))
    total = sum(1.0 if term in title else 0.5 if term in body else 0.0 for term in terms)
    return round(total / len(terms), 3)


def search(query: str, limit: int) -> list[dict[str, object]]:
    """Hits with a positive score, best first, ties broken by id, at most ``limit`` of them."""
    scored = [(score(query, document), document) for document in DOCUMENTS]
    ranked = sorted((item for item in scored if item[0] > 0), key=lambda item: (-item[0], item[1].id))
    return [{"id": doc.id, "title": doc.title, "score": value} for value, doc in ranked[:limit]]

"""The open sessions of this process, by name: ``session.registry`` is the one, which ``connect`` adds to and a session
leaves when it closes."""

from __future__ import annotations

import difflib
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Generic, Protocol, TypeVar

from .._base.errors import McpSessionError
from .._base.wire import CONNECTION_CLOSED, SESSION_EXISTS, SESSION_UNKNOWN


class Registered(Protocol):
    """What the registry needs of a session."""

    @property
    def name(self) -> str: ...

    @property
    def cause(self) -> str: ...

    def close(self, cause: str = ...) -> None: ...


Session = TypeVar("Session", bound=Registered)

CLOSED_KEPT = 64  # closed sessions whose name still says "closed" (not "unknown") until reused


class SessionRegistry(Generic[Session]):
    """The open sessions of this process, by name (and the names being connected); the names of the last
    ``CLOSED_KEPT`` closed ones, so using one says it was closed and why."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._reserved: set[str] = set()
        self._closed: OrderedDict[str, str] = OrderedDict()  # name -> why it closed
        self._lock = threading.Lock()

    @contextmanager
    def reserving(self, name: str) -> Iterator[None]:
        """Hold ``name`` while a session of that name connects; ``mcp_session_exists`` if it is taken."""
        with self._lock:
            if name in self._sessions or name in self._reserved:
                raise McpSessionError(
                    SESSION_EXISTS,
                    f"A session named '{name}' is already open. Close it first "
                    f"(pj.sessions() lists them) or choose another name.",
                )
            self._reserved.add(name)
        try:
            yield
        finally:
            with self._lock:
                self._reserved.discard(name)

    def add(self, session: Session) -> None:
        with self._lock:
            self._sessions[session.name] = session
            self._closed.pop(session.name, None)

    def remove(self, session: Session) -> None:
        with self._lock:
            if self._sessions.get(session.name) is session:
                del self._sessions[session.name]
                self._closed[session.name] = session.cause
                while len(self._closed) > CLOSED_KEPT:
                    self._closed.popitem(last=False)

    def get(self, name: str) -> Session:
        with self._lock:
            session, cause = self._sessions.get(name), self._closed.get(name)
        if session is None and cause is not None:
            raise McpSessionError(
                CONNECTION_CLOSED,
                f"Session '{name}' is closed ({cause}). Open a new one with %mcp_connect or pj.connect().",
            )
        if session is None:
            near = difflib.get_close_matches(name, [open_one.name for open_one in self.list()], n=1)
            guess = f" Did you mean '{near[0]}'?" if near else ""
            raise McpSessionError(
                SESSION_UNKNOWN, f"No session named '{name}'.{guess} Open one with %mcp_connect or pj.connect()."
            )
        return session

    def find(self, name: str) -> Session | None:
        """The open session named ``name``, if there is one."""
        with self._lock:
            return self._sessions.get(name)

    def list(self) -> list[Session]:
        with self._lock:
            return sorted(self._sessions.values(), key=lambda s: s.name)

    def close_all(self, cause: str = "closed with all sessions") -> None:
        for session in self.list():
            session.close(cause)


__all__ = ["CLOSED_KEPT", "Registered", "SessionRegistry"]

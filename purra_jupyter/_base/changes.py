"""Values that change as a call or a batch runs (its state, its counts), which widgets follow, without traitlets.

traitlets validates and notifies through several layers on every set, which costs more than a trivial call's own
work, and a call decided in code has nobody watching: here a change nobody follows costs an attribute write and a
dict lookup. The face is traitlets' (``observe``, ``unobserve``, handlers given a change dict), so a widget follows a
call as it follows any trait.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

Handler = Callable[[dict[str, Any]], None]


class Observed:
    """Attributes set with ``_change`` tell the handlers observing them, in the order they were added, when their value
    changes (from whichever thread sets it); a handler that raises stops the others, as in traitlets."""

    def __init__(self) -> None:
        self._handlers: dict[str, list[Handler]] = {}

    def observe(self, handler: Handler, names: str | Iterable[str]) -> None:
        for name in _names(names):
            self._handlers.setdefault(name, []).append(handler)

    def unobserve(self, handler: Handler, names: str | Iterable[str]) -> None:
        for name in _names(names):
            handlers = self._handlers.get(name, [])
            if handler in handlers:
                handlers.remove(handler)

    def _change(self, name: str, value: Any) -> None:
        old = getattr(self, name)
        if _same(old, value):
            return
        setattr(self, name, value)
        for handler in tuple(self._handlers.get(name, ())):
            handler({"name": name, "old": old, "new": value, "owner": self, "type": "change"})


def _same(old: Any, new: Any) -> bool:
    """Whether a value did not change: the same object, or equal plain values (a DataFrame's ``==`` is a table)."""
    return old is new or (type(old) is type(new) and isinstance(old, (str, int, float)) and old == new)


def _names(names: str | Iterable[str]) -> tuple[str, ...]:
    return (names,) if isinstance(names, str) else tuple(names)


__all__ = ["Handler", "Observed"]

"""Values made of an object, found again by that object: a catalog's tool keeps its schema object for the catalog's
revision, so a call finds the schema's contract or checker by it instead of writing the schema out to look it up."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class ByObject(Generic[K, V]):
    """At most ``size`` values, each kept with the object it was made of (so that object's id stays its own), the
    oldest dropped first."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._kept: dict[Hashable, tuple[K, V]] = {}

    def get(self, key: K, make: Callable[[], V], *extra: Hashable) -> V:
        """The value made of ``key`` (and ``extra``, part of the key by value), made by ``make()`` the first time."""
        slot = (id(key), *extra)
        kept = self._kept.get(slot)
        if kept is None or kept[0] is not key:
            kept = self._kept[slot] = (key, make())
            while len(self._kept) > self._size:
                self._kept.pop(next(iter(self._kept)))
        return kept[1]


__all__ = ["ByObject"]

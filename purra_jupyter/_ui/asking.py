"""Where a person can be asked something while a call runs after a click (the kernel is idle then, so a widget's
click arrives): the box under each running call's approval widget, by its session's name, the latest first."""

from __future__ import annotations

import threading

import ipywidgets as widgets


class Asked(widgets.VBox):
    """A question shown in a box; ``withdraw`` ends it unanswered (its call stopped running)."""

    def withdraw(self) -> None:
        raise NotImplementedError


class QuestionBoxes:
    """The boxes of the calls running now (``approval`` adds and removes them; ``questions`` fills them)."""

    def __init__(self) -> None:
        self._boxes: list[tuple[str, widgets.Box]] = []
        self._lock = threading.Lock()

    def add(self, server: str, box: widgets.Box) -> None:
        with self._lock:
            self._boxes.insert(0, (server, box))

    def discard(self, box: widgets.Box) -> None:
        """``box``'s call stopped running: no question goes there any more, and those it shows end unanswered."""
        with self._lock:
            self._boxes = [(name, each) for name, each in self._boxes if each is not box]
        for question in box.children:
            if isinstance(question, Asked):
                question.withdraw()

    def of(self, server: str) -> widgets.Box | None:
        """The box of ``server``'s latest running call, if one shows."""
        with self._lock:
            return next((box for name, box in self._boxes if name == server), None)


boxes = QuestionBoxes()

__all__ = ["Asked", "QuestionBoxes", "boxes"]

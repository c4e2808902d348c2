"""Where a person can be asked something while a call runs after a click (the kernel is idle then, so a widget's
click arrives): the box under each running call's approval widget, by the call (its token): a question reaches only
the box of the call it belongs to."""

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
        self._boxes: list[tuple[object, widgets.Box]] = []
        self._lock = threading.Lock()

    def add(self, call: object, box: widgets.Box) -> None:
        with self._lock:
            self._boxes.insert(0, (call, box))

    def discard(self, box: widgets.Box) -> None:
        """``box``'s call stopped running: no question goes there any more, and those it shows end unanswered."""
        with self._lock:
            self._boxes = [(name, each) for name, each in self._boxes if each is not box]
        for question in box.children:
            if isinstance(question, Asked):
                question.withdraw()

    def of(self, call: object) -> widgets.Box | None:
        """The box of ``call`` (a running call's token), if it shows."""
        with self._lock:
            return next((box for each, box in self._boxes if each is call), None)


boxes = QuestionBoxes()

__all__ = ["Asked", "QuestionBoxes", "boxes"]

"""JUnit XML, as CI systems read test reports: one suite of cases, each passed, failed or in error.

Every text is made visible first (``names.visible``: control and invisible characters as escapes), so a server's
words can neither break the XML (characters XML 1.0 forbids) nor hide in it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from dataclasses import dataclass

from .names import visible


@dataclass(frozen=True)
class Case:
    """One test case: ``failure`` (an unmet check) or ``error`` (it could not run) say why it did not pass, in one
    line (``message``) and in full (``detail``); ``output`` is what it says when it passed or was not required."""

    classname: str
    name: str
    failure: str | None = None
    error: str | None = None
    kind: str = ""  # the failure's or error's type attribute: a code
    detail: str = ""
    output: str = ""


def suite(name: str, cases: Sequence[Case]) -> str:
    """The XML document of one ``<testsuite>`` holding ``cases``, with its counts."""
    root = ElementTree.Element("testsuite", name=visible(name), tests=str(len(cases)))
    root.set("failures", str(sum(case.failure is not None for case in cases)))
    root.set("errors", str(sum(case.error is not None for case in cases)))
    for case in cases:
        element = ElementTree.SubElement(root, "testcase", classname=visible(case.classname), name=visible(case.name))
        for tag, message in (("failure", case.failure), ("error", case.error)):
            if message is not None:
                outcome = ElementTree.SubElement(element, tag, message=visible(message), type=visible(case.kind))
                outcome.text = _lines(case.detail)
        if case.output:
            ElementTree.SubElement(element, "system-out").text = _lines(case.output)
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True)


def _lines(text: str) -> str:
    return "\n".join(visible(line) for line in text.splitlines())


__all__ = ["Case", "suite"]

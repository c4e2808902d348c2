"""JUnit XML, as CI systems read test reports: one suite of cases, each passed, failed or in error.

Every text is made one line first (``egress.cli_text``: control characters, line breaks included, and invisible ones
as escapes; no line starting with a workflow command), so a server's words can neither break the XML (characters
XML 1.0 forbids) nor hide in it, nor start a line a CI runner acts on; a detail of several texts is one line each.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from dataclasses import dataclass

from .egress import cli_text


@dataclass(frozen=True)
class Case:
    """One test case: ``failure`` (an unmet check) or ``error`` (it could not run) say why it did not pass, in one
    line (``message``) and in full (``detail``); ``output`` is what it says when it passed or was not required."""

    classname: str
    name: str
    failure: str | None = None
    error: str | None = None
    kind: str = ""  # the failure's or error's type attribute: a code
    detail: Sequence[str] = ()  # each text on a line of its own
    output: Sequence[str] = ()


def suite(name: str, cases: Sequence[Case]) -> str:
    """The XML document of one ``<testsuite>`` holding ``cases``, with its counts."""
    root = ElementTree.Element("testsuite", name=cli_text(name), tests=str(len(cases)))
    root.set("failures", str(sum(case.failure is not None for case in cases)))
    root.set("errors", str(sum(case.error is not None for case in cases)))
    for case in cases:
        element = ElementTree.SubElement(root, "testcase", classname=cli_text(case.classname), name=cli_text(case.name))
        for tag, message in (("failure", case.failure), ("error", case.error)):
            if message is not None:
                outcome = ElementTree.SubElement(element, tag, message=cli_text(message), type=cli_text(case.kind))
                outcome.text = _lines(case.detail)
        if case.output:
            ElementTree.SubElement(element, "system-out").text = _lines(case.output)
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True)


def _lines(texts: Sequence[str]) -> str:
    return "\n".join(cli_text(text) for text in texts)


__all__ = ["Case", "suite"]

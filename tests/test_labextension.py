"""The prebuilt JupyterLab extension: installed and enabled, shipped in the wheel, and free of HTML injection."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

from purra_jupyter._purra.catalog import catalog_labels
from purra_jupyter._purra.envelope import envelope_labels, raw_result_labels
from purra_jupyter._ui.records import widget_labels

ROOT = Path(__file__).parent.parent
NAME = "purra-jupyter-renderers"
# The one version: labextension/package.json's, which pyproject.toml reads (hatch-nodejs-version).
VERSION = json.loads((ROOT / "labextension" / "package.json").read_text())["version"]


def test_jupyter_lists_the_extension_enabled_and_ok() -> None:
    jupyter = Path(sys.executable).parent / "jupyter"
    listed = subprocess.run([str(jupyter), "labextension", "list"], capture_output=True, text=True, check=True)
    text = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)
    assert re.search(rf"{NAME} v{re.escape(VERSION)} enabled\s+OK \(python, purra-jupyter\)", text), text


def test_the_wheel_carries_the_prebuilt_extension_and_its_types(tmp_path: Path) -> None:
    """The extension, prebuilt; and ``py.typed``, so a user's type checker reads the package's annotations."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(tmp_path), str(ROOT)],
        check=True,
        timeout=600,
    )
    [wheel] = tmp_path.glob("purra_jupyter-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    prefix = f"purra_jupyter-{VERSION}.data/data/share/jupyter/labextensions/{NAME}/"
    assert f"{prefix}package.json" in names and f"{prefix}install.json" in names
    assert any(name.startswith(f"{prefix}static/remoteEntry.") for name in names)
    assert "purra_jupyter/py.typed" in names


def test_the_version_is_written_in_one_tracked_file() -> None:
    """package.json holds it; the Python package's metadata reads it from there, so no second copy can drift."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    pattern = re.compile(rf"(?<![\w.]){re.escape(VERSION)}(?![\w.])")
    holders = [
        name
        for name in tracked
        if not name.endswith((".lock", "-lock.json", ".whl"))
        and (ROOT / name).is_file()
        and pattern.search((ROOT / name).read_text(errors="replace"))
    ]
    assert holders == ["labextension/package.json"], holders
    assert version("purra-jupyter") == VERSION


def test_no_html_injection_point_in_the_renderer_source() -> None:
    pattern = re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|dangerouslySetInnerHTML|document\.write|\beval\(")
    sources = list((ROOT / "labextension" / "src").rglob("*.ts"))
    assert sources
    for source in sources:
        assert not pattern.search(source.read_text()), source


def label_words(labels: object) -> list[str]:
    """Every string in a payload's ``labels`` (effect notes are nested one level)."""
    if isinstance(labels, dict):
        return [word for value in labels.values() for word in label_words(value)]
    return [labels] if isinstance(labels, str) else []


def test_the_renderer_source_holds_no_copy_of_the_words_the_payloads_carry() -> None:
    """The kit's fixed words come with each MIME payload (``labels``); the TypeScript reads them there, so a
    sentence typed in it as well would be a second source that drifts. Comments aside; one-word labels such as
    ``callable`` are also field names in the source, so only phrases are looked for."""
    payloads = (envelope_labels(), raw_result_labels(), catalog_labels(), widget_labels("run the cell again"))
    words = [word for labels in payloads for word in label_words(labels)]
    phrases = {word.strip(" —()") for word in words if " " in word.strip()}
    assert len(phrases) >= 7, phrases
    comments = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
    for source in (ROOT / "labextension" / "src").rglob("*.ts"):
        code = comments.sub("", source.read_text())
        assert [phrase for phrase in phrases if phrase in code] == [], source

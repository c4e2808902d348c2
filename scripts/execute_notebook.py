"""Execute a notebook on a real kernel and write the executed copy; exit non-zero on any error."""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def main(source: str, target: str, *flags: str) -> int:
    notebook = nbformat.read(source, as_version=4)
    # No widget state in the file unless asked (--widget-state, as JupyterLab's "save widget state"): a widget
    # left in it would need a kernel (or a CDN) to be drawn, while each of our outputs also carries a static view
    # that every reader (nbconvert, nbviewer, GitHub) can show.
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", store_widget_state="--widget-state" in flags,
                            resources={"metadata": {"path": "notebooks"}})  # fmt: skip
    try:
        client.execute()
    except CellExecutionError as error:
        print(f"{source}: a cell failed:\n{error}", file=sys.stderr)
        return 1
    finally:
        nbformat.write(notebook, target)
    print(f"executed {source} -> {Path(target)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

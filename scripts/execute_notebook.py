"""Execute a notebook on a real kernel and write the executed copy; exit non-zero on any error."""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def main(source: str, target: str) -> int:
    notebook = nbformat.read(source, as_version=4)
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": "notebooks"}})
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
    sys.exit(main(*sys.argv[1:3]))

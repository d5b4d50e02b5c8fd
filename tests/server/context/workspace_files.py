"""Shared by this folder's index tests: files written under a folder, and the folder indexed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from difill.server.context.index import WorkspaceIndex


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@contextmanager
def indexed(root: Path, index: WorkspaceIndex | None = None, timeout: float = 30) -> Iterator[WorkspaceIndex]:
    """``root`` indexed whole by ``index`` (a default one), stopped afterwards."""
    index = index or WorkspaceIndex()
    index.start()
    try:
        index.add_folder(str(root))
        assert index.wait_idle(timeout)
        yield index
    finally:
        index.stop(wait_s=30)  # and its jedi completion, if one runs: none outlives the test

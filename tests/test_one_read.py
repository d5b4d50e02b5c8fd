"""Issue 62's class "every read resolves the real path first", checked on the source (no module
is run): the server reads a user's file in one place, files.py ``read_bytes`` (the real path
inside a workspace folder, the secrets policy asked about the name and the target, a regular file
only, a byte bound).  Every other call under src/difill/server that opens or reads a file is a
finding, unless ``LET_OFF`` names its function with the reason it reads no user file (or reads
one only after ``read_bytes``'s rules were applied).

What counts as a read: ``open(...)``, ``io.open``, ``os.open``, ``os.fdopen``, ``os.read``,
``<anything>.open(...)`` (``Path.open``, ``tarfile.open``), ``.read_text()`` and ``.read_bytes()``
(but files.py's own: the one read), and files.py's ``read_regular`` (the read without the policy).
"""

from __future__ import annotations

import ast

import pytest
from test_imports import sources

pytestmark = pytest.mark.unit

# "module:function" -> why it may read outside files.read_bytes.  Keep it short.
LET_OFF: dict[str, str] = {
    "difill.server.context.files:read_regular": "the one read's last step: os.open with O_NONBLOCK and O_NOFOLLOW, fstat a regular file, a byte bound",
    "difill.server.context.files:read_bytes": "the one read: read_regular on the path files.readable resolved and allowed",
    "difill.server.context.files:_read_config": "git's own configuration outside the workspace (core.excludesFile, info/exclude, a .git file): ignore rules, never sent; read_regular's type and size checks",
    "difill.server.context.jedi_process:guard_reads.guarded": "jedi's process, after the server answered its read? with files.readable; read_regular's type and size checks",
    "difill.server.context.jedi_process:resident_mb": "/proc/self/status: the process's own memory, no user file",
    "difill.server.context.jedi_bounds:process_resident_mb": "/proc/<pid>/statm of jedi's process: its memory, no user file",
    "difill.server.fill_command:read_source": "`difill fill FILE:LINE:COL`: the file the user names on the command line is the request itself",
    "difill.server.server:document_handlers.did_open": "Documents.open: the editor's text of a document, no file is opened",
    "difill.server.settings_clients:stale": "the repository's own client settings files (package.json, settings.ts, config.lua, README), compared with config.py by a developer's command; no user file",
    "difill.server.settings_clients:main": "the same files, rewritten by `--write` in a checkout; no user file",
    "difill.server.show_gate:_read": "the show gate's calibration shipped inside the package, no user file",
    "difill.server.show_gate:_trace": "appends to the lab's trace file (DIFILL_SHOW_TRACE), a write; reads nothing",
    "difill.server.workspace_values:_read_bounded": "the workspace's editor settings files, read only to refuse the programs they name (never sent or shown to a model); a regular file, bounded, a FIFO never waited on",
}  # fmt: skip
READ_METHODS = frozenset({"read_text", "read_bytes", "read_regular", "open", "fdopen"})
OS_READS = frozenset({"open", "fdopen", "read"})


def reads(source: str) -> list[tuple[str, int, str]]:
    """(qualified function, line, the call) of every file read in ``source`` ("" at module level)."""
    found: list[tuple[str, int, str]] = []

    def visit(node: ast.AST, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, f"{owner}.{child.name}" if owner else child.name)
                continue
            if isinstance(child, ast.Call) and _is_read(child.func):
                found.append((owner, child.lineno, ast.unparse(child.func)))
            visit(child, owner)

    visit(ast.parse(source), "")
    return found


def _is_read(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in ("open", "read_regular")
    if not isinstance(func, ast.Attribute):
        return False
    receiver = func.value.id if isinstance(func.value, ast.Name) else None
    if receiver == "os":
        return func.attr in OS_READS
    if receiver == "files":  # files.read_bytes and files.read_text are the one read
        return func.attr == "read_regular"
    return func.attr in READ_METHODS


def server_sources() -> dict:
    return {name: path for name, path in sources().items() if name.startswith("difill.server")}


def test_the_server_reads_user_files_only_through_files_read_bytes():
    found = [
        f"{name}:{owner or '<module>'} (line {line}): {call}"
        for name, path in server_sources().items()
        for owner, line, call in reads(path.read_text(encoding="utf-8"))
        if f"{name}:{owner}" not in LET_OFF
    ]
    assert not found, "read through files.read_bytes (or let off, with the reason): " + "; ".join(found)


def test_every_let_off_still_reads_something():
    # A let-off that outlived its read would hide the next one.
    found = {
        f"{name}:{owner}"
        for name, path in server_sources().items()
        for owner, _, _ in reads(path.read_text(encoding="utf-8"))
    }
    assert set(LET_OFF) <= found, set(LET_OFF) - found


def test_the_walk_finds_every_kind_of_read():
    source = (
        "import io, os\n"
        "from pathlib import Path\n"
        "def a(p):\n    return open(p).read()\n"
        "def b(p):\n    return Path(p).read_text()\n"
        "def c(p):\n    return Path(p).read_bytes()\n"
        "def d(p):\n    return os.open(p, os.O_RDONLY)\n"
        "def e(p):\n    return io.open(p)\n"
        "class K:\n    def f(self, p):\n        return files.read_regular(p, 10)\n"
        "def g(p):\n    def inner():\n        return read_regular(p, 10)\n    return inner\n"
        "def h(fd):\n    return os.read(fd, 10) + os.fdopen(fd).read()\n"
        "def fine(p):\n    return os.path.join(p, 'x') + os.stat(p).st_size + files.read_bytes(p, [], 1)\n"
    )
    readers = {owner for owner, _, _ in reads(source)}
    assert readers == {"K.f", "a", "b", "c", "d", "e", "g.inner", "h"}  # not "fine"

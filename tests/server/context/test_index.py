"""The workspace index: what it reads and skips, its caps, incremental updates, retrieval order,
and each bad input of issue 22 (the worker stays alive, the caps hold, nothing outside the
workspace folders is read)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from difill.server.context import files
from difill.server.context.index import IndexLimits, WorkspaceIndex
from difill.server.draft_policy import drafts_at, is_sure

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

UTIL = '''def load_config(path):
    """Read the configuration file."""
    return open(path).read()


class ConfigStore:
    """Keeps settings by name."""

    def put(self, key, value):
        self.values[key] = value

    def get(self, key):
        return self.values[key]
'''
MAIN = """from pkg.util import ConfigStore, load_config

store = ConfigStore()
config = load_config("settings.toml")
store.put("config", config)
"""


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def built(*folders: Path, limits: IndexLimits | None = None) -> WorkspaceIndex:
    index = WorkspaceIndex(limits)
    index.start()
    for folder in folders:
        index.add_folder(str(folder))
    assert index.wait_idle(60), "the index never finished"
    return index


@pytest.fixture
def index_factory():
    made: list[WorkspaceIndex] = []

    def make(*folders: Path, limits: IndexLimits | None = None) -> WorkspaceIndex:
        made.append(built(*folders, limits=limits))
        return made[-1]

    yield make
    for index in made:
        index.stop(wait_s=30)  # and jedi's work (a Python document's warm-up): none outlives the test


def relative(index: WorkspaceIndex, root: Path) -> set[str]:
    real = os.path.realpath(root)
    return {os.path.relpath(p, real) for p in index.indexed_paths()}


@pytest.fixture
def recorded_reads(monkeypatch):
    """Every path the index opens or lists, resolved."""
    seen: list[str] = []
    real_open, real_scandir = os.open, os.scandir

    def recording_open(path, *args, **kwargs):
        seen.append(os.path.realpath(path))
        return real_open(path, *args, **kwargs)

    def recording_scandir(path="."):
        seen.append(os.path.realpath(path))
        return real_scandir(path)

    monkeypatch.setattr(files.os, "open", recording_open)
    monkeypatch.setattr(files.os, "scandir", recording_scandir)
    return seen


def test_ignores_skips_and_reads_nothing_outside(tmp_path, index_factory, recorded_reads, monkeypatch):
    root, outside = tmp_path / "ws", tmp_path / "outside"
    home = tmp_path / "home"  # git's own configuration (the global excludes file) is read from here
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    git_configuration = {
        str(home / ".gitconfig"),
        str(home / ".config/git/config"),
        str(home / ".config/git/ignore"),
    }
    write(outside / "secret.py", "outside_secret_name = 1\n")
    write(root / "pkg/util.py", UTIL)
    write(root / ".gitignore", "generated/\n*.log\n")
    write(root / "generated/big.py", "generated_name = 1\n")
    write(root / "run.log", "log_name = 1\n")
    write(root / "pkg/.gitignore", "local_only.py\n")  # a nested .gitignore: relative to pkg/
    write(root / "pkg/local_only.py", "local_name = 1\n")
    write(root / "local_only.py", "kept_name = 1\n")  # the nested rule does not reach up
    for skipped in (".git/config.py", ".venv/lib/x.py", "node_modules/m/i.js", "build/b.py", "dist/d.py"):
        write(root / skipped, "skipped_name = 1\n")
    write(root / "blob.dat.py", b"binary_name = 1\n\0\0\0")  # a NUL byte: binary, whatever its name
    write(root / "image.png", "png_name = 1\n")
    write(root / "huge.py", "huge_name = 1\n" * 200)  # over the 1 KiB file cap below
    write(root / "minified.js", "var minified_name=1;" * 200)  # one 4000-character line
    write(root / "latin1.py", "caf\xe9_count = 1\n".encode("latin-1"))  # not UTF-8: still text
    os.symlink(outside / "secret.py", root / "link_out.py")  # a file symlink out of the folder
    os.symlink(outside, root / "dir_out")  # a directory symlink out of the folder
    os.symlink(root, root / "pkg/loop")  # a symlink loop
    os.symlink(root / "pkg/util.py", root / "link_in.py")  # a symlink inside: read
    os.mkfifo(root / "pipe.py")  # opening a FIFO for reading would block without O_NONBLOCK

    index = index_factory(root, limits=IndexLimits(max_file_bytes=1024))

    expected = {".gitignore", "pkg/.gitignore", "pkg/util.py", "local_only.py", "latin1.py", "link_in.py"}
    assert relative(index, root) == expected
    text = index.retrieve("file:///elsewhere/x.py", "caf", 3, "python").sources
    assert all("outside_secret_name" not in t for _, t in text)
    real_root = os.path.realpath(root)
    outside_reads = [
        p for p in recorded_reads if not files.inside(p, real_root) and p not in git_configuration
    ]
    assert recorded_reads and not outside_reads, outside_reads


def test_non_utf8_text_keeps_its_identifiers(tmp_path, index_factory):
    write(tmp_path / "latin1.py", "def caf\xe9_total(x):\n    return x\nlatin_marker = 2\n".encode("latin-1"))
    index = index_factory(tmp_path)
    (path,) = index.indexed_paths()
    sources = index.retrieve("file:///x.py", "latin_marker\n\n", 14, "python").sources
    assert any(p == path and "latin_marker" in t and "\ufffd" in t for p, t in sources)


def test_unreadable_and_vanishing_files_are_skipped(tmp_path, index_factory, monkeypatch):
    for name in ("a.py", "b.py", "c.py", "d.py"):
        write(tmp_path / name, f"{name[0]}_name = 1\n")
    real_list_dir, real_open = files.list_dir, os.open

    def list_then_delete(path):  # the listing sees c.py; it is gone before it is read
        entries = real_list_dir(path)
        if os.path.exists(tmp_path / "c.py"):
            os.unlink(tmp_path / "c.py")
        return entries

    def refusing_open(path, *args, **kwargs):
        if str(path).endswith("b.py"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(files, "list_dir", list_then_delete)
    monkeypatch.setattr(files.os, "open", refusing_open)
    index = index_factory(tmp_path)
    assert relative(index, tmp_path) == {"a.py", "d.py"}


def test_caps_on_files_and_bytes_hold(tmp_path, index_factory):
    for i in range(30):
        write(tmp_path / f"m{i:02}.py", f"name_{i} = {i}\n" * 20)
    by_files = index_factory(tmp_path, limits=IndexLimits(max_files=7))
    assert by_files.stats()["files"] == 7 and by_files.stats()["full"]
    # Breadth first and sorted: the same cap keeps the same files.
    assert relative(by_files, tmp_path) == {f"m{i:02}.py" for i in range(7)}
    by_bytes = index_factory(tmp_path, limits=IndexLimits(max_bytes=5000))
    stats = by_bytes.stats()
    assert 0 < stats["files"] < 30 and stats["bytes"] <= 5000 and stats["full"]


class FakeEntry:
    """What os.scandir yields, for a listing too big to make on disk in a test."""

    def __init__(self, directory: str, name: str) -> None:
        self.name, self.path = name, os.path.join(directory, name)

    def is_symlink(self) -> bool:
        return False

    def is_dir(self, follow_symlinks: bool = True) -> bool:
        return False

    def is_file(self, follow_symlinks: bool = True) -> bool:
        return True


def test_a_200k_file_workspace_stays_under_the_caps(tmp_path, index_factory, monkeypatch, request):
    if os.environ.get("DIFILL_MEMORY_ISOLATED") != "1":
        # Measured in a process of its own: tracemalloc counts every allocation, and what other
        # tests loaded before (jedi's stubs, parso's caches) changed the index's count by 2 MB.
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{__file__}::{request.node.name}"],
            env={**os.environ, "DIFILL_MEMORY_ISOLATED": "1"}, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:]
        return
    root = os.path.realpath(tmp_path)
    listings: list[int] = []
    read: list[str] = []

    def huge_listing(path):
        entries = [FakeEntry(path, f"module_{i:06}.txt") for i in range(200_000)] if path == root else []
        listings.append(len(entries))
        return entries

    def fake_read(path, folder, max_bytes, policy=None):
        if path.endswith(".gitignore"):
            return None
        read.append(path)
        stem = os.path.basename(path).split(".")[0]
        return f"import os\n\ndef {stem}_helper(value):\n    return {stem}_table[value]\n" * 4

    monkeypatch.setattr(files, "list_dir", huge_listing)
    monkeypatch.setattr(files, "read_text", fake_read)
    limits = IndexLimits(max_files=3000, max_bytes=2 * 1024 * 1024)
    tracemalloc.start()
    try:
        index = index_factory(tmp_path, limits=limits)
        held, peak = tracemalloc.get_traced_memory()  # the listing is gone once the build stops
    finally:
        tracemalloc.stop()
    stats = index.stats()
    # What the index holds is what it counts, give or take: the cap is a cap on memory.
    assert held < 1.5 * limits.max_bytes, (held, stats)
    assert stats["full"] and stats["files"] <= 3000 and stats["bytes"] <= limits.max_bytes
    assert len(read) <= stats["files"] + 1  # listing stopped at the cap: the rest were never read
    # The listing itself (200k entries) is the biggest allocation; the index adds at most its cap.
    assert peak < 60 * 1024 * 1024, peak
    text = "module_000001_helper(1)\n"
    assert index.retrieve("file:///x.txt", text, len(text), "plaintext").sources  # its sources are .txt


def test_a_50mb_minified_file_is_never_read_whole(tmp_path, index_factory):
    write(tmp_path / "bundle.min.js", b"var a=1;" * (50 * 1024 * 1024 // 8))
    write(tmp_path / "ok.py", "ok_name = 1\n")
    tracemalloc.start()
    try:
        index = index_factory(tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert relative(index, tmp_path) == {"ok.py"}
    assert peak < 8 * 1024 * 1024, peak  # refused by its size before a byte of it is read
    # Even with the size cap raised above it, it is refused as minified (one 50 MB line).
    assert files.read_text(str(tmp_path / "bundle.min.js"), str(tmp_path), 64 * 1024 * 1024) is None


def test_a_folder_removed_while_indexed(tmp_path, monkeypatch):
    doomed, kept = tmp_path / "doomed", tmp_path / "kept"
    for i in range(200):
        write(doomed / f"d{i:03}.py", f"doomed_{i} = {i}\n")
    write(kept / "k.py", "kept_name = 1\n")
    real_read = files.read_text
    calls = []

    def read_and_remove(path, folder, max_bytes, policy=None):
        calls.append(path)
        if len(calls) == 20:  # the folder disappears from disk mid-build...
            shutil.rmtree(doomed)
        return real_read(path, folder, max_bytes, policy)

    monkeypatch.setattr(files, "read_text", read_and_remove)
    index = WorkspaceIndex()
    index.start()
    try:
        index.add_folder(str(doomed))
        assert index.wait_idle(60)
        assert 0 < index.stats()["files"] < 200
        index.remove_folder(str(doomed))  # ...and then from the workspace
        index.add_folder(str(kept))  # the worker is still alive
        assert index.wait_idle(60)
        assert relative(index, kept) == {"k.py"} and index.stats()["folders"] == 1
    finally:
        index.stop()


def test_incremental_updates(tmp_path, index_factory):
    write(tmp_path / "pkg/util.py", UTIL)
    write(tmp_path / ".gitignore", "ignored.py\n")
    index = index_factory(tmp_path)
    assert relative(index, tmp_path) == {".gitignore", "pkg/util.py"}

    new = write(tmp_path / "pkg/new.py", "def fresh_function():\n    return 1\n")
    index.file_changed(str(new))
    write(tmp_path / "ignored.py", "ignored_name = 1\n")
    index.file_changed(str(tmp_path / "ignored.py"))  # .gitignore'd: not indexed
    index.file_changed("/etc/hostname")  # outside every folder: not read
    assert index.wait_idle(10)
    assert relative(index, tmp_path) == {".gitignore", "pkg/util.py", "pkg/new.py"}

    write(new, "def renamed_function():\n    return 2\n")
    index.file_changed(str(new))
    assert index.wait_idle(10)
    text = "x = renamed_function()\n\n"
    defs = [
        s
        for s in index.retrieve("file:///x.py", text, len(text), "python").snippets
        if s.kind == "definition"
    ]
    assert [s.path for s in defs] == ["pkg/new.py"] and "renamed_function" in defs[0].text

    new.unlink()
    index.file_deleted(str(new))
    assert index.wait_idle(10)
    assert relative(index, tmp_path) == {".gitignore", "pkg/util.py"}
    assert not [
        s
        for s in index.retrieve("file:///x.py", text, len(text), "python").snippets
        if s.kind == "definition"
    ]

    other = tmp_path.parent / (tmp_path.name + "-second")
    write(other / "second.py", "second_name = 1\n")
    index.add_folder(str(other))
    assert index.wait_idle(10) and index.stats()["folders"] == 2
    index.remove_folder(str(other))
    assert index.wait_idle(10)
    assert relative(index, tmp_path) == {".gitignore", "pkg/util.py"}


def test_retrieval_order_and_the_cursor_line(tmp_path, index_factory):
    util = write(tmp_path / "pkg/util.py", UTIL)
    write(tmp_path / "pkg/unrelated.py", "def other():\n    return 0\n")
    index = index_factory(tmp_path)
    current = (tmp_path / "pkg/main.py").as_uri()
    text = MAIN + "store.get("
    first, second = (tmp_path / "open/first.py").as_uri(), (tmp_path / "open/second.py").as_uri()
    index.set_open(current, "python", text)
    index.set_open(first, "python", "first_open = 1\n")
    index.set_open(second, "python", "second_open = 2\n")
    index.set_open(util.as_uri(), "python", UTIL + "\n# edited, not saved\n")
    index.set_open("file:///elsewhere/notes.py", "python", "store_get_notes = 3\n")  # outside the folder
    index.note_edit(second, 0)  # the most recent edit elsewhere
    index.note_edit("file:///elsewhere/notes.py", 0)  # outside the folder: never a source
    index.note_edit(current, 5)  # edits in the current document do not count

    retrieval = index.retrieve(current, text, len(text), "python")
    names = [source for source, _ in retrieval.sources]
    # The open documents, the most recently edited first; then the workspace files that are not
    # open.  The current document is not among them: the draft finder searches it itself.
    assert names[:3] == [second, first, util.as_uri()]
    assert "file:///elsewhere/notes.py" not in names  # issue 62: tabs follow the rule of files
    assert "# edited, not saved" in retrieval.sources[2][1]  # the live text, not the file
    assert current not in names and all(not n.endswith(("util.py", "main.py")) for n in names[3:])
    assert all("\r" not in t for _, t in retrieval.sources)

    kinds = [(s.kind, s.path) for s in retrieval.snippets]
    assert kinds[0] == ("definition", "pkg/util.py") and "class ConfigStore" in retrieval.snippets[0].text
    assert ("similar", "pkg/util.py") in kinds

    assert all(s.path != "notes.py" and "store_get_notes" not in s.text for s in retrieval.snippets)

    index.set_open(second, "python", None)  # closed
    assert second not in [s for s, _ in index.retrieve(current, text, 0, "python").sources]


def test_crlf_documents_give_lf_sources(tmp_path, index_factory):
    index = index_factory(tmp_path)
    other = (tmp_path / "open.py").as_uri()
    index.set_open(other, "python", "a = 1\r\nb = 2\r\n")
    text = "a = 1\r\nb = 2\r\nc"
    retrieval = index.retrieve("file:///x.py", text, len(text), "python")
    assert retrieval.sources == [(other, "a = 1\nb = 2\n")]


def test_a_listing_of_files_that_are_all_refused_stops_too(tmp_path, index_factory, monkeypatch):
    """200k entries that are all binary, say: the build does not read through all of them."""
    root = os.path.realpath(tmp_path)
    read: list[str] = []

    def huge_listing(path):
        return [FakeEntry(path, f"blob_{i:06}.txt") for i in range(200_000)] if path == root else []

    def refusing_read(path, folder, max_bytes, policy=None):
        read.append(path)
        return None

    monkeypatch.setattr(files, "list_dir", huge_listing)
    monkeypatch.setattr(files, "read_text", refusing_read)
    index = index_factory(tmp_path, limits=IndexLimits(max_files=500))
    assert index.stats()["full"] and index.stats()["files"] == 0
    assert len(read) <= 10 * 500 + 1


def test_huge_documents_are_bounded(tmp_path, index_factory):
    index = index_factory(tmp_path, limits=IndexLimits(max_file_bytes=100_000))
    huge = "".join(f"line_{i} = {i}\n" for i in range(200_000))  # 3.5 MB
    small = (tmp_path / "open/small.py").as_uri()
    index.set_open((tmp_path / "open/huge.py").as_uri(), "python", huge)  # over the file cap: left out
    index.set_open(small, "python", "small = 1\n")
    cursor = huge.index("line_100000 ") + 4
    sources = index.retrieve("file:///current.py", huge, cursor, "python").sources
    assert sources == [(small, "small = 1\n")]


def test_no_draft_is_found_at_the_cursor_itself(tmp_path, index_factory):
    """At the start of a new line, the text before the cursor occurs nowhere else: the only
    "match" would be the cursor's own place, whose continuation is the code already below.  (A
    word being typed may still be continued from one below it, on a one-token match: not sure.)"""
    index = index_factory(tmp_path)
    uri = (tmp_path / "main.py").as_uri()
    text = "import os\n\n\ndef main():\n    path = os.getcwd()\n\n    print(path)\n    return path\n"
    cursor = text.index("\n\n    print") + 1  # the empty line
    for typed in ("", "    ", "    pri"):
        live = text[:cursor] + typed + text[cursor:]
        at = cursor + len(typed)
        retrieval = index.retrieve(uri, live, at, "python")
        drafts = drafts_at(live, at, retrieval.sources, retrieval.drafts)
        repeats = [d for d in drafts if "print(path)" in typed + d.text or "return path" in d.text]
        assert not [d for d in repeats if is_sure(d)], typed


def test_the_generation_changes_with_other_documents_and_files_not_the_documents_own(tmp_path):
    # Issue 52, item 2: a cached answer keyed on it is not reused once another tab or file changed.
    index = WorkspaceIndex()
    index.start()
    try:
        index.add_folder(str(tmp_path))
        assert index.wait_idle(30)
        a, b = "file:///ws/a.py", "file:///ws/b.py"
        index.set_open(a, "python", "x = 1\n")
        start = index.generation(a)
        index.set_open(a, "python", "x = 12\n")  # typing in the document itself
        assert index.generation(a) == start
        index.set_open(b, "python", "y = 2\n")  # another tab
        assert index.generation(a) != start
        moved = index.generation(a)
        (tmp_path / "c.py").write_text("z = 3\n")
        index.file_changed(str(tmp_path / "c.py"))  # another file on disk
        assert index.wait_idle(30) and index.generation(a) != moved
    finally:
        index.stop()

"""Issue 46, part 2: names as an IDE knows them.  After ``x.`` where the workspace index resolves
no module (or one that only re-exports), jedi names the candidates: a src layout with absolute
imports and ``__init__`` re-exports, the standard library, an instance's attributes.  Within a
deadline, never from a denied file or from outside the workspace and the environment."""

from __future__ import annotations

import os
import signal
import threading
import time

import parso.file_io
import pytest
from workspace_files import indexed, write

from difill.server.context import jedi_names, jedi_process
from difill.server.context.index import WorkspaceIndex
from difill.server.context.jedi_names import JediNames
from difill.server.context.policy import ContextPolicy

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)


@pytest.fixture
def patient(monkeypatch):
    monkeypatch.setattr(jedi_names, "DEADLINE_S", 60.0)  # jedi's answer, not its deadline, decides


@pytest.fixture
def src_layout(tmp_path):
    root = tmp_path / "proj"
    write(root / "pyproject.toml", "[project]\nname = 'shapes'\n")
    write(root / "src/shapes/__init__.py", "from shapes.core.widgets import Widget, make_widget\n")
    write(root / "src/shapes/core/__init__.py", "")
    write(root / "src/shapes/core/widgets.py", (
        "class Widget:\n    size = 1\n\n    def grow(self, n):\n        return n\n\n\n"
        "def make_widget():\n    return Widget()\n"
    ))  # fmt: skip
    write(root / "app.py", "")
    return root


def names(index: WorkspaceIndex, root, text: str, name: str = "app.py") -> list[str]:
    retrieval = index.retrieve((root / name).as_uri(), text, len(text), "python")
    return [d.text for d in retrieval.drafts if d.kind == "symbol"]


def test_a_src_layout_package_that_reexports_is_followed(src_layout, patient):
    with indexed(src_layout) as index:
        assert sorted(names(index, src_layout, "import shapes\n\nw = shapes.")) == [
            "Widget",
            "core",
            "make_widget",
        ]
        assert names(index, src_layout, "import shapes\n\nw = shapes.make_w") == ["idget"]
        assert names(index, src_layout, "from shapes.core import widgets\nwidgets.Wid") == ["get"]


def test_an_instance_and_the_standard_library_have_their_attributes(src_layout, patient):
    with indexed(src_layout) as index:
        instance = "from shapes import make_widget\n\nw = make_widget()\nw."
        assert sorted(names(index, src_layout, instance)) == ["grow", "size"]
        assert "join" in [f"jo{n}" for n in names(index, src_layout, "import os\n\nos.path.jo")]
        assert names(index, src_layout, "import os\n\nos.path._") != []  # private names when asked


def test_a_denied_file_and_one_outside_the_workspace_give_no_names(tmp_path, patient):
    root = tmp_path / "ws"
    write(tmp_path / "outside.py", "def leaked():\n    pass\n")
    write(root / "pkg/__init__.py", "")
    write(root / "pkg/secret/__init__.py", "")
    write(root / "pkg/secret/keys.py", "def api_key():\n    pass\n")
    with indexed(root, WorkspaceIndex(policy=ContextPolicy(("secret/",)))) as index:
        assert names(index, root, "from pkg.secret import keys\nkeys.ap", "pkg/new.py") == []
        assert names(index, root, "from ... import outside\noutside.le", "pkg/new.py") == []


def test_past_the_deadline_the_rules_answer_and_the_next_keystroke_gets_jedi(tmp_path, monkeypatch):
    monkeypatch.setattr(jedi_names, "DEADLINE_S", 0.0)
    lookup = JediNames(lambda path: False, lambda: [str(tmp_path)])
    released, request = threading.Event(), lookup.process.request

    def held(*args):  # jedi answers only once the test lets it: an answer that waited for it fails
        assert released.wait(60), "names() waited for jedi"
        return request(*args)

    monkeypatch.setattr(lookup.process, "request", held)
    text = "import collections\ncollections.Ordered"
    started = time.perf_counter()
    first = lookup.names(text, len(text), str(tmp_path / "a.py"))
    assert first is None and not released.is_set()  # answered while jedi was held: never waits for it
    assert time.perf_counter() - started < 5.0  # nor sits out a timeout of its own (a wait: wall time)
    released.set()
    deadline = time.monotonic() + 60
    while (found := lookup.names(text, len(text), str(tmp_path / "a.py"))) is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert "OrderedDict" in found
    lookup.close()


@pytest.mark.parametrize(
    "hostile",
    [
        "import a\n" + "x = 1\n" * 50_000 + "a.",  # a 50k-line module
        "def f(:\n    return (\nimport os\nos.pa",  # syntax errors
        "from m1 import *\nm1.",  # a star-import chain (m1 <- m2 <- m1)
        "import cyc_a\ncyc_a.",  # an import cycle
    ],
    ids=["50k-lines", "syntax-error", "star-chain", "cycle"],
)
def test_hostile_code_answers_without_raising(tmp_path, patient, hostile):
    write(tmp_path / "m1.py", "from m2 import *\nONE = 1\n")
    write(tmp_path / "m2.py", "from m1 import *\nTWO = 2\n")
    write(tmp_path / "cyc_a.py", "import cyc_b\nA = cyc_b.B\n")
    write(tmp_path / "cyc_b.py", "import cyc_a\nB = cyc_a.A\n")
    write(tmp_path / "runs_code.py", "raise SystemExit('imported!')\n")  # jedi parses, never imports
    lookup = JediNames(lambda path: False, lambda: [str(tmp_path)])
    found = lookup.names(hostile, len(hostile), str(tmp_path / "doc.py"))
    assert found is None or isinstance(found, list)
    text = "import runs_code\nruns_code."
    assert [
        n for n in lookup.names(text, len(text), str(tmp_path / "doc.py")) if not n.startswith("__")
    ] == []
    lookup.close()


def test_a_completions_private_name_tells_a_submodule():
    # jedi_names reads ``Completion._name`` to skip importing each submodule: a jedi release that
    # renames it fails here.
    import jedi
    from jedi.inference.names import SubModuleName

    completions = jedi.Script("import json\njson.").complete(2, 5)
    assert any(isinstance(c._name, SubModuleName) and c.name == "decoder" for c in completions)


def test_parsos_file_read_is_what_the_guard_wraps(tmp_path):
    # jedi_process.guard_reads wraps this private method: a parso release that renames it fails here.
    assert callable(parso.file_io.FileIO.read)
    write(tmp_path / "denied.py", "TOKEN = 'x'\n")
    write(tmp_path / "fine.py", "A = 1\n")
    jedi_process.guard_reads(lambda path: path.endswith("denied.py"))
    assert getattr(parso.file_io.FileIO.read, "difill_guarded", False)
    assert parso.file_io.FileIO(str(tmp_path / "denied.py")).read() == b""
    assert parso.file_io.FileIO(str(tmp_path / "fine.py")).read() == b"A = 1\n"
    with pytest.raises(FileNotFoundError):  # no file: missing, as unguarded, not an empty module
        parso.file_io.FileIO(str(tmp_path / "absent" / "denied.py")).read()


def test_the_standard_library_names_come_from_typeshed_behind_the_guard(src_layout, patient):
    """The guard once read the standard library's zip (not a folder of the environment, so
    'denied') as empty files: an empty ``decimal-stubs`` hid typeshed's stub, and ``from decimal
    import `` listed only ``__version__``."""
    with indexed(src_layout) as index:
        text = "from decimal import "
        listed = index.retrieve((src_layout / "app.py").as_uri(), text, len(text), "python").import_names
        assert {"Decimal", "localcontext", "ROUND_HALF_UP"} <= listed


def test_a_package_of_10000_modules_and_a_symlink_loop(tmp_path, patient):
    """Issue 46, bad input: jedi lists a 10,000-module package within MAX_NAMES, follows no
    symlink loop forever, and parso's cache of parsed modules stays bounded through a long
    star-import chain."""
    big = tmp_path / "big"
    big.mkdir()
    (big / "__init__.py").write_text("")
    for i in range(10_000):
        (big / f"m{i}.py").write_text("")
    loop = tmp_path / "loopy"
    loop.mkdir()
    (loop / "__init__.py").write_text("X = 1\n")
    (loop / "again").symlink_to(loop, target_is_directory=True)
    for i in range(jedi_process.MAX_PARSED_MODULES + 100):  # each parsed: a star import per link
        write(tmp_path / f"chain{i}.py", f"from chain{i + 1} import *\nNAME{i} = {i}\n")
    lookup = JediNames(lambda path: False, lambda: [str(tmp_path)])
    found = lookup.names("import big\nbig.", 15, str(tmp_path / "doc.py"))
    assert found is not None and 0 < len(found) <= jedi_process.MAX_NAMES
    text = "import loopy.again.again.again\nloopy.again.again."
    assert isinstance(lookup.names(text, len(text), str(tmp_path / "doc.py")), list)
    text = "from chain0 import *\nNAME"
    found = lookup.names(text, len(text), str(tmp_path / "doc.py"))
    assert found is not None and "NAME0" in found
    assert 0 < lookup.process.parsed <= jedi_process.MAX_PARSED_MODULES  # in jedi's process
    lookup.close()


def test_an_import_line_lists_the_modules_and_names_that_exist(src_layout, patient):
    """Issue 52, item 3: on an import line, the names that may stand at the word being typed."""
    with indexed(src_layout) as index:

        def listed(text: str) -> frozenset[str] | None:
            retrieval = index.retrieve((src_layout / "app.py").as_uri(), text, len(text), "python")
            assert not retrieval.waiting
            return retrieval.import_names

        assert {"shapes", "os", "json"} <= listed("from ")  # the workspace's and the environment's
        # The list is of what may stand where the word starts, not of what the typed part matches:
        # the filter (suggestion_path.listed_names) checks the word the model's text completes against it.
        assert {"json", "os"} <= listed("import torchv")
        assert {"Widget", "make_widget"} <= listed("from shapes.core.widgets import ")
        assert "wait_response" not in listed("from shapes.core.widgets import wait_r")
        assert listed("x = 1") is None  # not an import line: no constraint
        # After ``from module `` the word to write is the keyword jedi lists and drops as no name.
        assert listed("from shapes.core ") == {"import"}
        assert listed("from shapes.core imp") == {"import"}
        assert "import" not in listed("from shapes.core import ")


def test_listed_names_drops_a_module_that_does_not_exist():
    from difill.server.suggestion_path import listed_names

    names = frozenset({"os", "json", "wait_fixed", "wait_random"})
    texts = ["torch import n", "os", " import path"]  # after "from ", a name must come
    assert listed_names(texts, "from ", names) == ["os"]
    assert listed_names(["esponse as toror", "andom"], "from m import wait_r", names) == ["andom"]
    assert listed_names([" import path", ".path import join"], "from os", names) == [
        " import path",
        ".path import join",
    ]


def test_the_projects_interpreter_names_its_own_packages(tmp_path, patient):
    """Issue 46: ``projectPython`` names another interpreter; its packages are the candidates,
    and one that cannot be used leaves the server's own (logged)."""
    import subprocess
    import sys

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    write(site / "onlyhere_pkg/__init__.py", "MAGIC = 1\n")
    text = "import onlyhere_pkg\nonlyhere_pkg."
    project = tmp_path / "proj"
    project.mkdir()
    own = JediNames(lambda path: False, lambda: [str(project)])
    theirs = JediNames(lambda path: False, lambda: [str(project)], str(venv / "bin" / "python"))
    assert "MAGIC" not in (own.names(text, len(text), str(project / "a.py")) or [])
    assert "MAGIC" in theirs.names(text, len(text), str(project / "a.py"))
    assert theirs.environment_module(str(site / "onlyhere_pkg/__init__.py"))
    broken = JediNames(lambda path: False, lambda: [str(project)], str(tmp_path / "no-python"))
    text = "import json\njson.dum"
    assert "dumps" in broken.names(text, len(text), str(project / "a.py"))
    for lookup in (own, theirs, broken):
        lookup.close()


def test_the_first_python_document_opened_loads_jedi_once(src_layout, monkeypatch):
    """jedi's first completion in a process takes about a second: it is loaded in the background
    when a Python document opens (not at the first ``x.``), once, and not for another language."""
    loads = []
    monkeypatch.setattr(JediNames, "_warm_up", lambda self: loads.append(self))
    with indexed(src_layout) as index:
        jedi = index._retriever._symbols.jedi
        index.set_open((src_layout / "notes.md").as_uri(), "markdown", "# notes\n")
        jedi._executor.submit(lambda: None).result(timeout=30)  # jedi's thread: anything submitted ran
        assert loads == []
        for version in range(3):
            index.set_open((src_layout / "app.py").as_uri(), "python", f"x = {version}\n")
        index.set_open((src_layout / "app.py").as_uri(), "python", None)
        jedi._executor.submit(lambda: None).result(timeout=30)
        assert len(loads) == 1 and loads[0] is jedi


def test_a_closed_indexs_jedi_work_never_runs_beside_a_new_ones(src_layout, patient):
    """An index closed without waiting (a settings change restarts it) while its jedi warms up:
    the new index's completions are whole (in one process, the two once shared jedi's state and
    the new one came back empty; now each index has a process of its own)."""
    for _ in range(3):
        old = WorkspaceIndex()
        old.start()
        old.set_open((src_layout / "app.py").as_uri(), "python", "import os\n")  # jedi warms up
        old.stop()  # not waited for
        with indexed(src_layout) as index:
            assert sorted(names(index, src_layout, "import shapes\n\nw = shapes.")) == [
                "Widget",
                "core",
                "make_widget",
            ]


def test_a_document_outside_the_workspace_gets_its_own_names_and_a_secret_one_none(tmp_path, patient):
    """A lone file (no folder open, or one outside them): jedi completes its own text, the
    builtins and the environment, reading nothing around it; a document the secrets policy
    denies is never completed."""
    folder = tmp_path / "ws"
    write(tmp_path / "lone/neighbour.py", "LEAKED = 1\n")

    def unreadable(path: str) -> bool:  # as the server's (retrieval.py): the folder and the environment
        return not (path.startswith(str(folder) + "/") or lookup.environment_module(path))

    lookup = JediNames(unreadable, lambda: [str(folder)], secret=lambda path: path.endswith(".env.py"))
    text = "import neighbour\n\ndef main(limit):\n    total = limit\n    return x"
    found = lookup.names(text, len(text) - 1, str(tmp_path / "lone/app.py"))
    assert {"limit", "total", "len"} <= set(found)
    neighbour = "import neighbour\nneighbour."  # the file beside it is not read
    assert "LEAKED" not in (lookup.names(neighbour, len(neighbour), str(tmp_path / "lone/app.py")) or [])
    assert lookup.names(text, len(text) - 1, str(tmp_path / "lone/.env.py")) is None
    lookup.close(wait_s=30)


def test_jedi_runs_in_a_process_of_its_own_and_a_dead_one_is_replaced(tmp_path, patient):
    """jedi is pure Python: on a thread of the server, a fill beside it waited for the interpreter
    at every step.  It parses in a process of its own (nothing of the document is parsed here),
    and a process that died (killed, out of memory) is replaced at the next completion."""
    from parso.cache import parser_cache

    lookup = JediNames(lambda path: False, lambda: [str(tmp_path)])
    doc = tmp_path / "doc_here.py"
    text = "def main(limit):\n    total = limit\n    return to"
    found = lookup.names(text, len(text), str(doc))
    assert found is not None and "total" in found
    assert lookup.process.pid not in (None, os.getpid())
    assert not any(str(tmp_path) in str(path) for cached in parser_cache.values() for path in cached)
    # Its parse cache is a folder of its own, not ~/.cache/jedi that every jedi on the machine reads.
    cache = lookup.process.cache_dir
    assert cache and os.path.isdir(cache) and not cache.startswith(os.path.expanduser("~/.cache"))
    first = lookup.process.pid
    os.kill(first, signal.SIGKILL)
    text = "import os\nos.pa"
    assert "path" in (lookup.names(text, len(text), str(doc)) or lookup.names(text, len(text), str(doc)) or [])
    assert lookup.process.pid != first and not os.path.exists(cache)  # the dead one's cache is gone
    current = lookup.process.cache_dir
    lookup.close(wait_s=30)
    assert current and not os.path.exists(current)


def test_a_list_nobody_waits_for_starts_after_the_models_job(tmp_path, monkeypatch):
    """jedi's process runs on the other core: on a 2-core machine beside a fill and the editor it
    took the fill's CPU.  A typed word's list (asked with ``wait_s=0``) waits while a model job
    runs; an ``x.`` a keystroke waits for does not."""
    monkeypatch.setattr(jedi_names, "MAX_YIELD_S", 60.0)
    busy = [True]
    lookup = JediNames(lambda path: False, lambda: [str(tmp_path)], model_busy=lambda: busy[0])
    text = "def main(limit):\n    total = limit\n    return x"
    path = str(tmp_path / "a.py")
    assert lookup.names(text, len(text) - 1, path, wait_s=0) is None
    time.sleep(0.5)
    assert lookup.names(text, len(text) - 1, path, wait_s=0) is None  # still waiting for the model
    busy[0] = False
    deadline = time.monotonic() + 60
    while (found := lookup.names(text, len(text) - 1, path, wait_s=0)) is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert {"limit", "total"} <= set(found)
    busy[0] = True
    monkeypatch.setattr(jedi_names, "DEADLINE_S", 60.0)
    attribute = "import os\nos.pa"
    started = time.perf_counter()
    assert "path" in lookup.names(attribute, len(attribute), path)
    assert time.perf_counter() - started < 30.0  # a wait (wall time): not held back for MAX_YIELD_S, 60 here
    lookup.close(wait_s=30)


def test_a_completion_past_the_process_timeout_is_given_up_and_the_next_one_answers(tmp_path, patient, monkeypatch):
    monkeypatch.setattr(jedi_process, "TIMEOUT_S", 0.2)
    lookup = JediNames(lambda path: False, lambda: [str(tmp_path)])
    big = "import os\n" + "x = 1\n" * 50_000 + "os.pa"
    started = time.perf_counter()
    assert lookup.names(big, len(big), str(tmp_path / "big.py")) is None  # jedi's first list takes ~1 s
    assert time.perf_counter() - started < 5.0 and lookup.process._proc is None  # stopped, not waited for
    monkeypatch.setattr(jedi_process, "TIMEOUT_S", 60.0)
    text = "import os\nos.pa"
    assert "path" in lookup.names(text, len(text), str(tmp_path / "small.py"))
    lookup.close(wait_s=30)


def test_a_server_bigger_than_jedis_memory_bound_still_gets_every_list(tmp_path, patient):
    """jedi's process leaves past MAX_RSS_MB of its own memory.  Read as ``ru_maxrss`` that was
    the server's peak (kept across fork and exec): in a server past 1 GiB every process left after
    one answer, and the request that raced its exit got nothing."""
    ballast = b"\x01" * ((jedi_process.MAX_RSS_MB + 100) * 1024 * 1024)  # written: resident here
    lookup = JediNames(lambda path: False, lambda: [str(tmp_path)])
    lookup.warm()
    for attribute in ("os.pa", "os.ge", "os.pa"):
        text = f"import os\n{attribute}"
        assert lookup.names(text, len(text), str(tmp_path / "a.py")), attribute
    assert len(ballast) and jedi_process.resident_mb() > jedi_process.MAX_RSS_MB
    lookup.close(wait_s=30)


def test_an_answer_made_before_jedis_list_after_a_dot_is_not_cached(src_layout, monkeypatch):
    """Past the deadline after ``x.`` the answer lacks jedi's list: it is marked waiting (the
    suggestion cache keeps no such answer), and once the list has come it is read, not waited
    for.  Before, the first answer at a position stood for every later ask there."""
    monkeypatch.setattr(jedi_names, "DEADLINE_S", 0.0)
    text = "import os\n\nstem = os.path.splitex"
    with indexed(src_layout) as index:
        uri = (src_layout / "app.py").as_uri()
        first = index.retrieve(uri, text, len(text), "python")
        assert first.waiting and not [d for d in first.drafts if d.kind == "symbol"]
        deadline = time.monotonic() + 60
        while (later := index.retrieve(uri, text, len(text), "python")).waiting:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert [d.text for d in later.drafts if d.kind == "symbol"] == ["t"]

"""Issue 62 (hostile inputs, round 5) through a real ``difill serve``: resolvers and scans of user
input that never ended now answer within their budget (rows 6, 7, 14), jedi's process is bounded
while it works (row 4), and 60 open tabs do not slow a same-file draft (row 10).  Each test
failed on f7ad0f7; every wait has a deadline far below what the old code took and far above
what the bounded one needs."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from server_hooks import hook_env
from stdio_client import cpu_seconds
from test_hostile_round2 import inline

from difill.server.context import symbols_js
from difill.server.context.store import IndexedFile
from difill.server.context.symbol_lookup import SymbolLookup, rules_for


def serve(start_server, root: Path, **options):
    server = start_server(None, env={"DIFILL_API_KEY": ""})
    # A remote on a closed port: the model is never what the request waits for.
    server.initialize(options={"remote": "http://127.0.0.1:9", **options}, root_uri=root.as_uri())
    return server


def open_doc(server, uri: str, text: str, language: str) -> None:
    server.notify("textDocument/didOpen",
                  {"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}})  # fmt: skip


def timed_inline(
    server, uri: str, line: int, character: int, clock=time.perf_counter
) -> tuple[list[str], float]:
    started = clock()
    items = inline(server, uri, line, character)["result"]["items"]
    return [item["insertText"] for item in items], clock() - started


def server_cpu(server):
    """A clock of the server's CPU seconds: its work, which other processes do not inflate (a
    wait for jedi's process, a child, is not in it: those are timed in wall seconds)."""
    return lambda: cpu_seconds(server.proc.pid)


def first_answer(server, uri: str, line: int, character: int, want: str, deadline_s: float = 60) -> float:
    """Ask until the drafts hold ``want`` (the index reads the workspace meanwhile): the slowest
    answer's seconds of the server's CPU.  Without ``want`` found, a fast answer would prove nothing."""
    slowest, deadline, texts = 0.0, time.monotonic() + deadline_s, []
    while want not in texts[:3] and time.monotonic() < deadline:
        texts, seconds = timed_inline(server, uri, line, character, server_cpu(server))
        slowest = max(slowest, seconds)
        if want not in texts[:3]:
            time.sleep(0.2)
    assert want in texts[:3], texts
    return slowest


# ---------------------------------------------------------------------------- row 6: export * cycles

SPECS_TO = [f"./d{i}/../{{}}" for i in range(15)] + ["./{}"]  # 16 specifiers, one file each way


def reexport_cycle(root: Path, exports: int = 3000) -> None:
    """``index.ts`` <-> ``a.ts``, each with 16 ``export * from`` lines naming the other."""
    stars_a = "".join(f"export * from '{spec.format('a')}';\n" for spec in SPECS_TO)
    stars_index = "".join(f"export * from '{spec.format('index')}';\n" for spec in SPECS_TO)
    (root / "index.ts").write_text(stars_a + "export const indexName = 1;\n")
    (root / "a.ts").write_text(
        stars_index + "".join(f"export const value{i} = {i};\n" for i in range(exports))
    )


def test_an_export_star_cycle_answers_at_once(start_server, tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    reexport_cycle(root)
    server = serve(start_server, root, contextDrafts="show")
    uri = (root / "use.ts").as_uri()
    text = "import * as u from './index';\n\nconst v = u.index"
    open_doc(server, uri, text, "typescript")
    slowest = first_answer(server, uri, 2, len("const v = u.index"), "Name")
    print(f"slowest answer {slowest:.2f} s")
    assert slowest < 2.0  # f7ad0f7: 4.5 s here, 10-11 s on the probe's machine
    # And again: the walk is kept for the index's generation.
    assert timed_inline(server, uri, 2, len("const v = u.index"), server_cpu(server))[1] < 2.0


def test_the_export_star_walk_visits_each_module_once(tmp_path):
    store = FakeStore()
    root = tmp_path / "ws"
    root.mkdir()
    reexport_cycle(root)
    for name in ("index.ts", "a.ts"):
        store.add(str(root), name, "typescript", (root / name).read_text())
    lookup = SymbolLookup(threading.Lock(), store, lambda: [str(root)])
    rules = rules_for("typescript")
    found = lookup.module_files("./index", str(root / "use.ts"), rules)
    started = time.thread_time()  # this thread's CPU: other processes on the cores do not count
    names = lookup._module_names(found[0], rules)
    assert time.thread_time() - started < 1.0  # f7ad0f7: 16^4 walks, 10 s
    assert names[:2] == ["indexName", "value0"]


# ---------------------------------------------------------------------------- row 14: monorepos


class FakeStore:
    """The index's files as SymbolLookup reads them (``generation``, ``files``)."""

    def __init__(self) -> None:
        self.generation = 1
        self.files: dict[int, IndexedFile] = {}

    def add(self, folder: str, relative: str, language: str | None, text: str) -> None:
        self.files[len(self.files)] = IndexedFile(f"{folder}/{relative}", folder, relative, language, text)


def monorepo(store: FakeStore, folder: str, modules: int) -> None:
    store.add(folder, "go.mod", None, "module example.com/mono\n\ngo 1.22\n")
    for i in range(modules):
        store.add(folder, f"svc{i}/go.mod", None, f"module example.com/mono/svc{i}\n\ngo 1.22\n")
        store.add(folder, f"svc{i}/util/util.go", "go", f"package util\n\nfunc Clean{i}() {{}}\n")
        main = f'package main\n\nimport "example.com/mono/svc{i}/util"\n\nfunc main() {{\n\tutil.Clean{i}()\n}}\n'
        store.add(folder, f"svc{i}/main.go", "go", main)


def test_a_go_package_in_a_3000_module_monorepo_resolves_in_milliseconds():
    store = FakeStore()
    monorepo(store, "/ws", 3000)
    lookup = SymbolLookup(threading.Lock(), store, lambda: ["/ws"])
    text = 'package main\n\nimport "example.com/mono/svc1234/util"\n\nfunc run() {\n\tutil.'
    other = text.replace("svc1234", "svc1")
    lookup.drafts(other, len(other), "/ws/svc1/run.go", "go", [])  # the snapshot is built once
    started = time.thread_time()
    drafts = lookup.drafts(text, len(text), "/ws/svc1234/run.go", "go", [])
    assert time.thread_time() - started < 0.5  # f7ad0f7: 3.8 s (every file resolved against every module)
    assert [d.text for d in drafts] == ["Clean1234"]
    nested = lookup.module_files("example.com/mono/svc7/util", "/ws/svc1/run.go", rules_for("go"))
    assert [r.relative for r in nested] == ["svc7/util/util.go"]  # the nested module's, not the root's


def test_tsconfig_path_targets_are_capped():
    targets = [f"t{i}/*" for i in range(20_000)]  # 220 KB: under the 256 KB read
    tsconfig = json.dumps({"compilerOptions": {"paths": {"@/*": targets, "~/*": ["lib/*"]}}})
    base, aliases = symbols_js.path_aliases(tsconfig)
    assert sum(len(t) for _, t in aliases) <= 64  # f7ad0f7: 20,001, 18 candidate paths each
    assert aliases[0][1][:2] == ["t0/*", "t1/*"] and aliases[1] == ("~/*", ["lib/*"])


# ---------------------------------------------------------------------------- row 7: a rename by a data literal

DATA_LINE = "const DATA = [" + "count, " * 13_000 + "];"  # 91 KB on one line
RENAMED = f"let total = 1;\n{DATA_LINE}\nfunction f() {{\n  return count + 1;\n}}\nconsole.log(count);\n"


def rename_server(start_server, tmp_path):
    env = {"DIFILL_API_KEY": "", **hook_env(tmp_path / "hooks.jsonl", inspect="1")}
    server = start_server(None, env=env)
    server.initialize(options={"remote": "http://127.0.0.1:9", "nextEdit": "drafts"}, root_uri=tmp_path.as_uri())
    uri = (tmp_path / "data.js").as_uri()
    open_doc(server, uri, RENAMED.replace("let total", "let count", 1), "javascript")
    return server, uri


def rename_at_top(server, uri: str, version: int, old: str, new: str) -> None:
    server.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": version},
        "contentChanges": [{"range": {"start": {"line": 0, "character": 4},
                                      "end": {"line": 0, "character": 4 + len(old)}}, "text": new}],
    })  # fmt: skip


def next_edit_params(uri: str, version: int, character: int) -> dict:
    return {"textDocument": {"uri": uri, "version": version}, "position": {"line": 0, "character": character}}


def test_a_rename_beside_a_90k_data_literal_answers_its_places(start_server, tmp_path):
    server, uri = rename_server(start_server, tmp_path)
    rename_at_top(server, uri, 2, "count", "total")
    used = cpu_seconds(server.proc.pid)  # the server's CPU: other processes on the cores do not count
    answer = server.request("textDocument/copilotInlineEdit", next_edit_params(uri, 2, 10), timeout=10)  # past the name (issue 63)
    assert cpu_seconds(server.proc.pid) - used < 3.0  # f7ad0f7: never (minutes: the prose check was quadratic)
    edits = answer["result"]["edits"]
    assert [e["text"] for e in edits] and {e["range"]["start"]["line"] for e in edits} <= {3, 5}


def test_a_cancelled_next_edit_leaves_no_thread_working(start_server, tmp_path):
    server, uri = rename_server(start_server, tmp_path)
    threads = server.request("difillTest/inspect", {"uri": uri})["result"]["threads"]
    names = [("count", "total"), ("total", "count"), ("count", "total")]
    for version, (old, new) in enumerate(names, start=2):
        rename_at_top(server, uri, version, old, new)
        request = server.send_request("textDocument/copilotInlineEdit", next_edit_params(uri, version, 5 + len(new)))  # past the name
        time.sleep(0.3)
        server.notify("$/cancelRequest", {"id": request})
        server.response_to(request, timeout=10)  # answered, or refused as cancelled: either way at once
    time.sleep(1.0)
    used = cpu_seconds(server.proc.pid)
    time.sleep(2.0)
    assert cpu_seconds(server.proc.pid) - used < 0.5  # f7ad0f7: a core busy after the cancel (2 s of 2)
    after = server.request("difillTest/inspect", {"uri": uri})["result"]["threads"]
    assert after <= threads + 1  # f7ad0f7: one more busy thread per cancelled edit


# ---------------------------------------------------------------------------- row 4: jedi's process while it works

JEDI_ASK_S = 40.0  # jedi loads its stubs (a second or two on a busy machine), then answers


def jedi_children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(c) for c in (task / "children").read_text().split()}
    return {c for c in found if "jedi_process" in _cmdline(c)}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


class JediWatch:
    """The largest resident size any jedi process of the server reached, sampled every 50 ms; a
    process past 2.5 GB is killed here (the test's own bound: f7ad0f7 grew it without one)."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid, self.peak_mb, self.stop = server_pid, 0.0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(0.05):
            try:
                pids = jedi_children(self.server_pid)
            except OSError:
                continue
            for pid in pids:
                mb = _rss_mb(pid)
                self.peak_mb = max(self.peak_mb, mb)
                if mb > 2500:
                    os.kill(pid, 9)

    def close(self) -> float:
        self.stop.set()
        self.thread.join(5)
        return self.peak_mb


def jedi_answers(server, uri: str, line: int, character: int, wanted: str, deadline_s: float = JEDI_ASK_S) -> float:
    """Ask until an item starts with ``wanted`` (jedi's), each request answered in time: the
    slowest request's seconds."""
    slowest, deadline, texts = 0.0, time.monotonic() + deadline_s, []
    while time.monotonic() < deadline:
        texts, seconds = timed_inline(server, uri, line, character)
        slowest = max(slowest, seconds)
        if any(text.startswith(wanted) for text in texts):
            return slowest
        time.sleep(0.2)
    raise AssertionError(f"{wanted!r} never shown (jedi never answered); the last answer: {texts}")


def test_a_buildout_bin_linked_to_dev_zero_does_not_grow_jedi(start_server, tmp_path):
    root = tmp_path / "ws"
    (root / "bin").mkdir(parents=True)
    (root / "buildout.cfg").write_text("[buildout]\nparts =\n")
    (root / "bin" / "x").symlink_to("/dev/zero")
    server = serve(start_server, root, contextDrafts="show")
    watch = JediWatch(server.proc.pid)
    uri = (root / "app.py").as_uri()
    text = "import os\n\nstem = os.path.splitex"
    open_doc(server, uri, text, "python")
    try:
        slowest = jedi_answers(server, uri, 2, len("stem = os.path.splitex"), "t")
    finally:
        peak = watch.close()
    assert peak < 1024  # f7ad0f7: 2 GiB within 2-7 s, 250 MB/s for a minute
    assert slowest < 3.0


def test_a_12mb_generated_module_is_not_parsed_and_jedi_goes_on(start_server, tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    rows = "".join(f"ROW_{i} = ({i}, 'name_{i}', {i * 0.5}, None)\n" for i in range(300_000))
    (root / "tables.py").write_text(rows)  # about 12 MB
    server = serve(start_server, root, contextDrafts="show")
    watch = JediWatch(server.proc.pid)
    uri = (root / "app.py").as_uri()
    text = "import os\nimport tables\n\nrow = tables.RO\nstem = os.path.splitex\nbase = os.path.basena"
    open_doc(server, uri, text, "python")
    try:
        jedi_answers(server, uri, 4, len("stem = os.path.splitex"), "t")  # jedi has loaded its stubs
        timed_inline(server, uri, 3, len("row = tables.RO"))  # jedi is asked about tables
        time.sleep(1.0)  # and has started on it
        slowest = jedi_answers(server, uri, 5, len("base = os.path.basena"), "me", deadline_s=25)
    finally:
        peak = watch.close()
    print(f"peak {peak:.0f} MB, slowest {slowest:.2f} s")
    assert peak < 1024  # f7ad0f7: 1.3-2 GB and a core for 60 s (no answer for anything else meanwhile)
    assert slowest < 3.0


# ---------------------------------------------------------------------------- row 10: open tabs of the same code

TAB_LINE = "    value_7_12 = compute_40(item_9, other_3)\n"
SMALL = "def total(item_9, other_3):\n" + TAB_LINE + "    return value_7_12\n\n\ndef again(item_9, other_3):\n"


def type_and_erase(server, uri: str, passes: int) -> tuple[list[float], list[str]]:
    """Type the line ``TYPED`` at line 6 key by key, asking for ghost text at each key, then erase
    it; ``passes`` times, from document version ``version``: each request's seconds and shown text."""
    times, shown = [], []
    for _ in range(passes):
        for k, char in enumerate(TYPED):
            change(server, uri, {"start": {"line": 6, "character": k}, "end": {"line": 6, "character": k}}, char)
            texts, seconds = timed_inline(server, uri, 6, k + 1)
            times.append(seconds)
            shown.append(texts[0] if texts else "")
        change(server, uri, {"start": {"line": 6, "character": 0}, "end": {"line": 6, "character": len(TYPED)}}, "")
    return times, shown


TYPED = "    value_7_12 = compute_40("
_versions: dict[str, int] = {}


def change(server, uri: str, range_: dict, text: str) -> None:
    _versions[uri] = _versions.get(uri, 1) + 1
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": _versions[uri]},
                                             "contentChanges": [{"range": range_, "text": text}]})  # fmt: skip


def test_sixty_tabs_of_repeated_code_do_not_slow_a_same_file_draft(start_server, tmp_path):
    # The probe's shape: 60 tabs of 2,000 such lines.  f7ad0f7 searched the 8 most recent at
    # every length of the query, 12,000 matches a request: p50 141 ms against 10 ms without them.
    root = tmp_path / "ws"
    root.mkdir()
    server = serve(start_server, root, contextDrafts="show")
    uri = (root / "small.py").as_uri()
    open_doc(server, uri, SMALL, "python")
    type_and_erase(server, uri, 1)  # warm: the first requests load what they use
    alone, _ = cpu_per_request(server, uri)
    tab = "def run(item_9, other_3):\n" + TAB_LINE * 2000
    for k in range(60):
        open_doc(server, (root / f"tab_{k}.py").as_uri(), tab, "python")
    type_and_erase(server, uri, 1)  # the tabs are indexed over the first lookups
    with_tabs, shown = cpu_per_request(server, uri)
    assert shown[-1].startswith("item_9, other_3)")  # the draft the file and the tabs agree on
    print(f"{alone * 1000:.1f} ms of the server's CPU a request alone, {with_tabs * 1000:.1f} ms with 60 tabs")
    # Here ~1.2 ms alone, 2.7 ms with the tabs; 9ad66bf^ 10 ms with them (f7ad0f7's wall p50s: 7-10x).
    assert with_tabs < 4 * alone + 0.002


def cpu_per_request(server, uri: str) -> tuple[float, list[str]]:
    """The server's CPU seconds a request over two passes of ``type_and_erase`` (its work, which
    other processes on the cores do not inflate; its clock ticks are 10 ms: averaged, not each)
    and the texts shown."""
    used = cpu_seconds(server.proc.pid)
    times, shown = type_and_erase(server, uri, 2)
    return (cpu_seconds(server.proc.pid) - used) / len(times), shown


def test_jedi_past_its_bound_while_it_works_is_killed_logged_once_and_the_server_answers(start_server, tmp_path):
    # A bound any jedi passes while it loads its stubs, set in the server's process at start-up.
    hooks = tmp_path / "bound"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import difill.server.context.jedi_bounds as jedi_bounds\njedi_bounds.MAX_WORKING_RSS_MB = 40\n"
    )
    root = tmp_path / "ws"
    root.mkdir()
    path = f"{hooks}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    server = start_server(None, env={"DIFILL_API_KEY": "", "PYTHONPATH": path})
    server.initialize(options={"remote": "http://127.0.0.1:9", "contextDrafts": "show"}, root_uri=root.as_uri())
    uri = (root / "app.py").as_uri()
    open_doc(server, uri, "import os\n\nstem = os.path.splitex", "python")
    deadline, kills = time.monotonic() + JEDI_ASK_S, []
    while len(kills) < 1 and time.monotonic() < deadline:  # f7ad0f7: the bound was read after an answer
        texts, seconds = timed_inline(server, uri, 2, len("stem = os.path.splitex"))
        assert seconds < 3.0  # the server answers meanwhile
        kills = [line for line in server.stderr_text().splitlines() if "while it worked" in line]
        time.sleep(0.2)
    assert kills and "WARNING" in kills[0]
    for _ in range(10):  # each ask starts jedi again, and it is killed again: logged once
        assert timed_inline(server, uri, 2, len("stem = os.path.splitex"))[1] < 3.0
        time.sleep(0.3)
    assert [line for line in server.stderr_text().splitlines() if "while it worked" in line] == kills
    assert not any("jedi_process" in _cmdline(pid) and _rss_mb(pid) > 200 for pid in jedi_children(server.proc.pid))


def _rss_mb(pid: int) -> float:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0

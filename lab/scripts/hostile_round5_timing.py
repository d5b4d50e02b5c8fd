"""Figures for issue 62 (hostile inputs, round 5), rows 14 and 10, on the code as it is: a Go
package resolved in a 3,000-module monorepo, and the p50 of ghost text typed in a small file with
and without 60 open tabs of 2,000 repeated lines, through ``difill serve`` over stdio.

    PYTHONPATH=src .venv/bin/python -m lab.scripts.hostile_round5_timing [modules]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "reliability"))

from stdio_client import StdioServer  # noqa: E402 - the reliability suites' client

from difill.server.context.store import IndexedFile  # noqa: E402
from difill.server.context.symbol_lookup import SymbolLookup, rules_for  # noqa: E402

TAB_LINE = "    value_7_12 = compute_40(item_9, other_3)\n"
SMALL = "def total(item_9, other_3):\n" + TAB_LINE + "    return value_7_12\n\n\ndef again(item_9, other_3):\n"
TYPED = "    value_7_12 = compute_40("


class Files:
    """The index's files as SymbolLookup reads them."""

    def __init__(self) -> None:
        self.generation, self.files = 1, {}

    def add(self, relative: str, language: str | None, text: str) -> None:
        self.files[len(self.files)] = IndexedFile(f"/ws/{relative}", "/ws", relative, language, text)


def go_resolve(modules: int) -> None:
    store = Files()
    store.add("go.mod", None, "module example.com/mono\n")
    for i in range(modules):
        store.add(f"svc{i}/go.mod", None, f"module example.com/mono/svc{i}\n")
        store.add(f"svc{i}/util/util.go", "go", f"package util\n\nfunc Clean{i}() {{}}\n")
        main = f'package main\n\nimport "example.com/mono/svc{i}/util"\n\nfunc main() {{\n\tutil.Clean{i}()\n}}\n'
        store.add(f"svc{i}/main.go", "go", main)
    lookup = SymbolLookup(threading.Lock(), store, lambda: ["/ws"])
    lookup.module_files("example.com/mono/svc0/util", "/ws/svc0/run.go", rules_for("go"))  # the snapshot
    resolves, drafts = [], []
    for k in range(1, 21):
        i = k * 97 % modules
        started = time.perf_counter()
        lookup.module_files(f"example.com/mono/svc{i}/util", "/ws/svc1/run.go", rules_for("go"))
        resolves.append(time.perf_counter() - started)
        text = f'package main\n\nimport "example.com/mono/svc{i}/util"\n\nfunc run() {{\n\tutil.'
        started = time.perf_counter()
        lookup.drafts(text, len(text), f"/ws/svc{i}/run.go", "go", [])  # resolve, names, their use
        drafts.append(time.perf_counter() - started)
    print(f"{modules} go.mod modules: a resolve p50 {statistics.median(resolves) * 1000:.2f} ms, "
          f"max {max(resolves) * 1000:.2f} ms; `util.` drafts (every file's imports resolved) p50 "
          f"{statistics.median(drafts) * 1000:.1f} ms")  # fmt: skip


def typing_p50(tabs: int, passes: int = 4) -> float:
    root = Path(tempfile.mkdtemp(prefix="difill-round5-"))
    server = StdioServer(None, root / "stderr.txt", (), {"DIFILL_API_KEY": ""})
    server.initialize(options={"remote": "http://127.0.0.1:9", "contextDrafts": "show"}, root_uri=root.as_uri())
    tab = "def run(item_9, other_3):\n" + TAB_LINE * 2000
    for k in range(tabs):
        open_doc(server, (root / f"tab_{k}.py").as_uri(), tab)
    uri = (root / "small.py").as_uri()
    open_doc(server, uri, SMALL)
    version, times = 1, []
    for n in range(passes + 1):  # the first pass warms up (the tabs are indexed over it)
        for k, char in enumerate(TYPED):
            version = change(server, uri, version, k, k, char)
            started = time.perf_counter()
            server.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                           "position": {"line": 6, "character": k + 1}, "context": {"triggerKind": 2}})  # fmt: skip
            if n:
                times.append(time.perf_counter() - started)
        version = change(server, uri, version, 0, len(TYPED), "")
    server.close()
    return statistics.median(times)


def open_doc(server: StdioServer, uri: str, text: str) -> None:
    server.notify("textDocument/didOpen",
                  {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})  # fmt: skip


def change(server: StdioServer, uri: str, version: int, start: int, end: int, text: str) -> int:
    span = {"start": {"line": 6, "character": start}, "end": {"line": 6, "character": end}}
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version + 1},
                                             "contentChanges": [{"range": span, "text": text}]})  # fmt: skip
    return version + 1


def main() -> None:
    go_resolve(int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
    alone, with_tabs = typing_p50(0), typing_p50(60)
    print(f"typing in a small file: p50 {alone * 1000:.1f} ms alone, {with_tabs * 1000:.1f} ms with 60 tabs "
          f"of 2,000 repeated lines ({with_tabs / alone:.1f}x)")  # fmt: skip


if __name__ == "__main__":
    main()

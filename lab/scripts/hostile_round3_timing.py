"""Figures for docs/reliability.md, "Hostile inputs, round 3" (issue 37): the hostile .gitignore
line, the 64 KB "for for" line, 60 open documents, and an event storm, on the code as it is.

    .venv/bin/python -m lab.scripts.hostile_round3_timing
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path

from difill.server.context import ignore
from difill.server.context.imports import free_names
from difill.server.context.index import WorkspaceIndex


def ms(work) -> float:
    started = time.perf_counter()
    work()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    rules = (ignore.RuleSet(ignore.parse("*a*a*a*a*a*a*a*a*a*a*a*a*b\n")),)
    print(
        f"hostile .gitignore line vs a 60-character name: {ms(lambda: ignore.ignored(rules, 'a' * 60, False)):.3f} ms"
    )
    for word in ("for ", "lambda ", "def f(\n"):
        hostile = "x = " + word * (65536 // len(word)) + "\n"
        print(
            f"free-name scan of 64 KB of {word.strip()!r}: {ms(lambda hostile=hostile: free_names(hostile)):.0f} ms"
        )

    rng = random.Random(0)
    words = [f"name{i}" for i in range(3000)]

    def document(k: int) -> str:
        return "".join(
            f"    {rng.choice(words)} = {rng.choice(words)}({rng.choice(words)}, {k}) + {i}\n"
            for i in range(2000)
        )

    index = WorkspaceIndex()
    index.start()
    for k in range(60):
        index.set_open(f"file:///tmp/open/doc{k}.py", "python", document(k))
    text = document(99)
    catch_up = [
        ms(lambda: index.retrieve("file:///tmp/cur.py", text, len(text) // 2, "python")) for _ in range(15)
    ]
    steady = []
    for i in range(30):
        if i % 3 == 0:  # another document edited meanwhile
            index.set_open(f"file:///tmp/open/doc{i}.py", "python", document(i))
        steady.append(ms(lambda: index.retrieve("file:///tmp/cur.py", text, len(text) // 2, "python")))
    print(
        f"lookup with 60 open documents of 2,000 lines: the first 15 (4 documents indexed each) "
        f"p50 {statistics.median(catch_up):.1f} ms max {max(catch_up):.1f} ms; then p50 "
        f"{statistics.median(steady):.1f} ms, max {max(steady):.1f} ms"
    )
    index.stop(wait_s=5)

    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for i in range(500):
            path = Path(folder) / f"m{i}.py"
            path.write_text(f"value_{i} = {i}\n")
            paths.append(str(path))
        index = WorkspaceIndex()
        index.start()
        index.add_folder(folder)
        index.wait_idle(60)
        queued = ms(lambda: [index.file_changed(paths[i % 500]) for i in range(50_000)])
        stopped = ms(index.stop)
        print(
            f"50,000 file events (500 files) queued in {queued:.0f} ms; stop() returned in {stopped:.2f} ms"
        )


if __name__ == "__main__":
    main()

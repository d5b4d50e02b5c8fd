"""Benchmark the workspace index (server/context) on a real tree: build time, RSS growth, lookup
latency, and (with --ghost) ghost-text latency while the index builds against idle.

Run:
    .venv/bin/python -m lab.scripts.index_bench                       # the venv's site-packages
    .venv/bin/python -m lab.scripts.index_bench --tree ~/src/project --lookups 500
    .venv/bin/python -m lab.scripts.index_bench --ghost 40            # + fills with the shipped model

A lookup is what the suggestion path would do per request: ``retrieve`` (draft sources and
snippets) plus ``snippet_block`` (the prompt's head), at a random line of a random indexed file.
docs/context.md quotes the figures.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

from difill.server.context.index import IndexLimits, WorkspaceIndex
from difill.server.context.prompt import snippet_block


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def lookups(index: WorkspaceIndex, count: int, seed: int, import_lines: bool = False) -> list[float]:
    """``import_lines``: the cursor halfway into the module of a ``from`` line, where the index
    drafts the import (the free names of the whole document are scanned); else anywhere."""
    rng = random.Random(seed)
    paths = [p for p in index.indexed_paths() if p.endswith(".py")] or index.indexed_paths()
    timings = []
    while len(timings) < count:
        path = rng.choice(paths)
        text = Path(path).read_text(errors="replace")
        lines = text.split("\n")
        chosen = (
            [i for i, x in enumerate(lines) if x.startswith("from ")] if import_lines else range(len(lines))
        )
        if not chosen:
            continue
        line = rng.choice(chosen)
        column = len("from ") + (
            len(lines[line].split()[1]) // 2 if import_lines else len(lines[line]) // 2 - 5
        )
        offset = sum(len(x) + 1 for x in lines[:line]) + max(0, column)
        started = time.perf_counter()
        retrieval = index.retrieve(Path(path).as_uri(), text, offset, "python")
        snippet_block(retrieval.snippets, "python", 128)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def ghost_p50(backend, count: int, seed: int, busy: threading.Event | None = None) -> float:
    from difill.engine.api import FillOptions

    rng = random.Random(seed)
    source = Path(__file__).read_text()
    timings = []
    for i in range(count):
        cut = rng.randrange(200, len(source) - 200)
        cut = source.find("\n", cut) + 1 + 8
        options = FillOptions(max_hole_tokens=16, single_line=True, seed=i)
        started = time.perf_counter()
        if busy is not None:
            busy.set()  # as the server's EngineHost.busy says while a fill runs
        try:
            backend.fill(source[:cut], source[cut:], options)
        finally:
            if busy is not None:
                busy.clear()
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # Default: the site-packages that holds numpy (a real tree of ~20-40k files; a layered venv's
    # own purelib may hold almost nothing).
    parser.add_argument("--tree", default=os.path.dirname(os.path.dirname(np.__file__)))
    parser.add_argument("--lookups", type=int, default=300)
    parser.add_argument("--import-lines", action="store_true", help="lookups on 'from' lines (import drafts)")
    parser.add_argument("--max-files", type=int, default=IndexLimits.max_files)
    parser.add_argument("--max-bytes", type=int, default=IndexLimits.max_bytes)
    parser.add_argument("--ghost", type=int, default=0, help="fills per condition (idle, building); 0: skip")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-yield", action="store_true", help="the build does not pause while a fill runs")
    args = parser.parse_args()
    tree = os.path.realpath(args.tree)
    listed = sum(len(files) for _, _, files in os.walk(tree))
    print(f"tree: {tree} ({listed} files on disk)")
    limits = IndexLimits(max_files=args.max_files, max_bytes=args.max_bytes)

    backend = None
    if args.ghost:
        from difill.engine.backends import local_backend

        backend = local_backend(device="cpu")
        ghost_p50(backend, 3, args.seed)  # warm up
        idle = ghost_p50(backend, args.ghost, args.seed)

    gc.collect()
    before = rss_mb()
    busy = threading.Event()
    index = WorkspaceIndex(limits, yield_to=busy.is_set if not args.no_yield else None)
    index.start()
    started = time.perf_counter()
    index.add_folder(tree)
    if backend is not None:
        building = ghost_p50(backend, args.ghost, args.seed, busy)
        still_building = not index.wait_idle(0.0)
    if not index.wait_idle(3600):
        print("the build did not finish", file=sys.stderr)
        return 1
    build_s = time.perf_counter() - started
    gc.collect()
    after = rss_mb()
    stats = index.stats()
    print(
        f"build: {build_s:.1f} s, {stats['files']} files, {stats['bytes'] / 2**20:.1f} MiB counted"
        f"{' (a cap was reached)' if stats['full'] else ''}; caps {limits.max_files} files, "
        f"{limits.max_bytes / 2**20:.0f} MiB"
    )
    print(f"RSS: {before:.0f} -> {after:.0f} MiB (+{after - before:.0f} MiB)")
    timings = lookups(index, args.lookups, args.seed, args.import_lines)
    print(
        f"lookup (retrieve + snippet block), {len(timings)} cursors: p50 {statistics.median(timings):.2f} ms, "
        f"p90 {percentile(timings, 0.9):.2f} ms, max {max(timings):.1f} ms"
    )
    if backend is not None:
        idle_after = ghost_p50(backend, args.ghost, args.seed)  # the same fills, the index built
        baseline = (idle + idle_after) / 2  # before and after: this machine's drift shows in both
        note = "" if still_building else " (the build ended before the fills did: a lower bound)"
        print(f"ghost text p50 ({args.ghost} fills each): idle before {idle:.0f} ms, while the index builds "
              f"{building:.0f} ms, idle after {idle_after:.0f} ms: {100 * (building / baseline - 1):+.0f}% "
              f"against idle{note}")  # fmt: skip
    index.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

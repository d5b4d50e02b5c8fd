"""Names scored on a vLLM remote, per ghost-text request (issue 50's target): what scoring the
workspace's undecided symbol candidates adds, in round trips and in latency, through the server's
own suggestion path (``suggestion_path.suggest`` on a ``RemoteBackend``) against the fake vLLM 0.33.0
(lab/fake_vllm.py) on loopback.

    python -m lab.bench_remote_names [--requests 200]

Two rows on the same fake and the same requests: with three undecided candidates (the remote is
asked to score them, then to fill), and with none (the fill alone).  The fake does no model work,
so the milliseconds are the client's and the loopback's; a real server adds its own step time to
the scoring request.  ``score_deadline_s`` bounds the scoring itself (engine/backends/vllm_names.py).
"""

from __future__ import annotations

import argparse
import statistics
import time

from difill.engine.api import FillOptions
from difill.engine.backends import RemoteConfig, connect
from difill.server.config import Settings
from difill.server.context.drafts import Draft
from difill.server.context.found import Retrieval
from difill.server.suggestion_path import Retrieved, SuggestionRequest, suggest
from difill.text.context import build_context
from lab.bench_timing import percentile
from lab.fake_vllm import VOCAB, FakeVllm, serve_in_thread

TEXT = "import logging\n\nlevel = levels.\nprint(level)\n"
CURSOR = TEXT.index("levels.") + len("levels.")
NAMES = ("debug", "info", "warning")


def run(requests: int) -> dict[str, dict[str, float]]:
    fake = FakeVllm()
    url, stop = serve_in_thread(fake)
    remote = connect(RemoteConfig(url, protocol="openai", canvas_length=64, vocab_size=VOCAB))
    try:
        remote.fill("x = ", "\n", FillOptions(max_hole_tokens=8, hole_candidates=(8,)))  # the path, found once
        ctx = build_context(TEXT, CURSOR, "python", 512, 16, None)
        request = SuggestionRequest("file:///bench/levels.py", TEXT, CURSOR, "python", ctx)
        settings = Settings(context_drafts="seed")
        rows = {}
        for row, undecided in (("three undecided names", NAMES), ("no names", ())):
            drafts = [Draft(name, "symbols", kind="symbol", undecided=True) for name in undecided]
            workspace = Retrieved(Retrieval([], [], drafts))
            ms, trips = [], []
            for _ in range(requests):
                before = len(fake.requests)
                started = time.perf_counter()
                suggest(remote, settings, request, workspace)
                ms.append((time.perf_counter() - started) * 1000)
                trips.append(len(fake.requests) - before)
            rows[row] = {
                "requests": requests,
                "round_trips_median": statistics.median(trips),
                "round_trips_max": max(trips),
                "p50_ms": round(percentile(ms, 50), 2),
                "p95_ms": round(percentile(ms, 95), 2),
            }
        return rows
    finally:
        remote.close()
        stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args(argv)
    print("| row | requests | round trips (median / max) | p50 ms | p95 ms |")
    print("|---|---|---|---|---|")
    for row, r in run(args.requests).items():
        print(f"| {row} | {r['requests']} | {r['round_trips_median']:.0f} / {r['round_trips_max']} "
              f"| {r['p50_ms']} | {r['p95_ms']} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

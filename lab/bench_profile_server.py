"""The server half of `difill bench --profile`: the same requests through `difill serve` over stdio.

The client can only see a round trip, so that is what is timed: for each case the fill (open the
document, ask) and the keystroke (type the middle's first character, ask again), as
lab/bench_profile.py asks them in process.  "Beyond the suggestion path" is each round trip less the
same request's untimed in-process total (paired by case, p50 of the differences): the LSP
transport both ways, pygls, the service (its cache, the fill in flight, the hop to the model's
worker thread) and whatever the server's own state changes - a keystroke that agrees with the
fill in flight or in the cache is answered without a fill, so its difference can be negative.
"""

from __future__ import annotations

import asyncio

from lab.bench_server import BenchClient
from lab.bench_timing import SHAPE_GROUPS, percentile
from lab.training.examples import InfillExample


async def _round_trips(model_dir: str | None, cases: dict[str, list[InfillExample]]) -> list[dict]:
    bench = BenchClient()
    await bench.start(model_dir)
    out: list[dict] = []
    first = True
    for shapes in SHAPE_GROUPS.values():
        for shape in shapes:
            for ex in cases[shape]:
                text, offset = ex.prefix + ex.suffix, len(ex.prefix)
                bench.open(text)
                if first:  # the model loads: wait for it, and warm the first-call allocations
                    await asyncio.wait_for(bench.ready.wait(), 120)
                    await bench.suggest(text, offset)
                    first = False
                _, fill_ms = await bench.suggest(text, offset)
                typed = bench.insert(text, offset, ex.middles[0][0])
                _, key_ms = await bench.suggest(typed, offset + 1)
                bench.close()
                out += [{"kind": "fill", "ms": fill_ms}, {"kind": "keystroke", "ms": key_ms}]
    await bench.stop()
    return out


def profile_server(
    model_dir: str | None, cases: dict[str, list[InfillExample]], in_process: list[dict]
) -> dict:
    """Round trips per kind, and each less the same request's in-process total (``in_process``:
    lab/bench_profile.py's untimed records, in the same order)."""
    trips = asyncio.run(_round_trips(model_dir, cases))
    report: dict = {}
    for kind in ("fill", "keystroke"):
        pairs = [
            (t["ms"], r["total_ms"]) for t, r in zip(trips, in_process, strict=True) if t["kind"] == kind
        ]
        report[kind] = {
            "requests": len(pairs),
            "round_trip_p50_ms": round(percentile([t for t, _ in pairs], 50), 1),
            "round_trip_p95_ms": round(percentile([t for t, _ in pairs], 95), 1),
            "in_process_p50_ms": round(percentile([r for _, r in pairs], 50), 1),
            "beyond_path_p50_ms": round(percentile([t - r for t, r in pairs], 50), 1),
        }
    return report


def format_server(report: dict) -> str:
    rows = [
        "through `difill serve` (client round trip) beside the same requests in process (untimed)",
        "| request | round trip p50 / p95 ms | in process p50 ms | round trip less in process, p50 of pairs |",
        "|---|---|---|---|",
    ]
    for kind in ("fill", "keystroke"):
        r = report[kind]
        rows.append(f"| {kind} ({r['requests']}) | {r['round_trip_p50_ms']} / {r['round_trip_p95_ms']} | "
                    f"{r['in_process_p50_ms']} | {r['beyond_path_p50_ms']} |")  # fmt: skip
    return "\n".join(rows)

"""`difill bench --profile`: where a ghost-text fill's time goes, and how many passes it needs.

In process, on the held-out cases `difill bench` uses, each case is asked twice as the editor asks
it: a fill at the cursor, then a keystroke (the middle's first character typed, asked again; the
prefix cache reuses the prefix, as while typing).  Each request goes through the server's
suggestion path (``ServedModel``'s two halves: ``request``, ``suggest``) and is timed part by part
(lab/profile_hooks.py): the context (syntax tree, windows, shape), drafts and the request's plan,
tokenizing, the prefix encode, the canvas, each denoising pass split into its modules and the
sampler, the text pipeline, and the JSON of the LSP response.  The cases run twice, without timers
and with them, so the profile also says what its timers cost.

Passes: for each fill the passes its loop ran, and the first pass whose best canvas already held
the final middle ("settled"), by the final middle's length in tokens.

Through the server (lab/bench_profile_server.py) and one pass at C=16 (lab/bench_step.py) are
their own sections.  10 cases per shape; ``--quick``: 2.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from typing import Any

from lab.bench_timing import SHAPE_GROUPS, percentile
from lab.profile_hooks import STEP_PARTS, Recorder, instrumented, step_split
from lab.training.examples import InfillExample

URI = "file:///bench/case.py"
REQUEST_PARTS = (
    "context (tree, windows, shape)", "drafts and plan", "tokenize", "prefix encode",
    "canvas and candidates", *STEP_PARTS, "pipeline", "JSON response", "other",
)  # fmt: skip
BUCKETS = ((1, 4), (5, 8), (9, 16), (17, 32), (33, 10_000))  # final middle tokens


@functools.cache
def _converter() -> Any:
    """pygls's converter, built once as the server builds it (building one takes milliseconds)."""
    from pygls.protocol import default_converter

    return default_converter()


def response_json(texts: list[str], text: str, offset: int) -> str:
    """The LSP response the server would send for ``texts`` at ``offset``, as pygls writes it."""
    from lsprotocol import types

    from lab.bench_server import position_of

    at = position_of(text, offset)
    items = [types.InlineCompletionItem(insert_text=t, range=types.Range(start=at, end=at)) for t in texts]
    response = types.InlineCompletionResponse(id=1, result=types.InlineCompletionList(items=items))
    return json.dumps(response, default=_converter().unstructure)


def ask(served: Any, text: str, offset: int, recorder: Recorder | None) -> dict:
    """One request through the suggestion path, timed; with ``recorder``, part by part."""
    from difill.server.suggestion_path import Retrieved, suggest

    if recorder is not None:
        recorder.reset()
    started = time.perf_counter()
    request = served.request(text, offset, URI)
    context_ms = (time.perf_counter() - started) * 1000
    shown = suggest(served.engine, served.settings, request, Retrieved(None))
    json_started = time.perf_counter()
    response_json(shown.texts, text, offset)
    json_ms = (time.perf_counter() - json_started) * 1000
    stats = shown.result.stats
    record: dict = {
        "total_ms": (time.perf_counter() - started) * 1000,
        "text": shown.text,
        "model_ran": stats.decoder_forwards > 0,
        "passes": stats.decoder_forwards,
        "middle_tokens": stats.hole_tokens,
    }
    if recorder is None:
        return record
    ms = recorder.ms
    record["total_ms"] -= ms.get("_preview", 0.0)  # the bench's own capture of each pass
    parts = {
        "context (tree, windows, shape)": context_ms,
        "drafts and plan": shown.retrieval_ms,
        "tokenize": ms.get("tokenize", 0.0),
        "prefix encode": ms.get("prefix encode", 0.0),
        "pipeline": ms.get("pipeline", 0.0),
        "JSON response": json_ms,
    }
    if record["model_ran"]:
        parts["canvas and candidates"] = max(
            0.0, ms["_fill"] - ms["_denoise"] - parts["tokenize"] - parts["prefix encode"]
        )
        parts.update(step_split(ms))
    parts["other"] = max(0.0, record["total_ms"] - sum(parts.values()))
    record.update(parts=parts, slots=recorder.slots, open_slots=recorder.open_slots, settled=recorder.settled)
    return record


def run_cases(served: Any, cases: dict[str, list[InfillExample]], recorder: Recorder | None) -> list[dict]:
    """Every case as a fill, then as a keystroke (the middle's first character typed)."""
    out = []
    for group, shapes in SHAPE_GROUPS.items():
        for shape in shapes:
            for ex in cases[shape]:
                text, offset = ex.prefix + ex.suffix, len(ex.prefix)
                fill = ask(served, text, offset, recorder)
                fill.update(kind="fill", group=group, exact=fill["text"].rstrip() == ex.middles[0].rstrip())
                typed = ex.prefix + ex.middles[0][0] + ex.suffix
                key = ask(served, typed, offset + 1, recorder)
                key.update(kind="keystroke", group=group)
                out += [fill, key]
    return out


def part_table(records: list[dict]) -> dict:
    """p50 ms and share of the total per part, over requests where the model ran."""
    ran = [r for r in records if r["model_ran"]]
    total = sum(r["total_ms"] for r in ran) or 1.0
    return {
        part: {
            "p50_ms": round(percentile([r["parts"].get(part, 0.0) for r in ran], 50), 2),
            "share": round(sum(r["parts"].get(part, 0.0) for r in ran) / total, 4),
        }
        for part in REQUEST_PARTS
    } | {"_total_p50_ms": round(percentile([r["total_ms"] for r in ran], 50), 1), "_requests": len(ran)}


def per_pass(records: list[dict]) -> dict:
    """The loop's parts as mean ms per pass, with the mean canvas and open slots of a pass."""
    ran = [r for r in records if r["model_ran"]]
    passes = sum(r["passes"] for r in ran) or 1
    loop = sum(sum(r["parts"].get(p, 0.0) for p in STEP_PARTS) for r in ran) or 1.0
    out = {
        p: {"ms": round(sum(r["parts"].get(p, 0.0) for r in ran) / passes, 3),
            "share": round(sum(r["parts"].get(p, 0.0) for r in ran) / loop, 4)}
        for p in STEP_PARTS
    }  # fmt: skip
    return out | {
        "_pass_ms": round(loop / passes, 2),
        "_slots": round(sum(r["slots"] for r in ran) / passes, 1),
        "_open_slots": round(sum(r["open_slots"] for r in ran) / passes, 1),
    }


def passes_table(records: list[dict]) -> list[dict]:
    """Fills by their final middle's length in tokens: passes run and the pass the text settled."""
    rows = []
    fills = [r for r in records if r["kind"] == "fill" and r["model_ran"]]
    for lo, hi in BUCKETS:
        group = [r for r in fills if lo <= r["middle_tokens"] <= hi]
        settled = [r for r in group if r["settled"] is not None]
        if not group:
            continue
        rows.append({
            "middle_tokens": f"{lo}-{hi}" if hi < 10_000 else f"{lo}+",
            "fills": len(group),
            "passes_mean": round(statistics.fmean(r["passes"] for r in group), 2),
            "passes_p50": percentile([r["passes"] for r in group], 50),
            "settled_mean": round(statistics.fmean(r["settled"] for r in settled), 2) if settled else None,
            "settled_at_1": round(sum(r["settled"] == 1 for r in settled) / max(1, len(settled)), 3),
            "passes_after_settled": round(
                statistics.fmean(r["passes"] - r["settled"] for r in settled), 2) if settled else None,
            "unsettled": len(group) - len(settled),
            "exact_match": round(sum(r["exact"] for r in group) / len(group), 3),
        })  # fmt: skip
    empty = [r for r in fills if r["middle_tokens"] == 0]
    if empty:
        rows.append({"middle_tokens": "0 (nothing shown)", "fills": len(empty),
                     "passes_mean": round(statistics.fmean(r["passes"] for r in empty), 2),
                     "passes_p50": percentile([r["passes"] for r in empty], 50)})  # fmt: skip
    return rows


def profile_in_process(model_dir: str | None, cases: dict[str, list[InfillExample]]) -> dict:
    from lab.quality import load_served

    return profile_served(load_served(model_dir), cases)


def profile_served(served: Any, cases: dict[str, list[InfillExample]]) -> dict:
    """The profile of ``served`` (a ServedModel on an InfillEngine) on ``cases``: per request
    kind the part table, the loop's parts per pass, the passes table, and the untimed records."""
    import torch

    served.suggest("import os\n\n", len("import os\n"), "file:///warm-up.py")  # first-call allocations
    response_json(["warm-up"], "", 0)
    plain = run_cases(served, cases, None)
    with instrumented(served.engine, Recorder()) as recorder:
        timed = run_cases(served, cases, recorder)
    report: dict = {"threads": torch.get_num_threads(), "cases": len(timed) // 2}
    for kind in ("fill", "keystroke"):
        these = [r for r in timed if r["kind"] == kind]
        untimed = [r for r in plain if r["kind"] == kind and r["model_ran"]]
        report[kind] = part_table(these) | {
            "_untimed_total_p50_ms": round(percentile([r["total_ms"] for r in untimed], 50), 1),
            "_no_model_run": sum(not r["model_ran"] for r in these),
            "_no_model_p50_ms": round(
                percentile([r["total_ms"] for r in these if not r["model_ran"]], 50), 2
            ),
        }
    report["per_pass"] = per_pass(timed)
    report["passes"] = passes_table(timed)
    report["_untimed"] = plain  # the server section pairs its round trips with these
    return report


def format_profile(report: dict) -> str:
    fill, key = report["fill"], report["keystroke"]
    rows = [
        f"in process, {report['cases']} held-out cases, torch on {report['threads']} thread(s); "
        "p50 ms per part and its share of all requests' time (requests where the model ran)",
        "| part | fill p50 ms | fill share | keystroke p50 ms | keystroke share |",
        "|---|---|---|---|---|",
    ]
    for part in REQUEST_PARTS:
        f, k = fill[part], key[part]
        rows.append(f"| {part} | {f['p50_ms']} | {f['share']:.1%} | {k['p50_ms']} | {k['share']:.1%} |")
    rows.append(f"| **total** (timers on / off) | {fill['_total_p50_ms']} / {fill['_untimed_total_p50_ms']} | "
                f"| {key['_total_p50_ms']} / {key['_untimed_total_p50_ms']} | |")  # fmt: skip
    rows.append(f"requests with the model run: {fill['_requests']} fills, {key['_requests']} keystrokes; "
                f"answered by a draft without it: {fill['_no_model_run']} fills (p50 {fill['_no_model_p50_ms']} ms), "
                f"{key['_no_model_run']} keystrokes (p50 {key['_no_model_p50_ms']} ms)")  # fmt: skip
    p = report["per_pass"]
    rows += ["", f"one denoising pass, mean over every pass above: {p['_pass_ms']} ms, "
             f"{p['_slots']} canvas slots, {p['_open_slots']} open (LM head rows)",
             "| part | ms per pass | share of the loop |", "|---|---|---|"]  # fmt: skip
    rows += [f"| {part} | {p[part]['ms']} | {p[part]['share']:.1%} |" for part in STEP_PARTS]
    rows += ["", "passes per fill by the final middle's length (tokens); settled: the first pass whose "
             "best canvas held the final middle",
             "| middle tokens | fills | passes mean / p50 | settled at pass (mean) | settled at pass 1 | "
             "passes after settled (mean) | never settled | exact match |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in report["passes"]:
        rows.append(f"| {r['middle_tokens']} | {r['fills']} | {r['passes_mean']} / {r['passes_p50']} | "
                    f"{r.get('settled_mean', '-')} | {r.get('settled_at_1', 0):.0%} | "
                    f"{r.get('passes_after_settled', '-')} | {r.get('unsettled', '-')} | "
                    f"{r.get('exact_match', 0):.1%} |")  # fmt: skip
    return "\n".join(rows)


def main(args: argparse.Namespace, cases: dict[str, list[InfillExample]]) -> int:
    """``cases``: lab/bench.py's held-out cases (it loads them: this module never imports it)."""
    report = {
        "cases_per_shape": len(cases["whole_line"]),
        "in_process": profile_in_process(args.model, cases),
    }
    records = report["in_process"].pop("_untimed")
    if not getattr(args, "no_server", False):
        from lab.bench_profile_server import profile_server

        report["server"] = profile_server(args.model, cases, records)
    from lab.bench_step import step_profile

    report["step_c16"] = step_profile(args.model, 16)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    from lab.bench_profile_server import format_server
    from lab.bench_step import format_step

    print(format_profile(report["in_process"]))
    if "server" in report:
        print("\n" + format_server(report["server"]))
    print("\n" + format_step(report["step_c16"]))
    return 0

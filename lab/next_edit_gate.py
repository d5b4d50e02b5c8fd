"""What the next-edit gate keeps off screen (`difill eval --next-edit`'s last table).

In process, not through the server: the same region rewrite the server runs for ``nextEdit:
model`` (server/features/next_edit/model.py), on each mined case, with what the model wrote
*before* the gate: how often it changed the region at all, how often that change passed the gate,
how often the ungated change was the commit's second hunk, and how sure the model was of what
it changed (the lowest temperature-1 probability of a changed token, the gate's test).  This is
the noise the gate stops, and the price it pays (right edits it would hide).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from difill.server.config import Settings
from difill.server.features.next_edit import model
from difill.server.features.next_edit.history import EditHistory
from difill.text.spans import changed_span, keep_edges
from lab.next_edit_mining import Case

KINDS = ("repeat", "follow", "none")


def gate_report(cases: list[Case], model_dir: str | None) -> dict[str, Any]:
    from difill.engine.backends import BackendSpec, make_backend

    engine = make_backend(BackendSpec(model_dir, "cpu"))
    settings = Settings()
    runs: list[tuple[float, int, int, float, float]] = []  # (total, hole, steps, decoder, prefix) per run
    rows: dict[str, dict[str, Any]] = {
        k: {"cases": 0, "changed": 0, "shown": 0, "ungated_exact": 0, "probs": []} for k in KINDS
    }
    for case in cases:
        start, end, new = case.edit
        text = case.before[:start] + new + case.before[end:]
        history = EditHistory()
        history.changed("file:///gate.py", case.before, text, 2)
        last = history.last("file:///gate.py")
        rewrite = model.region_rewrite(text, start + len(new), last, [], settings, "python", "python") if last else None
        row = rows[case.kind]
        row["cases"] += 1
        if rewrite is None:
            continue
        result = rewrite.work(lambda: False)(engine)
        if result is None:
            continue
        spans, gated = rewrite.edits(result)
        st = result.stats
        runs.append((st.total_ms, st.hole_length, st.steps, st.decoder_ms, st.encoder_ms))
        region = rewrite.region
        best = result.candidates[0]
        rewritten = keep_edges(region.text, best.text)
        low, old_end, new_end = changed_span(region.text, rewritten)
        if region.text[low:old_end].split() != rewritten[low:new_end].split():
            row["changed"] += 1
            if best.change_logprob is not None:
                row["probs"].append(math.exp(best.change_logprob))
            ungated = text[: region.start] + rewritten + text[region.end :]
            row["ungated_exact"] += case.kind != "none" and ungated == case.expected
        row["shown"] += bool(spans)
    out: dict[str, Any] = {}
    if runs:  # the engine's own time per run (the round trip through the server adds to it)
        columns = zip(*runs, strict=True)
        names = ("total_ms", "hole_slots", "steps", "decoder_ms", "prefix_ms")
        out["engine_medians"] = {
            n: round(statistics.median(c), 1) for n, c in zip(names, columns, strict=True)
        }
    for kind, row in rows.items():
        n = max(1, row["cases"])
        probs = row.pop("probs")
        out[kind] = {
            "cases": row["cases"],
            "changed": round(row["changed"] / n, 4),
            "shown": round(row["shown"] / n, 4),
            "ungated_exact": round(row["ungated_exact"] / n, 4),
            "median_change_prob": round(statistics.median(probs), 4) if probs else None,
            "max_change_prob": round(max(probs), 4) if probs else None,
        }
    return out


def format_gate(report: dict[str, Any]) -> str:
    lines = [
        "| kind | cases | the model changed the region | passed the gate | ungated change = the commit's hunk "
        f"| lowest changed-token probability: median (max); the gate wants >= {model.MIN_CHANGE_PROB} |",
        "|---|---|---|---|---|---|",
    ]
    for kind in KINDS:
        r = report[kind]
        prob = (
            "-"
            if r["median_change_prob"] is None
            else f"{r['median_change_prob']:.3f} ({r['max_change_prob']:.3f})"
        )
        exact = "-" if kind == "none" else f"{r['ungated_exact']:.1%}"
        lines.append(f"| {kind} | {r['cases']} | {r['changed']:.1%} | {r['shown']:.1%} | {exact} | {prob} |")
    if "engine_medians" in report:
        m = report["engine_medians"]
        lines.append(
            f"\nThe rewrite in process, medians per run: {m['total_ms']:.0f} ms ({m['decoder_ms']:.0f} ms "
            f"denoising, {m['prefix_ms']:.0f} ms prefix), {m['hole_slots']:.0f} hole slots, {m['steps']:.0f} steps"
        )
    return "\n".join(lines)

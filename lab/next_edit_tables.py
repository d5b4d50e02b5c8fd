"""The tables `difill eval --next-edit` prints (lab/next_edit_eval.py's summaries): pooled rows,
then one line per project, each rate with its 95% Wilson interval where it is a target."""

from __future__ import annotations

from typing import Any


def _ci(pair: tuple[float, float]) -> str:
    return f"[{pair[0]:.0%}, {pair[1]:.0%}]"


def format_rows(summaries: list[dict[str, Any]]) -> str:
    lines = [
        "| row | repeat exact [95% CI] (any of 3) | repeats left silent | follow exact [95% CI] "
        "| noise on none [95% CI] | half-typed asks answered [95% CI] (asks) | mid-edit asks answered "
        "| p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        r, f, n, h = s["repeat"], s["follow"], s["none"], s["half_typed"]
        lines.append(
            f"| {s['row']} (`nextEdit: {s['nextEdit']}`) | {r['exact']:.1%} {_ci(r['exact_ci'])} "
            f"({r['exact_any']:.1%}) | {r['silent']:.1%} | {f['exact']:.1%} {_ci(f['exact_ci'])} "
            f"| {n['noise']:.1%} {_ci(n['noise_ci'])} | {_half(h)} | {_interim(s)} "
            f"| {s['p50_ms']:.0f} | {s['p95_ms']:.0f} |"
        )
    lines += ["", "By project (cases repeat/follow/none):", ""]
    lines += [
        "| row | project | repeat exact [95% CI] | silent | follow exact | noise [95% CI] | half-typed | cases |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        for repo, p in s["projects"].items():
            r, f, n = p["repeat"], p["follow"], p["none"]
            lines.append(
                f"| {s['nextEdit']} | {repo} | {r['exact']:.0%} {_ci(r['exact_ci'])} | {r['silent']:.0%} "
                f"| {f['exact']:.0%} | {n['noise']:.0%} {_ci(n['noise_ci'])} | {_half(p['half_typed'])} "
                f"| {r['cases']}/{f['cases']}/{n['cases']} |"
            )
    return "\n".join(lines)


def _half(h: dict[str, Any]) -> str:
    """Mid-word asks answered; "-" where none was made (the copy rule is not served)."""
    return f"{h['answered']:.1%} {_ci(h['ci'])} ({h['asks']})" if h["asks"] else "-"


def _interim(summary: dict[str, Any]) -> str:
    """Cases where an ask after a whole token, mid-edit, answered; "-" for the rule not served."""
    return "-" if summary["nextEdit"] == "-" else f"{summary['interim']['noise']:.1%}"

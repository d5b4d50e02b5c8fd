"""`difill bench`: latency and quality, diffusion vs the same-size AR baseline, in one run.

Two paths are timed on the same held-out cases:
1. in process: the server's suggestion path without the transport (``ServedModel``: the same
   shape, settings and text pipeline), for the diffusion model and the AR baseline alike;
2. the real language server over stdio (`difill serve`), as an editor drives it, including a
   typing replay: held-out lines typed keystroke by keystroke (didChange + inlineCompletion).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

from lab.bench_editor import format_editor
from lab.bench_editor import main as bench_editor_main
from lab.bench_server import bench_server
from lab.bench_timing import SHAPE_GROUPS, Timing
from lab.training.evaluate import default_ar_baseline
from lab.training.examples import InfillExample


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_cases(corpus: Path, per_shape: int, seed: int) -> dict[str, list[InfillExample]]:
    from lab.training.corpus import build_corpus
    from lab.training.evaluate import eval_cases

    if not (corpus / "heldout.jsonl").exists():
        # No corpus here (a fresh clone, CI): the standard library's share of it is enough to time
        # fills. Its held-out files are the full corpus's stdlib held-out files (same split rule).
        corpus = corpus.with_name(corpus.name + "-stdlib")
        if not (corpus / "heldout.jsonl").exists():
            print(f"no corpus: building the standard library's part of it in {corpus}")
            build_corpus(corpus, corpus / "archives", pins=[])
    return eval_cases(corpus, per_shape, seed)


EVERY_PASS = "diffusion, no settled stop"


def bench_in_process(
    model_dir: str | None, cases: dict[str, list[InfillExample]], settled_passes: int | None = None
) -> dict:
    """The server's suggestion path in this process (``ServedModel``: shape, settings, pipeline),
    without the LSP transport: what the model costs, and what the editor would show.
    ``settled_passes``: the sampler's settled stop set so (0: every pass to the usual stop)."""
    from lab.quality import load_served

    started = time.perf_counter()
    served = load_served(model_dir)
    load_s = time.perf_counter() - started
    if settled_passes is not None:
        served.engine.loaded.sampler.settled_passes = settled_passes
    served.suggest("import os\n\n", len("import os\n"), "file:///warm-up.py")  # first-call allocations
    groups: dict[str, Timing] = {g: Timing() for g in SHAPE_GROUPS}
    for group, shapes in SHAPE_GROUPS.items():
        for shape in shapes:
            for ex in cases[shape]:
                shown = served.suggest(ex.prefix + ex.suffix, len(ex.prefix), "file:///bench/case.py")
                t = groups[group]
                t.ms.append(shown.ms)
                t.forwards.append(shown.result.stats.decoder_forwards)
                t.tokens.append(shown.result.stats.hole_tokens)
                t.exact.append(shown.text.rstrip() == ex.middles[0].rstrip())
                t.hole_chars.append(len(ex.middles[0]))
    out = {g: t.summary() for g, t in groups.items()}
    out["load_s"] = round(load_s, 2)
    out["tokens_per_forward"] = round(
        sum(sum(t.tokens) for t in groups.values()) / max(1, sum(sum(t.forwards) for t in groups.values())), 3
    )
    out["_points"] = [(n, ms) for t in groups.values() for n, ms in zip(t.hole_chars, t.ms, strict=True)]
    return out


def format_table(report: dict) -> str:
    rows = [
        "| path | model | shape | p50 ms | p95 ms | exact match | forwards | tokens/forward | tokens/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for path_key, path_name in (("engine", "in process"), ("server", "server")):
        for model in ("diffusion", EVERY_PASS, "ar"):
            section = report.get(path_key, {}).get(model, {})
            for group in SHAPE_GROUPS:
                s = section.get(group)
                if s:
                    rows.append(
                        f"| {path_name} | {model} | {group} | {s['p50_ms']} | {s['p95_ms']} | {s['exact_match']:.1%} | "
                        f"{s.get('forwards', '-')} | {s.get('tokens_per_forward', '-')} | {s.get('tokens_per_s', '-')} |"
                    )
    for model, server in report.get("server", {}).items():
        t = server["typing"]
        rows.append(
            f"\n{model} typing replay through the server ({t['lines']} lines, {t['keystrokes']} keystrokes): "
            f"p50 {t['p50_ms']} ms, p95 {t['p95_ms']} ms, {t['accepted_share']:.1%} of characters accepted; "
            f"start to first completion {server['start_to_first_completion_s']} s; warm server RSS {server['warm_rss_mb']} MB"
        )
    rows.append(f"diffusion model load {report['engine']['diffusion']['load_s']} s")
    return "\n".join(rows)


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for model, color in (("diffusion", "tab:blue"), ("ar", "tab:orange")):
        points = report.get("engine", {}).get(model, {}).get("_points", [])
        if points:
            xs, ys = zip(*points, strict=True)
            ax.scatter(xs, ys, s=12, alpha=0.6, color=color, label=model)
    ax.set_xlabel("target middle length (characters)")
    ax.set_ylabel("latency (ms)")
    ax.set_title("difill bench: latency vs hole length (in process, 2-core CPU)")
    ax.legend()
    ax.grid(alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def typing_section(args: argparse.Namespace) -> int:
    """`difill bench --typing N`: only the typing replay at 4, 6 and 8 characters a second
    (lab/bench_typing.py), printed as a table and written as JSON beside the plot path."""
    from lab.bench_typing import Server, bench_typing, format_typing

    server = Server(
        args.model, getattr(args, "server_python", None) or sys.executable, getattr(args, "engine", None)
    )
    report = bench_typing(args.typing, repos=getattr(args, "typing_repos", None), server=server)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    path = Path(args.plot or ("runs/bench-typing-quick.png" if args.quick else "docs/bench-typing.png"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    print(format_typing(report))
    print(f"\nfigures: {path.with_suffix('.json')}")
    return 0


def editor_section(args: argparse.Namespace, cases: dict[str, list[InfillExample]]) -> int:
    """`difill bench --editor`: only the editor's case (lab/bench_editor.py), its JSON beside the plot path."""
    report = bench_editor_main(args.model, args.ar_model or default_ar_baseline(), cases, args.quick)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    path = Path(args.plot or ("runs/bench-editor-quick.png" if args.quick else "runs/bench-editor.png"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    print(format_editor(report))
    print(f"\nfigures: {path.with_suffix('.json')}")
    return 0


def main(args: argparse.Namespace) -> int:
    if getattr(args, "profile", False):  # each part of a fill and a keystroke (lab/bench_profile.py)
        from lab.bench_profile import main as profile_main

        return profile_main(args, load_cases(Path("data/corpus"), 2 if args.quick else 10, seed=99))
    if getattr(args, "team", False):  # the team path's wire costs alone (lab/bench_team.py)
        from lab.bench_team import main as team_main

        return team_main(args)
    if getattr(args, "engines", None) is not None:  # torch and llama.cpp side by side (lab/bench_engines.py)
        from lab.bench_engines import format_engines
        from lab.bench_engines import main as engines_main

        report = engines_main(args.engines, args.model, getattr(args, "gguf", None))
        print(json.dumps(report, indent=1) if args.json else format_engines(report))
        return 0
    if getattr(args, "typing", None):
        return typing_section(args)
    per_shape = 4 if args.quick else 40
    cases = load_cases(Path("data/corpus"), per_shape, seed=99)
    if getattr(args, "editor", False):
        return editor_section(args, cases)
    report: dict = {"cases_per_shape": per_shape}
    report["engine"] = {"diffusion": bench_in_process(args.model, cases)}
    # The sampler's settled stop changes what some fills return: the row without it shows both.
    report["engine"][EVERY_PASS] = bench_in_process(args.model, cases, settled_passes=0)
    ar_dir = args.ar_model or default_ar_baseline()
    if ar_dir:
        report["engine"]["ar"] = bench_in_process(ar_dir, cases)
    # The editor's case (a warm prefix) beside the fresh file's, with and without the canvas cache.
    report["editor"] = bench_editor_main(args.model, ar_dir, cases, args.quick)
    report["engine_peak_rss_mb"] = round(peak_rss_mb(), 1)
    # The same server runs either model: a Llama checkpoint is served as the AR baseline.
    report["server"] = {"diffusion": bench_server(args.model, cases, quick=args.quick)}
    if ar_dir:
        report["server"]["ar"] = bench_server(ar_dir, cases, quick=args.quick)
    # Headline per model: end to end through the server (latency, exact match), with the engine's
    # forwards and tokens per forward for the same cases.
    for model in ("diffusion", "ar"):
        if model in report["engine"]:
            engine, server = report["engine"][model], report["server"][model]
            report[model] = {g: {**engine[g], **server[g]} for g in SHAPE_GROUPS}
            report[model]["typing"] = server["typing"]
    report["diffusion"]["tokens_per_forward"] = report["engine"]["diffusion"]["tokens_per_forward"]
    plot_path = Path(args.plot or ("runs/bench-quick.png" if args.quick else "docs/bench.png"))
    if not args.json:
        plot_path.parent.mkdir(parents=True, exist_ok=True)
        plot(report, plot_path)
    for section in report["engine"].values():
        section.pop("_points", None)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        data = plot_path.with_suffix(".json")
        data.write_text(json.dumps(report, indent=1) + "\n")
        print(format_table(report))
        print("\n" + format_editor(report["editor"]))
        print(f"\nplot: {plot_path}, figures: {data}; engine peak RSS {report['engine_peak_rss_mb']} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(argparse.Namespace(model=None, ar_model=None, quick=True, json=False, plot=None)))

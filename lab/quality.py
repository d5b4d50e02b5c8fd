"""`difill eval`: held-out quality of what the editor shows, for the diffusion model and the AR baseline.

Every case goes through the language server's own suggestion path (server/suggestion_path.py ``suggest``):
the document and cursor make a ``FillContext`` (``build_context``: the prefix/suffix windows, the
tree-sitter shape and its token budget), the model is asked with the server's default ``Settings``
(maxTokens, steps, contextTokens; one hole length, as while typing), and ``shown_texts`` runs the
text pipeline (text/pipeline.py). The score is on the first text shown, "" when the filters leave nothing.

The typing replay types the last lines of held-out files character by character; after each
character the server's suggestion is asked for, and when the text still to be typed starts with it,
it is accepted (a Tab) and its characters count as saved.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import dataclass, replace
from pathlib import Path

from difill.engine.api import FillOptions, FillResult, InfillBackend
from difill.server.config import Settings
from difill.server.suggestion_path import ServedModel
from lab.training.corpus import read_jsonl
from lab.training.evaluate import (
    ShapeScore,
    TypingReplay,
    default_ar_baseline,
    eval_cases,
    format_table,
)

EVAL_URI = "file:///heldout/case.py"


def load_served(
    model_dir: str | None, experiment: dict | None = None, filler_policy: str | None = None,
    settings: Settings | None = None,
) -> ServedModel:  # fmt: skip
    """Load a checkpoint (diffusion, or a Llama as the AR baseline) as the server does.

    ``filler_policy`` (experiment): end middles as a checkpoint without ``<|fill|>`` would
    (engine/vocab.py: ``eos``, ``pad`` or ``none``); ``<|fill|>`` is then banned like any special.
    """
    from difill.engine.backends import BackendSpec, make_backend

    if not filler_policy:
        engine = make_backend(BackendSpec(model_dir, "cpu"))
    else:
        from difill.engine.infill import InfillEngine
        from difill.engine.model import load_model
        from difill.engine.vocab import TokenIds

        loaded = load_model(model_dir, "cpu")
        ids = TokenIds.from_tokenizer(loaded.tokenizer, loaded.ids.vocab_size, filler_policy)
        engine = InfillEngine(replace(loaded, ids=ids))
    return ServedModel(WithOptions(engine, experiment) if experiment else engine, settings)


class WithOptions:
    """A backend whose fills take some FillOptions fields from an experiment (``difill eval
    --revise``): an option is measured through the served path before it ships, and no production
    signature carries it."""

    def __init__(self, engine: InfillBackend, overrides: dict) -> None:
        self.engine = engine
        self.overrides = overrides

    def fill(self, prefix, suffix, options=None, should_stop=None, on_preview=None) -> FillResult:
        options = replace(options or FillOptions(), **self.overrides)
        return self.engine.fill(prefix, suffix, options, should_stop=should_stop, on_preview=on_preview)

    def __getattr__(self, name: str):  # the checkpoint's facts (loaded, languages), the edits
        return getattr(self.engine, name)


def score_cases(model: ServedModel, cases: dict, original_parses: dict) -> dict:
    scores = {shape: ShapeScore() for shape in cases}
    for shape, examples in cases.items():
        for ex in examples:
            shown = model.suggest(ex.prefix + ex.suffix, len(ex.prefix), EVAL_URI)
            scores[shape].add(ex, shown.text, shown.forwards, shown.tokens_per_forward, shown.ms,
                              original_parses[id(ex)])  # fmt: skip
    return {shape: s.summary() for shape, s in scores.items()}


def typing_replay(model: ServedModel, corpus: Path, files: int, lines: int, seed: int) -> dict:
    """Type the last ``lines`` non-trivial lines of ``files`` held-out files, Tab on a match."""
    docs = [d["text"] for d in read_jsonl(corpus / "heldout.jsonl") if d["text"].count("\n") >= 40]
    rng = random.Random(seed)
    replay = TypingReplay()
    for text in rng.sample(docs, min(files, len(docs))):
        body = text.rstrip("\n") + "\n"
        starts = [i + 1 for i, ch in enumerate(body) if ch == "\n"][:-1]
        cut = starts[-lines] if len(starts) >= lines else 0
        replay.type_target(body[cut:], lambda typed, before=body[:cut]: suggested(model, before + typed))
    return replay.summary()


def suggested(model: ServedModel, text: str) -> tuple[str, float]:
    """What ghost text at the end of ``text`` shows, and its ms."""
    shown = model.suggest(text, len(text), EVAL_URI)
    return shown.text, shown.ms


@dataclass(frozen=True)
class EvalPlan:
    """What one ``difill eval`` measures: the checkpoints, the cases, and how they are served."""

    diffusion_dir: str | None  # None: the shipped model
    corpus: Path  # its held-out split gives the in-file cases
    per_shape: int  # in-file cases a shape (0: none, and the corpus is not read)
    seed: int
    ar_dir: str | None = None  # the AR baseline, scored on the same cases; None: not run
    typing_files: int = 0  # held-out files the typing replay types into
    typing_lines: int = 4  # their last lines, typed
    experiment: dict | None = None  # FillOptions overrides for the diffusion model (``--revise``)
    filler_policy: str | None = None  # ``--filler``: end middles as a checkpoint without <|fill|>
    settings: Settings | None = None  # the server settings both are served with (None: its own)
    workspace_cases: int = 0  # repository-level cases a shape (lab/workspace_eval.py)
    workspace_typing_files: int = 0
    workspace_pins: tuple = ()  # the packages they come from (never in the corpus)
    archive_cache: Path = Path("data/archives")  # where those packages' archives are kept


def evaluate_served(plan: EvalPlan) -> dict:
    """The held-out scores of what the editor shows, for the diffusion model and (with
    ``plan.ar_dir``) the AR baseline; with workspace cases, the diffusion model on repository-level
    cases too: retrieval alone vs the model alone vs draft-seeded canvases (lab/workspace_eval.py)."""
    from difill.text.syntax import parses

    # The in-file cases come from the corpus's held-out split; the workspace eval alone needs none.
    p = plan
    cases = eval_cases(p.corpus, p.per_shape, p.seed) if p.per_shape else {}
    original_parses = {id(ex): bool(parses(ex.document, "python")) for exs in cases.values() for ex in exs}
    report: dict = {
        "cases_per_shape": p.per_shape,
        "seed": p.seed,
        "pipeline": "server (filters, default settings)"
        if p.settings is None
        else f"server (filters, {p.settings})",
        "experiment": {**(p.experiment or {}), **({"filler": p.filler_policy} if p.filler_policy else {})},
    }
    for name, model_dir in (("diffusion", p.diffusion_dir), ("ar", p.ar_dir)):
        if name == "ar" and not p.ar_dir:
            continue
        diffusion = name == "diffusion"
        model = load_served(
            model_dir, p.experiment if diffusion else None, p.filler_policy if diffusion else None, p.settings
        )
        report[name] = score_cases(model, cases, original_parses)
        if p.typing_files:
            report[f"{name}_typing"] = typing_replay(model, p.corpus, p.typing_files, p.typing_lines, p.seed)
        if diffusion and (p.workspace_cases or p.workspace_typing_files):
            from lab.workspace_eval import evaluate_workspace, fetch_packages

            packages = fetch_packages(list(p.workspace_pins), p.archive_cache)
            report["workspace"] = evaluate_workspace(model, packages, p.workspace_cases, p.seed,
                                                     p.workspace_typing_files, p.typing_lines)  # fmt: skip
    return report


def main(args: argparse.Namespace) -> int:
    if getattr(args, "next_edit", False):  # `difill eval --next-edit`: its own cases and rows
        from lab.next_edit_eval import main as next_edit_main

        return next_edit_main(args)
    ar_dir = args.ar_model or default_ar_baseline()
    if args.no_ar:
        ar_dir = None
    started = time.time()
    experiment = {"revise": True} if args.revise else None
    settings = Settings(min_token_prob=args.min_token_prob, context_drafts=args.context_drafts)
    if args.snippet_tokens is not None:
        settings = replace(settings, snippet_tokens=args.snippet_tokens)
    from lab.training.corpus_sources import WORKSPACE_PACKAGE_LIST, read_pins

    plan = EvalPlan(
        args.model, Path(args.corpus), args.cases, args.seed, ar_dir, args.typing_files, args.typing_lines,
        experiment, args.filler, settings, args.workspace_cases, args.workspace_typing_files,
        tuple(read_pins(Path(args.workspace_packages or WORKSPACE_PACKAGE_LIST))), Path(args.cache),
    )  # fmt: skip
    report = evaluate_served(plan)
    report["eval_seconds"] = round(time.time() - started, 1)
    if args.record:
        from difill.engine.model import DEFAULT_MODEL_DIR

        state_path = Path(args.model or DEFAULT_MODEL_DIR) / "training_state.json"
        state = json.loads(state_path.read_text()) if state_path.exists() else {}
        state.setdefault("history", []).append({"cpu_hours": state.get("cpu_hours"), "eval": report})
        state_path.write_text(json.dumps(state, indent=1) + "\n")
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(format_table(report))
        if "workspace" in report:
            from lab.workspace_eval import format_workspace

            print("\nWorkspace (repository-level cases, issue 22):\n" + format_workspace(report["workspace"]))
    return 0

"""Held-out infill cases and their scores; the models run through the server (``lab/quality.py``).

Cases are cut from the held-out split with a fixed seed: rest of line, whole line (cursor after
the indentation) and 2-5 whole lines.  Metrics per model and shape: exact match (trailing
whitespace ignored), edit similarity, the share of fills after which the whole file still parses
(over files that parse to begin with), the share answered with nothing, mean decoder forwards and
tokens per forward.
"""

from __future__ import annotations

import difflib
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from difill.server.show_gate import FIRST_WORD
from difill.text.syntax import parses
from lab.training.corpus import read_jsonl
from lab.training.examples import EVAL_SHAPES, InfillExample, sample_eval_example

AR_BASELINE_DIRS = ("benchmarks/ar-baseline", "runs/ar/latest")  # committed yardstick, then a local run


@dataclass
class ShapeScore:
    cases: int = 0
    exact: int = 0
    empty: int = 0
    # Shown precision (issue 60): of the cases shown something, those whose middle begins with it
    # (what a typist takes with Tab), and those whose middle begins with its first word.
    right: int = 0
    first_word_right: int = 0
    similarity: list[float] = field(default_factory=list)
    parsed: int = 0
    parse_cases: int = 0
    forwards: list[int] = field(default_factory=list)
    tokens_per_forward: list[float] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)

    def add(
        self, ex: InfillExample, middle: str, forwards: int, tpf: float, ms: float, original_parses: bool
    ):
        target = ex.middles[0]
        self.cases += 1
        self.exact += middle.rstrip() == target.rstrip()
        self.empty += not middle.strip()
        if middle.strip():
            self.right += target.startswith(middle)
            word = FIRST_WORD.match(middle)
            self.first_word_right += bool(word) and target.startswith(word.group())
        self.similarity.append(difflib.SequenceMatcher(None, middle, target).ratio())
        if original_parses:
            self.parse_cases += 1
            self.parsed += bool(parses(ex.prefix + middle + ex.suffix, "python"))
        self.forwards.append(forwards)
        self.tokens_per_forward.append(tpf)
        self.ms.append(ms)

    def summary(self) -> dict:
        return {
            "cases": self.cases,
            "exact_match": round(self.exact / max(1, self.cases), 4),
            "edit_similarity": round(statistics.fmean(self.similarity or [0]), 4),
            "parse_rate": round(self.parsed / max(1, self.parse_cases), 4),
            "empty_share": round(self.empty / max(1, self.cases), 4),
            "shown_precision": round(self.right / max(1, self.cases - self.empty), 4),
            "first_word_right": round(self.first_word_right / max(1, self.cases - self.empty), 4),
            "mean_forwards": round(statistics.fmean(self.forwards or [0]), 2),
            "tokens_per_forward": round(statistics.fmean(self.tokens_per_forward or [0]), 3),
            "p50_ms": round(statistics.median(self.ms or [0]), 1),
        }


def eval_cases(corpus: Path, per_shape: int, seed: int) -> dict[str, list[InfillExample]]:
    docs = [d for d in read_jsonl(corpus / "heldout.jsonl") if d["text"].count("\n") >= 10]
    rng = random.Random(seed)
    cases: dict[str, list[InfillExample]] = {}
    for shape in EVAL_SHAPES:
        out: list[InfillExample] = []
        attempts = 0
        while len(out) < per_shape and attempts < per_shape * 50:
            attempts += 1
            ex = sample_eval_example(rng.choice(docs)["text"], rng, shape)
            if ex is not None and ex.middles[0].strip():
                out.append(ex)
        cases[shape] = out
    return cases


def format_table(report: dict) -> str:
    rows = ["| model | shape | exact match | edit sim. | parses | empty | forwards | tokens/forward | p50 ms |",
            "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for model in ("diffusion", "ar"):
        for shape, s in report.get(model, {}).items():
            if not s["cases"]:  # `--cases 0`: the workspace cases alone
                continue
            rows.append(f"| {model} | {shape} | {s['exact_match']:.1%} | {s['edit_similarity']:.3f} | "
                        f"{s['parse_rate']:.1%} | {s['empty_share']:.1%} | {s['mean_forwards']} | "
                        f"{s['tokens_per_forward']} | {s['p50_ms']} |")  # fmt: skip
    for model in ("diffusion", "ar"):
        t = report.get(f"{model}_typing")
        if t:
            rows.append(f"\n{model} typing replay: {t['saved_share']:.1%} of {t['characters']} characters saved "
                        f"({t['accepted']} accepted of {t['requests']} requests, {t['files']} files, "
                        f"p50 {t['p50_ms']} ms)")  # fmt: skip
    return "\n".join(rows)


def default_ar_baseline() -> str | None:
    return next((d for d in AR_BASELINE_DIRS if (Path(d) / "config.json").exists()), None)


@dataclass
class TypingReplay:
    files: int = 0
    characters: int = 0
    saved: int = 0
    accepted: int = 0
    requests: int = 0
    ms: list[float] = field(default_factory=list)

    def type_target(self, target: str, suggest: Callable[[str], tuple[str, float]]) -> None:
        """Type ``target`` one character at a time; before each key ``suggest(typed)`` (the part of
        ``target`` typed so far) gives the shown suggestion and its ms, and it is accepted (one Tab)
        when it is exactly what comes next."""
        self.files += 1
        self.characters += len(target)
        position = 0
        while position < len(target):
            shown, ms = suggest(target[:position])
            self.requests += 1
            self.ms.append(ms)
            if shown and target.startswith(shown, position):
                self.accepted += 1
                self.saved += len(shown)
                position += len(shown)
            else:
                position += 1

    def summary(self) -> dict:
        return {
            "files": self.files,
            "characters": self.characters,
            "saved_share": round(self.saved / max(1, self.characters), 4),
            # one keystroke charged per accepted suggestion (Tab): what the typist really saves
            "net_saved_share": round((self.saved - self.accepted) / max(1, self.characters), 4),
            "accepted": self.accepted,
            "requests": self.requests,
            "p50_ms": round(statistics.median(self.ms or [0]), 1),
        }

"""The show gate: ghost text is shown when it is likely right, or nothing is (issue 60).

A reader pays for every suggestion shown: three wrong ones cost more attention than the right one
saves.  So every text the pipeline leaves for an automatic request gets an estimate of P(right),
made from what is known when the request is answered (``Evidence``), and is shown only when that
estimate reaches ``minShowProbability``.  A long text that is unlikely as a whole is cut to the
longest of its first line or first word that is likely (``gate``), instead of being dropped.

P(right) is a logistic model of ``features(evidence)``.  Its weights and the default threshold
live in ``show_gate.json`` beside this module, fitted by ``python -m lab.fit_show_gate`` on traces
of the typing bench on the tuning projects only (docs/show_gate.md says which, and the figures).
A missing or corrupt file falls back to ``FALLBACK``: only names that jedi or the workspace list
and import lines are shown (never everything), and a log line says so.

Comments, strings and docstrings get a text only above a higher bar (``prose_bar``), and
``commentSuggestions: false`` turns them off.  Invoked requests (the user asked) are not gated,
and neither is a model the calibration was not fitted on (``About.show_gate``): what it and the
drafts beside it get right is not what the shipped model's traces measured.

Traces: with ``DIFILL_SHOW_TRACE=FILE`` in the server's environment each gated text is appended
to FILE as one JSON line (the document's sha1, the cursor, the text, its features, P): the lab
joins them with what the typist typed next (lab/bench_typing.py).  Never set by the server itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from difill.engine.api import Candidate
from difill.server.context.drafts import Draft
from difill.text.context import FillContext
from difill.text.shape import ShapeKind

log = logging.getLogger("difill.server")
CALIBRATION = Path(__file__).with_name("show_gate.json")
TRACE_ENV = "DIFILL_SHOW_TRACE"
FIRST_WORD = re.compile(r"[ \t]*(?:\w+|[^\w\s]+)")  # a word or a run of symbols, as accept-word takes it


@dataclass(frozen=True)
class Evidence:
    """What is known of one shown text when the request is answered."""

    origin: str  # "model", or a draft's kind: "lookup", "symbol", "jedi", "import"
    score: float  # the model's mean log-prob of the text's tokens (0.0 for a draft)
    matched: int  # tokens before the cursor a lookup draft matched (0 for others)
    prose: bool  # the cursor is in a comment, string or docstring
    python: bool  # the document is Python (the shipped model writes Python only)
    mid_word: bool  # the cursor is right after a word character: the text finishes a name
    line_start: bool  # nothing but indentation before the cursor
    text: str  # the text as it would be shown


FEATURES = (
    "bias", "model", "lookup", "symbol", "jedi", "import", "score", "log_matched", "prose",
    "python", "mid_word", "line_start", "log_chars", "lines", "ends_word",
)  # fmt: skip


def features(e: Evidence) -> list[float]:
    """``e`` as the logistic model reads it, in ``FEATURES``' order."""
    text = e.text.rstrip()
    return [
        1.0,
        float(e.origin == "model"),
        float(e.origin == "lookup"),
        float(e.origin == "symbol"),
        float(e.origin == "jedi"),
        float(e.origin == "import"),
        e.score if e.origin == "model" else 0.0,
        math.log1p(e.matched),
        float(e.prose),
        float(e.python),
        float(e.mid_word),
        float(e.line_start),
        math.log1p(len(text)),
        float(text.count("\n")),
        float(bool(text) and not (text[-1].isalnum() or text[-1] == "_")),
    ]


@dataclass(frozen=True)
class Calibration:
    weights: tuple[float, ...]  # one per FEATURES name
    threshold: float  # the default minShowProbability: at least half of what is shown right (tuning)

    def p_right(self, e: Evidence) -> float:
        z = sum(w * x for w, x in zip(self.weights, features(e), strict=True))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


class Fallback(Calibration):
    """No calibration could be read: names listed by jedi or the workspace and import lines, only."""

    def p_right(self, e: Evidence) -> float:
        return 0.9 if e.origin in ("symbol", "jedi", "import") and not e.prose else 0.0


FALLBACK = Fallback((), 0.5)
_LOADED: dict[str, Calibration] = {}
_LOCK = threading.Lock()


def calibration(path: Path = CALIBRATION) -> Calibration:
    """The fitted calibration at ``path``, read once; ``FALLBACK`` (logged once) when it cannot be."""
    key = str(path)
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = _read(path)
        return _LOADED[key]


def _read(path: Path) -> Calibration:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        weights = tuple(float(raw["weights"][name]) for name in FEATURES)
        threshold = float(raw["threshold"])
        if not all(math.isfinite(w) for w in weights) or not 0.0 <= threshold <= 1.0:
            raise ValueError("weights must be finite and the threshold in [0, 1]")
        return Calibration(weights, threshold)
    except (OSError, ValueError, KeyError, TypeError) as err:
        log.warning(
            "the show gate's calibration %s cannot be read (%s): only listed names and import lines are shown",
            path, err,
        )  # fmt: skip
        return FALLBACK


def evidence(text: str, candidate: Candidate, drafts: Sequence[Draft], ctx: FillContext) -> Evidence:
    """What is known of ``text``, shown from ``candidate`` (a draft's: one of ``drafts``)."""
    origin, matched = "model", 0
    # A draft shown as found (draft_policy.drafts_result); a canvas row the model wrote from a
    # seeded draft is the model's text, whatever its source says.
    draft = (
        next((d for d in drafts if d.text == candidate.text), None)
        if candidate.source.startswith("draft:")
        else None
    )
    if draft is not None:
        origin, matched = _draft_origin(draft), draft.matched
    before = ctx.line_before
    return Evidence(
        origin=origin,
        score=candidate.score,
        matched=matched,
        prose=ctx.shape.kind is ShapeKind.SHORT,
        python=ctx.language == "python",
        mid_word=bool(before) and (before[-1].isalnum() or before[-1] == "_"),
        line_start=not before.strip(),
        text=text,
    )


def _draft_origin(draft: Draft) -> str:
    if draft.kind == "lookup":
        return "lookup"
    if draft.kind == "symbol":
        return "jedi" if draft.source == "jedi" else "symbol"
    return "import"  # "import" and "new-import"


@dataclass(frozen=True)
class Bar:
    """What a request's texts must reach: ``Settings.min_show_probability`` (None: the calibration's)."""

    threshold: float
    prose: bool  # commentSuggestions: texts in comments, strings and docstrings at all

    @property
    def prose_bar(self) -> float:
        """Halfway from the threshold to 1: the model's prose is rarely what a person writes."""
        return self.threshold + (1.0 - self.threshold) / 2


def gate(
    texts: Sequence[tuple[str, Evidence]],
    bar: Bar,
    model: Calibration,
    trace_key: tuple[str, int] | None = None,
) -> list[str]:
    """The texts to show, each whole or cut to its longest likely start; a dropped one is logged."""
    shown: list[str] = []
    for text, e in texts:
        if e.prose and not bar.prose:
            log.info("ghost text not shown: in a comment or string, and commentSuggestions is off")
            continue
        p = model.p_right(e)
        _trace(trace_key, e, p)
        need = bar.prose_bar if e.prose else bar.threshold
        if p >= need:
            shown.append(text)
            continue
        cut = _likely_start(e, model, need)
        if cut:
            shown.append(cut)
        else:
            log.info(
                "ghost text not shown: P(right) %.2f < %.2f (%s, %d chars%s)",
                p, need, e.origin, len(text), ", in a comment or string" if e.prose else "",
            )  # fmt: skip
    return list(dict.fromkeys(shown))


def _likely_start(e: Evidence, model: Calibration, need: float) -> str:
    """The longest of ``e.text``'s shorter starts (``starts``) whose P(right) reaches ``need``."""
    for cut in starts(e.text)[1:]:
        if model.p_right(with_text(e, cut)) >= need:
            return cut
    return ""


def starts(text: str) -> list[str]:
    """What the gate may show of ``text``, longest first: all of it, its first line, its first word."""
    first_line = text.split("\n", 1)[0].split("\r", 1)[0]
    word = FIRST_WORD.match(text)
    out = [text]
    for cut in (first_line, word.group() if word else ""):
        if cut.strip() and len(cut) < len(out[-1]):
            out.append(cut)
    return out


def with_text(e: Evidence, text: str) -> Evidence:
    return dataclasses.replace(e, text=text)


def trace_key(document: str, offset: int) -> tuple[str, int] | None:
    """The key a trace line carries (the document's sha1, the cursor), when traces are on."""
    if not os.environ.get(TRACE_ENV):
        return None
    return hashlib.sha1(document.encode("utf-8", "surrogatepass")).hexdigest(), offset


def _trace(key: tuple[str, int] | None, e: Evidence, p: float) -> None:
    if key is None:
        return
    row = {"sha1": key[0], "offset": key[1], "p": round(p, 4), "evidence": dataclasses.asdict(e)}
    with _LOCK, open(os.environ[TRACE_ENV], "a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")

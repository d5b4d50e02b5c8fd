"""The engine's boundary: what a caller hands a fill engine and what it gets back.

Torch-free on purpose.  The server, the remote backend and the CLI are typed against these names
and import this module only, so a remote fill never loads torch or transformers.  The in-process
``InfillEngine`` (engine/infill.py), ``BatchingBackend`` (engine/batcher.py), ``ARBackend``
(engine/ar_baseline.py) and the remote backends (engine/backends/, one per wire protocol) all satisfy
``InfillBackend`` and return these dataclasses, so a caller never knows where the model ran.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

DEFAULT_HOLE_MARKER = "<|hole|>"
HOLE_TOKENS = 16  # the longest middle one marked hole gets (`difill fill --holes`, the fill-holes edit)

ShouldStop = Callable[[], bool]
# (the hole's best text after ``step``, step) -> whether to stop before the next step.  The caller's
# one call per denoising step: a fill given one asks ``should_stop`` before its prefix encoder
# only, and each step's stop check is the preview's answer.  One that answers None (a listener)
# leaves each step's check to ``should_stop``.
PreviewCallback = Callable[[str, int], bool | None]


class Cancelled(Exception):
    """The fill stopped because ``should_stop()`` turned true."""


class BackendError(RuntimeError):
    """A fill failed for a reason the user can act on; ``str(err)`` is the one message to show.

    The message says what failed and how to fix it.  It never holds an API key.
    """


class TooLarge(ValueError):
    """A request would need a canvas longer than MAX_CANVAS_TOKENS; the message says what to do."""


MAX_CANVAS_TOKENS = 2048  # slots in one canvas: the work of one fill is bounded, whatever the input


class ModelLoadError(RuntimeError):
    """The model directory is missing, incomplete or corrupt; the message says how to fix it."""


@dataclass
class FillOptions:
    max_hole_tokens: int = 24  # the longest middle a fill can write
    hole_candidates: tuple[int, ...] = ()  # hole lengths tried in one batch; () = derived from max
    suffix_tokens: int = 16  # nearest suffix tokens clamped into the canvas
    prefix_tokens: int | None = None  # prefix budget; None = what the model was trained to read
    max_steps: int = 12  # cap on denoising steps (typing needs it); the checkpoint's own count if lower
    entropy_bound: float | None = None  # None = the checkpoint's (generation_config), else difill's 0.5
    revise: bool | None = None  # re-decide committed slots every step (stock sampler); None = edits only
    single_line: bool = False  # one line is wanted: a left-to-right backend may stop at a newline
    heal: bool = True  # re-predict a partly typed identifier at the cursor as a whole token
    # End each middle before its first token the model gave less than this probability (at
    # temperature 1, when it was committed): ghost text shows what the model is sure of.  0: off;
    # None: the checkpoint's own calibrated value (config `difill.min_token_prob`; 0 when it has none).
    min_token_prob: float | None = 0.0
    language: str | None = None  # the file's language (an edit's instruction is a comment in it)
    seed: int = 0
    # LF texts that may continue the cursor (retrieved: server/context/drafts.py).  Each one seeds
    # an extra canvas row beside the noise-seeded ones: its tokens start in the hole instead of
    # noise, and the model keeps what it agrees with (engine/infill.py, engine/sampler.py).
    drafts: tuple[str, ...] = ()
    # Text from other files (the snippet block: server/context/prompt.py, comments in the file's
    # language) read before the prefix window, after <bos>.  It takes at most half the prefix
    # budget, else it is left out (engine/tokens.py): the code before the cursor matters more.
    context_block: str = ""

    def cut_probability(self, checkpoint_own: float) -> float:
        """``min_token_prob``, or the checkpoint's own calibrated value when the options leave it open."""
        return checkpoint_own if self.min_token_prob is None else self.min_token_prob

    def candidate_lengths(self) -> tuple[int, ...]:
        if self.hole_candidates:
            return tuple(sorted(set(self.hole_candidates)))
        top = max(1, self.max_hole_tokens)
        return tuple(sorted({max(1, top // 4), max(1, top // 2), top}))


@dataclass
class FillStats:
    steps: int = 0  # denoising steps (= decoder forwards; each forward runs every candidate)
    decoder_forwards: int = 0
    hole_tokens: int = 0  # tokens of the chosen middle
    tokens_per_forward: float = 0.0  # hole_tokens / decoder_forwards (clamped slots not counted)
    encoder_ms: float = 0.0
    decoder_ms: float = 0.0
    total_ms: float = 0.0
    hole_length: int = 0  # slots of the chosen candidate's hole
    prefix_tokens: int = 0
    reused_prefix_tokens: int = 0  # prefix tokens served by the prefix cache
    candidates: int = 0  # canvas rows, draft-seeded ones included
    draft_rows: int = 0  # rows seeded from FillOptions.drafts
    draft_verified: bool = False  # a draft row was kept as it stands, and the fill ended there
    context_tokens: int = 0  # tokens of FillOptions.context_block read before the prefix (0: none)


@dataclass
class Candidate:
    text: str
    hole_length: int
    score: float  # mean log-prob of the hole's tokens when they were committed
    complete: bool  # the model ended the middle (filler) before the hole ran out
    # The row's starting canvas: "model" (noise) or "draft:<i>" (FillOptions.drafts[i]); "remote":
    # a remote model that chose the edit itself and gives no per-token probabilities (Mercury).
    source: str = "model"
    # A rewrite's row: the lowest log-prob (at temperature 1) among the slots where the model wrote
    # another token than the row started from (its seed); None when it changed none, or for a fill.  How sure
    # the model is of what it *changed* (a next edit's gate), not of what it copied.
    change_logprob: float | None = None


@dataclass
class FillResult:
    """Middles as the model wrote them, in LF; text/pipeline.py makes them fit the document."""

    text: str  # the first candidate's text ("" when there is none)
    candidates: list[Candidate]  # best first by the model's own judgement
    stats: FillStats


@dataclass
class HolesResult:
    middles: list[str]
    text: str  # the input with every marker replaced by its middle
    stats: FillStats = field(default_factory=FillStats)


@dataclass(frozen=True)
class RewriteRequest:
    """Re-denoise ``selection`` between ``prefix`` and ``suffix``.

    A share ``strength`` (0..1) of the selection's slots is renoised, so the result stays close to
    the original; ``instruction`` guides it (written into the prefix as a comment).  With
    ``FillOptions.drafts`` (whole alternative selections: a next edit's drafts) each draft is one
    more canvas row, seeded and renoised the same way; ``FillOptions.context_block`` is read
    before the prefix, as for a fill.

    ``cursor`` (an offset in ``selection``) and ``history`` (the user's last edit as a unified
    diff) are what a next-edit model reads (Mercury's edit endpoint: engine/backends/mercury.py);
    difill's own engines read the diff from ``FillOptions.context_block`` instead.
    """

    prefix: str
    selection: str
    suffix: str
    strength: float = 0.5
    instruction: str | None = None
    cursor: int | None = None
    history: str = ""


@runtime_checkable
class NameScorer(Protocol):
    """A backend that can score a few names at the cursor with one model pass (the in-process
    engines: engine/name_scores.py), or one read on a vLLM 0.32+ server (engine/backends/vllm_names.py;
    such a remote says in ``scores_names`` whether its server can be asked).  difill serve-http cannot."""

    def score_names(
        self, prefix: str, suffix: str, names: Sequence[str], options: FillOptions | None = None
    ) -> list[float]: ...


@dataclass(frozen=True)
class About:
    """What a backend is, as the backend says it (``InfillBackend.about``): the server reads its
    status line, the draft mode, the languages and how it may schedule fills from here, and
    never probes a backend's attributes for them (issue 48)."""

    engine: str  # "torch", "llamacpp", "mlx", "ar" (the autoregressive baseline), "remote"
    where: str  # the checkpoint's path, or the remote's URL without credentials (and its protocol)
    # The languages the model was trained on (the checkpoint's ``difill.languages``); (): every one.
    languages: tuple[str, ...] = ()
    # What ``contextDrafts: auto`` means for this model: the checkpoint's ``difill.drafts`` ("show"
    # for a checkpoint difill trained that names none), "seed" for any other model.
    drafts: str = "seed"
    # Its runtime holds one fill's state across steps (the llama.cpp worker's prompt K,V store and
    # self-conditioning): no other fill may run between two of its steps.
    one_fill_state: bool = False
    scores_names: bool = False  # ``score_names`` may be asked (NameScorer) now
    # The show gate's calibration (server/show_gate.json) was fitted on this model's text (the
    # checkpoint's ``difill.show_gate``: the shipped model's).  Any other model's text is shown
    # as its own ``minTokenProb`` cuts it: a calibration of one model says nothing of another's.
    show_gate: bool = False


UNKNOWN = About("unknown", "a backend that does not say")


def about(engine: object) -> About:
    """``engine.about()``; ``UNKNOWN`` for an object that is no full backend (a test's stand-in)."""
    said = getattr(engine, "about", None)
    return said() if callable(said) else UNKNOWN


def runs_jobs_between_steps(engine: object) -> bool:
    """Whether another fill may run between two denoising steps of a fill on ``engine`` (the
    server runs ghost text inside a long edit that way): not on one whose runtime holds one
    fill's state across steps (``About.one_fill_state``)."""
    return not about(engine).one_fill_state


@runtime_checkable
class InfillBackend(Protocol):
    def about(self) -> About: ...

    def fill(
        self,
        prefix: str,
        suffix: str,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_preview: PreviewCallback | None = None,
    ) -> FillResult: ...

    def fill_holes(
        self,
        text: str,
        marker: str = DEFAULT_HOLE_MARKER,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
    ) -> HolesResult: ...

    def rewrite(
        self,
        request: RewriteRequest,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_preview: PreviewCallback | None = None,
    ) -> FillResult: ...


def check_canvas(length: int, what: str) -> None:
    """Refuse a canvas past MAX_CANVAS_TOKENS before any model work."""
    if length > MAX_CANVAS_TOKENS:
        raise TooLarge(
            f"{what} would need {length:,} canvas slots; difill denoises at most {MAX_CANVAS_TOKENS:,} "
            "at a time: select less (a function or a block)"
        )


def model_order(candidates: list[Candidate]) -> list[Candidate]:
    """Best first by the model's own judgement: complete middles, then highest mean log-prob.

    Empty middles and repeats are dropped.  The pipeline (text/pipeline.py) ranks again
    on the text as shown, adding the syntax errors around it.
    """
    seen: set[str] = set()
    out = []
    for c in sorted(candidates, key=lambda c: (not c.complete, -c.score)):
        if c.text and c.text not in seen:
            seen.add(c.text)
            out.append(c)
    return out

"""The denoising loop: refine a batch of canvases in a few parallel passes.

Why not ``model.generate()``: it cannot clamp a suffix, it stops on the mean entropy of the whole
canvas (clamped slots included, so it stops too early for infill), it pads everything after an eos,
clamped suffix included, and it has no cancel hook.  This loop keeps what makes DiffusionGemma's
sampler work - a linear temperature schedule, entropy-bound acceptance (arXiv 2505.24857),
renoising with uniform random tokens and self-conditioning on the previous step's logits - and adds:

* clamping: known slots are never proposed, renoised or re-decided (equivalent to one-hot
  logits, entropy 0, which the stock sampler would always accept); their self-conditioning
  signal is their own embedding;
* vocabulary-sized work (LM head, softmax, entropy) only on the slots still open
  (see engine/decoder.py);
* a monotone commit: once a hole slot is accepted it stays, and at least ``ceil(open / steps_left)``
  slots are accepted per step, so a fill always ends within ``max_steps`` forwards;
* a stop criterion on hole slots only: the loop ends as soon as every hole slot is committed;
* a settled stop (``settled_passes``): the loop also ends once every row's shown text, its hole
  up to the ghost-text cut or the middle's end, came out the same passes in a row, though slots
  past it are open (they are renoised every pass and can change only what is not shown);
* a cancel check between steps and a preview callback after each step (the best canvas so far);
* draft seeding: a row's hole slots may start from a retrieved draft's tokens instead of noise
  (``seeded``).  The entropy-bound acceptance commits the slots the model is sure of and the rest
  are renoised as usual.  When a seeded row is decided while every token it committed is its
  draft's own, the model has verified that draft (as prompt lookup decoding verifies a copied
  continuation in one forward) and the loop ends there: the rows still open are dropped
  (``DenoiseResult.done``).  "Decided" is strict: every hole slot committed, none below the
  ghost-text cut, so the draft is shown whole.

With ``revise`` the loop is the stock sampler's instead of a monotone commit: every step re-decides
every open slot, ones committed before included, accepts by the entropy bound and renoises the rest
(slots kept from an edit's original, ``initially_committed``, stay as they are); the
canvas returned is the last step's argmax (clamping, bans and the hole-only stop still apply: the
loop ends when every hole slot is accepted in one step, or when the hole's argmax is stable and
its mean entropy is under ``confidence_threshold``, or at ``max_steps``).

Each step is one ``propose`` (the forward, bans and constraints, the tokens, their entropy and
log-probs) and then a ``monotone_step`` or a ``revise_step``, which turn the proposal into the
next state and the step's stop tests.

The loop runs in NumPy on the host, whatever runs the forwards: the llama.cpp and MLX engines and
a base install never import torch for it (224 MB resident and a second or two of import), and a
pass's open-slot logits are on the host already for those engines.  The torch engine's decoder
takes and gives NumPy arrays (engine/decoder.py: no copy on a CPU; on an accelerator each pass
copies the open slots' logits to the host, a large vocabulary's top 256, and the self-conditioning
signal back: sampler_config.crossing_top_k).  The noise is
torch's CPU generator's own stream (engine/noise.py), so a seed gives the fills it gave when
this loop ran in torch.

Self-conditioning, as in ``DiffusionGemmaGenerationMixin._denoising_step``, is fed the tempered
(processed) logits; ``tempered_self_conditioning=False`` feeds the raw ones, which is what
difill's own trainer shows its model (lab/training/train.py).  The settings, a checkpoint's and
a fill's, are engine/sampler_config.py's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from difill.engine.api import Cancelled
from difill.engine.noise import Noise
from difill.engine.sampler_config import SamplerConfig, temperature_at
from difill.engine.slot_rules import (
    choose_accepted,
    entropy_of_logp,
    filler_constraints,
    first_end,
    less_than,
    log_softmax,
    logsumexp,
    shown_part_decided,
    shows_text,
    verified_rows,
)

if TYPE_CHECKING:  # the torch forwards (transformers' modeling code): the llama.cpp engine has its own
    from difill.engine.decoder import CanvasDecoder

Slots2D = tuple[np.ndarray, np.ndarray]  # (N,), (N,): the rows and columns of N slots, row-major



@dataclass
class DenoiseResult:
    canvas: np.ndarray  # (B, L) final ids
    token_logprob: np.ndarray  # (B, L) log-prob of each committed token when it was committed
    steps: int  # decoder forwards; each one runs the whole batch
    # (B, L) the same at temperature 1: the model's own confidence, not sharpened by the schedule
    # (at t_min = 0.1 almost every tempered log-prob is ~0, so only this one can tell a guess)
    token_confidence: np.ndarray
    # (B,) rows whose middle is final; False only for rows left open when a seeded row was verified
    done: np.ndarray | None = None


@dataclass(frozen=True)
class DenoiseRequest:
    """The canvases to denoise and the rules their hole slots follow.

    ``cut_below`` (FillOptions.min_token_prob as a log-prob): the middle will be
    shown only up to its first committed token less sure than this, so a row is done once every
    hole slot before that token is committed; later passes could not change what is shown.
    ``seeded``: when a seeded row is verified the loop ends (see the module docstring).
    """

    canvas: np.ndarray  # (B, L) int64 ids: known text where clamped or kept, a draft where seeded
    clamp_mask: np.ndarray  # (B, L) True: known text, never proposed, renoised or re-decided
    banned_ids: np.ndarray  # (K,) ids no hole slot may hold
    vocab_size: int  # the tokenizer's; LM-head rows past it are padding, and noise stays below it
    # (slot, allowed (V,) bool): the only tokens that slot may hold (token healing's partial word)
    slot_allowed: tuple[int, np.ndarray] | None = None
    initially_committed: np.ndarray | None = None  # (B, L) hole slots kept from the start (an edit)
    filler_id: int | None = None  # each hole holds one middle, then only this (see filler_constraints)
    # monotone only: a log-prob; the middle is shown up to its first committed token below it
    cut_below: float | None = None
    seeded: np.ndarray | None = None  # (B, L) hole slots that start from the draft ``canvas`` holds there


@dataclass(frozen=True)
class Slots:
    """What a request fixes for the whole loop."""

    fixed: np.ndarray  # (B, L) clamped and kept slots: never re-decided, even with revise
    hole: np.ndarray  # (B, L) the slots being denoised: ~fixed
    seeded_rows: np.ndarray | None  # (B,) rows with a seeded hole slot; None: no draft rows
    cut_below: float  # the ghost-text cut as a log-prob; -inf: none

    @classmethod
    def of(cls, request: DenoiseRequest) -> Slots:
        fixed = request.clamp_mask.copy()
        if request.initially_committed is not None:
            fixed |= request.initially_committed
        hole = ~fixed
        seeded_rows = None if request.seeded is None else (request.seeded & hole).any(-1)
        cut_below = -math.inf if request.cut_below is None else request.cut_below
        return cls(fixed, hole, seeded_rows, cut_below)


@dataclass(frozen=True)
class DenoiseState:
    """The canvas between steps."""

    current: np.ndarray  # (B, L) what the next forward reads: decided tokens, noise elsewhere
    committed: np.ndarray  # (B, L) decided slots (fixed ones included)
    token_logprob: np.ndarray  # (B, L) float32, see DenoiseResult
    token_confidence: np.ndarray  # (B, L) float32, see DenoiseResult
    soft: object | None = None  # the decoder's self-conditioning input; none before the first pass
    last_argmax: np.ndarray | None = None  # (N_hole,) revise: the previous step's argmax of the hole


@dataclass(frozen=True)
class Proposal:
    """One decoder pass over the open slots: what it proposes and how sure it is.

    N is the number of open slots; (N,) arrays follow ``open_slots``' order (row-major).
    """

    open_mask: np.ndarray  # (B, L) the slots proposed
    open_slots: Slots2D  # (N,), (N,) their rows and columns
    raw: np.ndarray  # (N, V) logits at temperature 1, bans and constraints applied (-inf)
    logp: np.ndarray  # (N, V) log-softmax of the tempered logits
    raw_norm: np.ndarray  # (N,) logsumexp of ``raw``: a gather minus this is a temperature-1 log-prob
    argmax: np.ndarray  # (N,) the tempered logits' argmax
    picked: np.ndarray  # (N,) the argmax (greedy) or a sample
    proposal: np.ndarray  # (B, L) the canvas with ``picked`` at the open slots
    entropy: np.ndarray  # (B, L) of the tempered distribution at open slots; inf elsewhere
    open_entropy: np.ndarray  # (N,) the same at the open slots
    soft: object  # the next pass's self-conditioning input (the decoder's own)

    def logprob_of(self, tokens: np.ndarray) -> np.ndarray:
        """tokens (N,) -> their tempered log-probs (N,)."""
        return np.take_along_axis(self.logp, tokens[:, None], -1)[:, 0]

    def confidence_of(self, tokens: np.ndarray) -> np.ndarray:
        """tokens (N,) -> their log-probs at temperature 1 (N,): the model's own confidence."""
        return np.take_along_axis(self.raw, tokens[:, None], -1)[:, 0] - self.raw_norm

    def at_open(self, values: np.ndarray) -> np.ndarray:
        """values (N,) -> (B, L): the values at the open slots, 0 elsewhere."""
        out = np.zeros(self.open_mask.shape, dtype=values.dtype)  # (B, L)
        out[self.open_slots] = values
        return out


@dataclass(frozen=True)
class StepOutcome:
    """What a monotone or revise step decided."""

    state: DenoiseState  # the canvas after the step, before the slots left open are renoised
    shown: np.ndarray  # (B, L) the best canvas now: on_step's preview, revise's result
    finished: bool  # the loop is finished
    verified: bool  # a seeded row is verified
    decided: np.ndarray | None = None  # (B,) monotone: rows whose shown middle is final
    # monotone: ``shown``'s tempered log-probs and confidences (committed slots' own, the pass's
    # at the open ones): the result when the loop ends on a settled canvas
    shown_logprob: np.ndarray | None = None  # (B, L)
    shown_confidence: np.ndarray | None = None  # (B, L)


def denoise(
    decoder: CanvasDecoder,
    request: DenoiseRequest,
    config: SamplerConfig,
    noise: Noise,
    should_stop: Callable[[], bool] | None = None,
    on_step: Callable[[int, np.ndarray], None] | None = None,
) -> DenoiseResult:
    """Denoise the hole slots of ``request.canvas`` (B, L) until each one is committed.

    ``on_step(step, best)`` gets the current best canvas: committed tokens where committed, the
    argmax elsewhere (revise: the canvas returned if the loop ended there).  ``should_stop`` is
    asked before each forward; yes raises Cancelled.
    """
    slots = Slots.of(request)
    state = initial_state(request, slots, noise)
    hole_slots = slots.hole.nonzero() if config.revise else None
    steps = 0
    settled = Settled(config.settled_passes, slots, request.filler_id)
    for step in range(config.max_steps):
        open_mask = slots.hole if config.revise else ~state.committed  # (B, L)
        open_slots = hole_slots if hole_slots is not None else open_mask.nonzero()
        if open_slots[0].size == 0:
            break
        if should_stop is not None and should_stop():
            raise Cancelled()
        temperature = temperature_at(step, config)
        proposal = propose(decoder, request, state, (open_mask, open_slots), temperature, config, noise)
        steps += 1
        if config.revise:
            outcome = revise_step(state, proposal, slots, config)
        else:
            outcome = monotone_step(
                state, proposal, request, slots, config.entropy_bound, config.max_steps - step,
                math.log(config.commit_probability) if config.commit_probability > 0 else -math.inf,
            )  # fmt: skip
        state = outcome.state
        if on_step is not None:
            on_step(step, outcome.shown)
        same = settled.same_as_last(outcome)
        if config.revise and (outcome.finished or step == config.max_steps - 1):
            return DenoiseResult(outcome.shown, state.token_logprob, steps, state.token_confidence)
        if outcome.finished:
            break  # every row is decided: nothing shown depends on the slots still open
        if outcome.verified:
            return DenoiseResult(
                state.current, state.token_logprob, steps, state.token_confidence, outcome.decided
            )
        if settled.ended(same):
            return DenoiseResult(outcome.shown, outcome.shown_logprob, steps, outcome.shown_confidence)
        state = renoised(state, request.vocab_size, noise)
    return DenoiseResult(state.current, state.token_logprob, steps, state.token_confidence)


class Settled:
    """The settled stop (``SamplerConfig.settled_passes``): counts the passes in a row whose shown
    text was the pass before's, in every row.  A row's shown text is its best canvas's hole slots
    up to the first one the ghost-text cut ends at (less sure than ``cut_below``) or the filler
    that ends the middle: slots past it are renoised every pass and change what is shown only if
    the text before them changes."""

    def __init__(self, passes: int, slots: Slots, filler_id: int | None) -> None:
        self.passes = passes
        self.slots = slots
        self.filler_id = filler_id
        self.previous: tuple[np.ndarray, np.ndarray] | None = None  # the last pass's (canvas, shown)
        self.in_a_row = 0

    def same_as_last(self, outcome: StepOutcome) -> bool:
        """Whether this step's shown text is the last pass's."""
        if self.passes <= 0 or outcome.shown_confidence is None:
            return False
        canvas, hole = outcome.shown, self.slots.hole
        ends = hole & (outcome.shown_confidence < self.slots.cut_below)  # (B, L)
        if self.filler_id is not None:
            ends |= hole & (canvas == self.filler_id)
        position = np.arange(canvas.shape[-1])[None]  # (1, L)
        shown = hole & (position <= first_end(ends))  # (B, L) the text and the slot that ends it
        same = False
        if self.previous is not None:
            last_canvas, last_shown = self.previous
            same = bool((shown == last_shown).all() and ((canvas == last_canvas) | ~shown).all())
        self.previous = (canvas, shown)
        return same

    def ended(self, same: bool) -> bool:
        self.in_a_row = self.in_a_row + 1 if same else 0
        return self.passes > 0 and self.in_a_row >= self.passes


def initial_state(request: DenoiseRequest, slots: Slots, noise: Noise) -> DenoiseState:
    """Known slots (and seeded ones) as the request has them, uniform noise everywhere else."""
    canvas = request.canvas
    drawn = noise.tokens(request.vocab_size, canvas.shape)  # (B, L)
    starts_known = slots.fixed if request.seeded is None else slots.fixed | request.seeded  # (B, L)
    zeros = np.zeros(canvas.shape, dtype=np.float32)  # (B, L)
    return DenoiseState(np.where(starts_known, canvas, drawn), slots.fixed.copy(), zeros, zeros.copy())


def propose(
    decoder: CanvasDecoder,
    request: DenoiseRequest,
    state: DenoiseState,
    opened: tuple[np.ndarray, Slots2D],
    temperature: float,
    config: SamplerConfig,
    noise: Noise,
) -> Proposal:
    """One forward, then a token and its entropy for every open slot, under the hole's rules.
    ``opened`` is the open slots as a mask (B, L) and as its (rows, columns) (N,), (N,)."""
    open_mask, open_slots = opened
    before_text = None  # (B, L) slots the filler may not take (it would end a middle before its text)
    if request.filler_id is not None:
        _, before_text = filler_constraints(
            state.current, state.committed, request.clamp_mask, request.filler_id
        )
    raw = decoder.open_logits(state.current, state.soft, open_slots, before_text)[
        :, : request.vocab_size
    ]  # (N, V) float32, the sampler's own to write
    raw[:, request.banned_ids] = -np.inf
    if before_text is not None:
        raw[before_text[open_slots], request.filler_id] = -np.inf
    if request.slot_allowed is not None:
        slot, allowed = request.slot_allowed
        at_slot = open_slots[1] == slot  # (N,)
        raw[at_slot[:, None] & ~allowed[None, :]] = -np.inf

    logits = raw / np.float32(temperature)  # (N, V)
    # The next pass sees this pass's distribution: tempered as the stock sampler, or raw.
    signal = logits if config.tempered_self_conditioning else raw
    soft = decoder.soft_embeddings(state.current, open_slots, np.where(np.isinf(signal), np.float32(-1e4), signal))
    logp = log_softmax(logits)  # (N, V)
    argmax = logits.argmax(-1)  # (N,)
    picked = argmax if config.greedy else noise.sample(np.exp(logp))  # (N,)
    open_entropy = entropy_of_logp(logp)  # (N,): the same log-softmax, not a second one
    entropy = np.full(open_mask.shape, np.inf, dtype=np.float32)  # (B, L)
    entropy[open_slots] = open_entropy
    proposal = state.current.copy()
    proposal[open_slots] = picked
    return Proposal(
        open_mask, open_slots, raw, logp, logsumexp(raw), argmax, picked, proposal, entropy,
        open_entropy, soft,
    )  # fmt: skip


def monotone_step(
    state: DenoiseState,
    proposal: Proposal,
    request: DenoiseRequest,
    slots: Slots,
    bound: float,
    steps_left: int,
    commit_above: float = -math.inf,
) -> StepOutcome:
    """Commit the accepted proposals for good; at least ceil(open / steps_left) per row, and
    every one at least as sure as ``commit_above`` (a temperature-1 log-prob)."""
    open_mask = proposal.open_mask
    most_open = int(open_mask.sum(-1).max())  # the batch's largest count of open slots
    min_accept = (most_open + steps_left - 1) // steps_left  # ceil
    accept = choose_accepted(proposal.entropy, open_mask, bound, min_accept) & open_mask  # (B, L)
    picked_logprob = proposal.at_open(proposal.logprob_of(proposal.picked))  # (B, L)
    picked_confidence = proposal.at_open(proposal.confidence_of(proposal.picked))  # (B, L)
    if commit_above > -math.inf:
        accept |= open_mask & (picked_confidence >= commit_above)
    current = np.where(accept, proposal.proposal, state.current)
    token_logprob = np.where(accept, picked_logprob, state.token_logprob)
    token_confidence = np.where(accept, picked_confidence, state.token_confidence)
    committed = state.committed | accept
    if request.filler_id is not None:
        # A committed filler ends its hole's middle: every slot after it is filler too, also
        # one accepted as text in this same step (only clamped and kept slots stay).
        after_filler, _ = filler_constraints(current, committed, request.clamp_mask, request.filler_id)
        fill_rest = after_filler & ~slots.fixed
        current = np.where(fill_rest, request.filler_id, current)
        committed = committed | fill_rest
    shown = np.where(committed, current, proposal.proposal)
    hole, cut = slots.hole, slots.cut_below
    decided = shown_part_decided(committed, hole, token_confidence, cut)  # (B,)
    verified = False
    if slots.seeded_rows is not None:
        rows = slots.seeded_rows & verified_rows(current, request.canvas, committed, hole, token_confidence, cut)
        rows &= shows_text(current, committed, hole, token_confidence, cut, request.filler_id)
        verified = bool(rows.any())
    new_state = DenoiseState(current, committed, token_logprob, token_confidence, proposal.soft)
    shown_logprob = np.where(committed, token_logprob, picked_logprob)  # (B, L)
    shown_confidence = np.where(committed, token_confidence, picked_confidence)  # (B, L)
    return StepOutcome(
        new_state, shown, bool(decided.all()), verified, decided, shown_logprob, shown_confidence
    )


def revise_step(state: DenoiseState, proposal: Proposal, slots: Slots, config: SamplerConfig) -> StepOutcome:
    """Re-decide every hole slot: accept by the entropy bound, the argmax where not accepted.

    Finished when every hole slot is accepted at once, or when the hole's argmax is the previous
    step's and its mean entropy is under ``confidence_threshold``.
    """
    open_mask, open_slots = proposal.open_mask, proposal.open_slots  # the whole hole, every step
    accept = choose_accepted(proposal.entropy, open_mask, config.entropy_bound, 0) & open_mask  # (B, L)
    argmax = state.current.copy()
    argmax[open_slots] = proposal.argmax  # (B, L)
    final = np.where(accept, proposal.proposal, argmax)  # (B, L) what the canvas says if the loop ends now
    final_open = final[open_slots]  # (N,)
    token_logprob = state.token_logprob.copy()
    token_logprob[open_slots] = proposal.logprob_of(final_open)
    token_confidence = state.token_confidence.copy()
    token_confidence[open_slots] = proposal.confidence_of(final_open)
    current = np.where(accept, proposal.proposal, state.current)
    all_accepted = bool(accept[open_slots].all())
    stable = state.last_argmax is not None and bool((proposal.argmax == state.last_argmax).all())
    confident = less_than(proposal.open_entropy.mean(dtype=np.float32), config.confidence_threshold)
    committed = slots.fixed | accept
    new_state = DenoiseState(
        current, committed, token_logprob, token_confidence, proposal.soft, proposal.argmax
    )
    return StepOutcome(new_state, final, all_accepted or (stable and confident), False)


def renoised(state: DenoiseState, vocab_size: int, noise: Noise) -> DenoiseState:
    """Uniform random tokens at every slot not committed, for the next pass."""
    current = state.current
    drawn = noise.tokens(vocab_size, current.shape)  # (B, L)
    return replace(state, current=np.where(state.committed, current, drawn))

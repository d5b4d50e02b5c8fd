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
* a cancel check between steps and a draft callback after each step;
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

Self-conditioning, as in ``DiffusionGemmaGenerationMixin._denoising_step``, is fed the tempered
(processed) logits; ``tempered_self_conditioning=False`` feeds the raw ones, which is what
difill's own trainer shows its model (lab/training/train.py).  ``SamplerConfig.from_checkpoint``
starts from a checkpoint's generation_config.json.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from difill.engine.api import Cancelled
from difill.engine.decoder import CanvasDecoder


@dataclass
class SamplerConfig:
    max_steps: int = 12  # hard cap on decoder forwards per canvas
    entropy_bound: float = 0.5  # accept lowest-entropy slots while sum(H) - max(H) <= bound
    t_max: float = 0.8  # temperature at the first step
    t_min: float = 0.1  # temperature at the last step
    greedy: bool = True  # commit argmax tokens (True) or samples (False); entropy still decides when
    tempered_self_conditioning: bool = True  # feed the next pass the tempered logits, as the stock sampler
    stock_schedule: bool = False  # the stock t_min + (t_max - t_min) * remaining / steps; else ends at t_min
    revise: bool = False  # re-decide committed hole slots every step, as the stock sampler
    confidence_threshold: float = 0.005  # revise: stop when the hole's argmax is stable and this confident

    @classmethod
    def from_checkpoint(cls, generation_config, difill_trained: bool) -> SamplerConfig:
        """The checkpoint's own sampler settings where its generation_config sets them.

        Unset fields keep difill's defaults.  A checkpoint trained by difill (config ``difill``
        metadata) keeps raw self-conditioning and difill's schedule, as it was trained and tuned;
        any other one gets the stock sampler's.
        """
        config = cls(tempered_self_conditioning=not difill_trained, stock_schedule=not difill_trained)
        if generation_config is None:
            return config
        steps = getattr(generation_config, "max_denoising_steps", None)
        if steps:
            config.max_steps = int(steps)
        sampler = getattr(generation_config, "sampler_config", None)
        bound = getattr(sampler, "entropy_bound", None) if sampler is not None else None
        if bound is not None:
            config.entropy_bound = float(bound)
        for name in ("t_max", "t_min", "confidence_threshold"):
            value = getattr(generation_config, name, None)
            if value is not None:
                setattr(config, name, float(value))
        return config


@dataclass
class DenoiseResult:
    canvas: torch.Tensor  # (B, L) final ids
    token_logprob: torch.Tensor  # (B, L) log-prob of each committed token when it was committed
    steps: int  # decoder forwards; each one runs the whole batch
    # (B, L) the same at temperature 1: the model's own confidence, not sharpened by the schedule
    # (at t_min = 0.1 almost every tempered log-prob is ~0, so only this one can tell a guess)
    token_confidence: torch.Tensor
    # (B,) rows whose middle is final; False only for rows left open when a seeded row was verified
    done: torch.Tensor | None = None


def temperature_at(step: int, config: SamplerConfig) -> float:
    """Linear schedule from t_max at step 0 to t_min at the last allowed step.

    ``stock_schedule``: LinearTemperatureScheduleLogitsProcessor's, t_min + (t_max - t_min) * r / N
    with r = N - step steps remaining (the last step is one step above t_min).
    """
    if config.stock_schedule:
        remaining = config.max_steps - step
        return config.t_min + (config.t_max - config.t_min) * remaining / max(1, config.max_steps)
    if config.max_steps <= 1:
        return config.t_min
    frac = step / (config.max_steps - 1)
    return config.t_max + (config.t_min - config.t_max) * frac


def entropy_of(logits: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(logits, dim=-1)  # (B, L, V)
    p = logp.exp()
    return -(p * torch.where(p > 0, logp, torch.zeros_like(logp))).sum(-1)  # (B, L)


def choose_accepted(
    entropy: torch.Tensor, open_mask: torch.Tensor, bound: float, min_accept: int
) -> torch.Tensor:
    """Entropy-bound acceptance over the open slots, with at least ``min_accept`` per row.

    Accept the k lowest-entropy open slots with sum(H_1..k) - max(H_1..k) <= bound.
    """
    masked = torch.where(open_mask, entropy, torch.full_like(entropy, torch.inf))  # (B, L)
    sorted_h, order = torch.sort(masked, dim=-1)  # ascending; closed slots last (inf)
    finite = torch.isfinite(sorted_h)
    cumulative = torch.cumsum(torch.where(finite, sorted_h, torch.zeros_like(sorted_h)), dim=-1)
    within_bound = (cumulative - sorted_h <= bound) & finite  # (B, L)
    rank = torch.arange(entropy.shape[-1], device=entropy.device).unsqueeze(0)  # (1, L)
    forced = (rank < min_accept) & finite
    accept_sorted = within_bound | forced
    return torch.zeros_like(open_mask).scatter(-1, order, accept_sorted)  # (B, L)


def denoise(
    decoder: CanvasDecoder,
    canvas: torch.Tensor,
    clamp_mask: torch.Tensor,
    banned_ids: torch.Tensor,
    vocab_size: int,
    config: SamplerConfig,
    generator: torch.Generator,
    slot_allowed: tuple[int, torch.Tensor] | None = None,
    initially_committed: torch.Tensor | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_step: Callable[[int, torch.Tensor], None] | None = None,
    filler_id: int | None = None,
    cut_below: float | None = None,
    seeded: torch.Tensor | None = None,
) -> DenoiseResult:
    """Denoise the open slots of ``canvas`` (B, L) until each one is committed.

    ``slot_allowed`` = (slot, allowed (V,) bool), optional: the only tokens allowed at that slot
    (token healing constrains the first hole slot to tokens that extend the partial word).
    ``initially_committed`` (B, L): hole slots whose current token is kept from the start
    (an edit that starts from the original text).  ``on_step(step, best)`` gets the current best
    canvas: committed tokens where committed, the argmax elsewhere.  With ``filler_id``, each
    hole stays one middle followed by filler (see ``filler_constraints``).  ``cut_below`` (a
    log-prob; monotone commit only): the middle will be shown only up to its first committed
    token less sure than this (FillOptions.min_token_prob), so a row is done once every hole
    slot before that token is committed; later passes could not change what is shown.
    ``seeded`` (B, L): hole slots that start from the token ``canvas`` holds there (a draft)
    instead of noise; when a seeded row is verified the loop ends (see the module docstring).
    """
    device = canvas.device
    batch, length = canvas.shape
    committed = clamp_mask.clone()  # (B, L)
    if initially_committed is not None:
        committed |= initially_committed
    fixed = committed.clone()  # (B, L) clamped and kept slots: never re-decided, even with revise
    hole_mask = ~fixed  # (B, L) the slots being denoised
    noise = torch.randint(0, vocab_size, canvas.shape, generator=generator, device=device)
    starts_known = committed if seeded is None else committed | seeded  # (B, L)
    current = torch.where(starts_known, canvas, noise)  # (B, L)
    seeded_rows = None if seeded is None else (seeded & hole_mask).any(-1)  # (B,)
    token_logprob = torch.zeros(batch, length, device=device)
    token_confidence = torch.zeros(batch, length, device=device)
    soft: torch.Tensor | None = None  # self-conditioning input; none before the first pass
    last_argmax: torch.Tensor | None = None  # revise: the previous step's argmax of the hole slots
    steps = 0
    for step in range(config.max_steps):
        open_mask = hole_mask.clone() if config.revise else ~committed  # (B, L)
        if not open_mask.any():
            break
        if should_stop is not None and should_stop():
            raise Cancelled()
        hidden = decoder.hidden(current, soft)  # (B, L, D)
        steps += 1
        raw = decoder.logits(hidden[open_mask])[:, :vocab_size]  # (N_open, V)
        raw[:, banned_ids] = -torch.inf
        if filler_id is not None:
            after_filler, before_text = filler_constraints(current, committed, clamp_mask, filler_id)
            raw[before_text[open_mask], filler_id] = -torch.inf
        if slot_allowed is not None:
            slot, allowed = slot_allowed
            at_slot = open_mask.nonzero()[:, 1] == slot  # (N_open,)
            raw[at_slot.unsqueeze(1) & ~allowed.unsqueeze(0)] = -torch.inf

        logits = raw / temperature_at(step, config)
        # The next pass sees this pass's distribution: tempered as the stock sampler, or raw.
        signal = logits if config.tempered_self_conditioning else raw
        soft = decoder.soft_embeddings(current, open_mask, signal.masked_fill(torch.isinf(signal), -1e4))
        logp = torch.log_softmax(logits, dim=-1)  # (N_open, V)
        if config.greedy:
            picked = logits.argmax(-1)  # (N_open,)
        else:
            picked = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
        proposal = current.clone()
        proposal[open_mask] = picked  # (B, L)
        entropy = torch.full((batch, length), torch.inf, device=device)
        entropy[open_mask] = entropy_of(logits)
        picked_logprob = torch.zeros(batch, length, device=device)
        picked_logprob[open_mask] = logp.gather(-1, picked.unsqueeze(-1)).squeeze(-1)
        raw_norm = torch.logsumexp(raw, dim=-1)  # (N_open,) temperature 1; a gather minus this is a log-prob

        if config.revise:
            accept = choose_accepted(entropy, open_mask, config.entropy_bound, 0) & open_mask
            argmax = current.clone()
            argmax[open_mask] = logits.argmax(-1)
            final = torch.where(accept, proposal, argmax)  # what the canvas says if the loop ends now
            best_logprob = logp.gather(-1, final[open_mask].unsqueeze(-1)).squeeze(-1)
            token_logprob[open_mask] = best_logprob
            token_confidence[open_mask] = (
                raw.gather(-1, final[open_mask].unsqueeze(-1)).squeeze(-1) - raw_norm
            )
            committed = fixed | accept
            current = torch.where(accept, proposal, current)
            stable = last_argmax is not None and torch.equal(argmax[hole_mask], last_argmax)
            confident = entropy[hole_mask].mean().item() < config.confidence_threshold
            last_argmax = argmax[hole_mask]
            if on_step is not None:
                on_step(step, final)
            if bool(accept[hole_mask].all()) or (stable and confident) or step == config.max_steps - 1:
                return DenoiseResult(final, token_logprob, steps, token_confidence)
            renoise = torch.randint(0, vocab_size, canvas.shape, generator=generator, device=device)
            current = torch.where(committed, current, renoise)
            continue

        steps_left = config.max_steps - step
        min_accept = int(math.ceil(open_mask.sum(-1).max().item() / steps_left))
        accept = choose_accepted(entropy, open_mask, config.entropy_bound, min_accept) & open_mask
        current = torch.where(accept, proposal, current)
        token_logprob = torch.where(accept, picked_logprob, token_logprob)
        picked_confidence = torch.zeros(batch, length, device=device)
        picked_confidence[open_mask] = raw.gather(-1, picked.unsqueeze(-1)).squeeze(-1) - raw_norm
        token_confidence = torch.where(accept, picked_confidence, token_confidence)
        committed |= accept
        if filler_id is not None:
            # A committed filler ends its hole's middle: every slot after it is filler too, also
            # one accepted as text in this same step (only clamped and kept slots stay).
            after_filler, _ = filler_constraints(current, committed, clamp_mask, filler_id)
            fill_rest = after_filler & ~fixed
            current = torch.where(fill_rest, torch.full_like(current, filler_id), current)
            committed |= fill_rest
        if on_step is not None:
            on_step(step, torch.where(committed, current, proposal))
        threshold = -math.inf if cut_below is None else cut_below
        decided = shown_part_decided(committed, hole_mask, token_confidence, threshold)  # (B,)
        if bool(decided.all()):
            break  # every row is decided: nothing shown depends on the slots still open
        if seeded_rows is not None:
            verified = seeded_rows & verified_rows(
                current, canvas, committed, hole_mask, token_confidence, threshold
            )
            verified &= shows_text(current, committed, hole_mask, token_confidence, threshold, filler_id)
            if bool(verified.any()):
                return DenoiseResult(current, token_logprob, steps, token_confidence, done=decided)
        renoise = torch.randint(0, vocab_size, canvas.shape, generator=generator, device=device)
        current = torch.where(committed, current, renoise)
    return DenoiseResult(current, token_logprob, steps, token_confidence)


def verified_rows(
    current: torch.Tensor,
    seed: torch.Tensor,
    committed: torch.Tensor,
    hole_mask: torch.Tensor,
    confidence: torch.Tensor,
    cut_below: float,
) -> torch.Tensor:
    """(B,) True where the whole hole is committed, every token as the seed has it, none unsure.

    Strict on purpose: the row's middle is then the seed's, whole, and the ghost-text cut would
    show all of it, so no other row can add to what the model has already confirmed.
    """
    hole_open = (hole_mask & ~committed).any(-1)
    changed = (committed & hole_mask & (current != seed)).any(-1)
    unsure = (committed & hole_mask & (confidence < cut_below)).any(-1)
    return ~hole_open & ~changed & ~unsure


def shows_text(
    current: torch.Tensor,
    committed: torch.Tensor,
    hole_mask: torch.Tensor,
    confidence: torch.Tensor,
    cut_below: float,
    filler_id: int | None,
) -> torch.Tensor:
    """(B,) True where the row's first hole slot is committed, sure and not filler: a middle
    that would be shown is not empty."""
    first = hole_mask.long().argmax(-1, keepdim=True)  # (B, 1) first hole slot of each row
    token = current.gather(-1, first).squeeze(-1)  # (B,)
    sure = committed.gather(-1, first).squeeze(-1) & (confidence.gather(-1, first).squeeze(-1) >= cut_below)
    return sure & (token != filler_id) if filler_id is not None else sure


def shown_part_decided(
    committed: torch.Tensor, hole_mask: torch.Tensor, confidence: torch.Tensor, cut_below: float
) -> torch.Tensor:
    """(B,) True where every hole slot before the row's first unsure committed one is committed.

    Rows hold one hole each (a fill's candidates), so "before" is slot order within the row.
    """
    length = committed.shape[-1]
    position = torch.arange(length, device=committed.device).expand_as(committed)  # (B, L)
    unsure = committed & hole_mask & (confidence < cut_below)  # (B, L)
    first_unsure = torch.where(unsure, position, length).min(-1, keepdim=True).values  # (B, 1)
    still_open = hole_mask & ~committed & (position < first_unsure)  # (B, L)
    return ~still_open.any(-1)


def filler_constraints(
    current: torch.Tensor, committed: torch.Tensor, clamp_mask: torch.Tensor, filler_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Where a hole's layout forces or forbids the filler, from what is committed so far.

    A hole holds one middle then filler only.  Returns (after_filler, before_text), both (B, L):
    slots that follow a committed filler in the same hole (they must be filler), and slots that
    precede committed middle text in the same hole (they must not be filler).
    """
    length = current.shape[1]
    hole = ~clamp_mask
    segment = torch.cumsum(clamp_mask.long(), dim=-1)  # (B, L) slots of one hole share an id
    position = torch.arange(length, device=current.device).expand_as(current)  # (B, L)
    is_filler = committed & hole & (current == filler_id)
    is_text = committed & hole & (current != filler_id)
    # Last committed filler at or before each slot (-1: none), and its hole.
    last_filler = torch.cummax(torch.where(is_filler, position, -1), dim=-1).values  # (B, L)
    filler_segment = segment.gather(-1, last_filler.clamp_min(0))
    after_filler = hole & (last_filler >= 0) & (last_filler < position) & (filler_segment == segment)
    # Next committed text at or after each slot (length: none), and its hole.
    flipped = torch.where(is_text, position, length).flip(-1)
    next_text = (-torch.cummax(-flipped, dim=-1).values).flip(-1)  # (B, L) running minimum from the right
    text_segment = segment.gather(-1, next_text.clamp_max(length - 1))
    before_text = hole & (next_text < length) & (next_text > position) & (text_segment == segment)
    return after_filler, before_text

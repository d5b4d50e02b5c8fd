"""``denoise`` after its split into steps (issue 25) gives exactly what the one-piece loop gave.

``reference_denoise`` below is a copy of ``engine/sampler.py``'s ``denoise`` (and of the
``choose_accepted`` it called, which took an int minimum) as they were before the split (commit
c1b7c31), verbatim but for their names and docstrings, kept only here.  Each case runs both on the tiny random DiffusionGemma with the same generator seed and
compares every output bit for bit: canvas, token_logprob, token_confidence, steps, done, and the
preview each step reported.  A deliberate change of the sampler's behaviour changes the reference
too (or retires this test); a refactor must leave it green.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from difill.engine.api import Cancelled
from difill.engine.canvas import build_canvas, seeded_canvas
from difill.engine.decoder import CanvasDecoder
from difill.engine.prefix_cache import PrefixCache, expand_cache
from difill.engine.sampler import (
    DenoiseRequest,
    DenoiseResult,
    SamplerConfig,
    denoise,
    filler_constraints,
    shown_part_decided,
    shows_text,
    temperature_at,
    verified_rows,
)
from difill.engine.slot_rules import entropy_of  # the reference computes it from the logits
from difill.engine.tokens import encode

PREFIX = "def area(width, height):\n    return "
SUFFIX = "\n\n\nprint(area(2, 3))\n"


# ----------------------------------------------------------------- the reference (pre-split) code


def reference_choose_accepted(
    entropy: torch.Tensor, open_mask: torch.Tensor, bound: float, min_accept: int
) -> torch.Tensor:
    masked = torch.where(open_mask, entropy, torch.full_like(entropy, torch.inf))  # (B, L)
    sorted_h, order = torch.sort(masked, dim=-1)  # ascending; closed slots last (inf)
    finite = torch.isfinite(sorted_h)
    cumulative = torch.cumsum(torch.where(finite, sorted_h, torch.zeros_like(sorted_h)), dim=-1)
    within_bound = (cumulative - sorted_h <= bound) & finite  # (B, L)
    rank = torch.arange(entropy.shape[-1], device=entropy.device).unsqueeze(0)  # (1, L)
    forced = (rank < min_accept) & finite
    accept_sorted = within_bound | forced
    return torch.zeros_like(open_mask).scatter(-1, order, accept_sorted)  # (B, L)


def reference_denoise(
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
            accept = reference_choose_accepted(entropy, open_mask, config.entropy_bound, 0) & open_mask
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
        accept = reference_choose_accepted(entropy, open_mask, config.entropy_bound, min_accept) & open_mask
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


# ----------------------------------------------------------------- the cases


@dataclass
class Case:
    rows: list[tuple[int, bool]]  # (hole size, seed the row from a draft) per row
    config: SamplerConfig
    seed: int = 0
    filler: bool = True
    plant_filler: bool = False  # initially_committed: a filler kept mid-hole in row 0
    keep_first: int = 0  # initially_committed: the first n hole slots of each row kept (an edit)
    slot_allowed: bool = False  # the first hole slot of row 0 may hold only ids = 0 mod 3
    cut_below: float | None = None
    agree: float = 0.0  # > 0: an AgreeingDecoder with this bonus on the draft row's tokens
    half_wrong: bool = False  # the agreeing decoder wants the draft's second half changed
    everywhere: bool = False  # the agreeing decoder's bonus applies at every slot, whatever it holds
    stop_after: int | None = None  # should_stop says yes on this call
    early: bool = False  # the case is there for a stop before max_steps: the reference must take it


CASES = {
    "monotone_greedy": Case([(12, False)], SamplerConfig(max_steps=6)),
    "monotone_sampled": Case([(12, False)], SamplerConfig(max_steps=6, greedy=False), seed=3),
    "monotone_no_filler": Case([(10, False)], SamplerConfig(max_steps=5), filler=False),
    "forced_minimum_two_rows": Case(
        [(12, False), (5, False)], SamplerConfig(max_steps=3, entropy_bound=1e-9)
    ),
    "three_rows_sampled": Case(
        [(9, False), (4, False), (14, False)], SamplerConfig(max_steps=5, greedy=False), seed=7
    ),
    "planted_filler": Case([(12, False)], SamplerConfig(max_steps=5), plant_filler=True, seed=1, early=True),
    "slot_allowed_sampled": Case(
        [(8, False), (8, False)], SamplerConfig(max_steps=4, greedy=False), slot_allowed=True, seed=2
    ),
    "cut_below": Case(
        [(16, False), (16, False)], SamplerConfig(max_steps=12), cut_below=math.log(3e-3), early=True
    ),
    "cut_below_sampled": Case(
        [(16, False)], SamplerConfig(max_steps=12, greedy=False), cut_below=math.log(1e-3), seed=5
    ),
    "stock_schedule_raw_conditioning": Case(
        [(12, False)],
        SamplerConfig(max_steps=6, stock_schedule=True, tempered_self_conditioning=False, entropy_bound=2.0),
    ),
    "one_step": Case([(6, False), (3, False)], SamplerConfig(max_steps=1)),
    "seeded_verified": Case([(8, False), (8, True)], SamplerConfig(max_steps=6), agree=1000.0, early=True),
    "seeded_half_wrong": Case(
        [(8, False), (8, True)], SamplerConfig(max_steps=6), agree=1000.0, half_wrong=True
    ),
    "seeded_unverified_sampled": Case(
        [(8, True), (8, False)], SamplerConfig(max_steps=6, greedy=False), seed=4
    ),
    "seeded_cut_below": Case(
        [(8, True), (8, False)],
        SamplerConfig(max_steps=6),
        agree=1000.0,
        cut_below=math.log(1e-3),
        early=True,
    ),
    "cancelled": Case([(12, False)], SamplerConfig(max_steps=12, entropy_bound=1e-9), stop_after=3),
    "revise_greedy": Case([(10, False)], SamplerConfig(max_steps=6, revise=True)),
    "revise_edit": Case([(10, False), (10, False)], SamplerConfig(max_steps=6, revise=True), keep_first=4),
    "revise_sampled": Case([(10, False)], SamplerConfig(max_steps=6, revise=True, greedy=False), seed=6),
    "revise_slot_allowed": Case([(6, False)], SamplerConfig(max_steps=4, revise=True), slot_allowed=True),
    "revise_confident": Case(
        [(8, True)],
        SamplerConfig(max_steps=6, revise=True, entropy_bound=0.0, confidence_threshold=1.0),
        agree=12.0,
        everywhere=True,
        filler=False,
        early=True,
    ),  # fmt: skip
    "revise_stable_unsure": Case(
        [(8, True)],
        SamplerConfig(max_steps=6, revise=True, entropy_bound=0.0, confidence_threshold=1e-6),
        agree=12.0,
        everywhere=True,
        filler=False,
    ),  # fmt: skip
    "revise_all_accepted": Case(
        [(8, True)], SamplerConfig(max_steps=6, revise=True), agree=1000.0, early=True
    ),
    "revise_cancelled": Case([(10, False)], SamplerConfig(max_steps=6, revise=True), stop_after=2),
}


@dataclass
class Inputs:
    decoder: object
    canvas: torch.Tensor  # (B, L)
    clamp: torch.Tensor  # (B, L)
    banned: torch.Tensor  # (K,)
    vocab_size: int
    kwargs: dict


def build_inputs(loaded, case: Case) -> Inputs:
    tok, ids, model = loaded.tokenizer, loaded.ids, loaded.model
    cache = PrefixCache(model).encode([ids.bos, *encode(tok, PREFIX)]).cache
    suffix = encode(tok, SUFFIX)[:6]
    length = max(size for size, _ in case.rows) + len(suffix) + 1
    draft = encode(tok, "width * height * 2 + 1 - 3 * width")
    canvases, clamps, seeds = [], [], []
    for size, seeded in case.rows:
        canvas = build_canvas([size, suffix], length, ids, document_ends=True)
        mask = torch.zeros_like(canvas.clamp_mask)
        if seeded:
            canvas, mask = seeded_canvas(canvas, draft[:size])
        canvases.append(canvas.ids)
        clamps.append(canvas.clamp_mask)
        seeds.append(mask)
    canvas, clamp = torch.stack(canvases), torch.stack(clamps)  # (B, L)
    kwargs: dict = {}
    if any(seeded for _, seeded in case.rows):
        kwargs["seeded"] = torch.stack(seeds)
    if case.filler:
        kwargs["filler_id"] = ids.filler[0]
    kept = torch.zeros_like(clamp)
    if case.plant_filler:
        canvas[0, 5] = ids.filler[0]
        kept[0, 5] = True
    if case.keep_first:
        kept[:, : case.keep_first] = True
        canvas[:, : case.keep_first] = torch.tensor(draft[: case.keep_first])
    if kept.any():
        kwargs["initially_committed"] = kept
    if case.slot_allowed:
        allowed = torch.arange(ids.vocab_size) % 3 == 0
        allowed[torch.tensor(ids.banned_in_hole)] = False
        kwargs["slot_allowed"] = (0, allowed)
    if case.cut_below is not None:
        kwargs["cut_below"] = case.cut_below
    decoder = CanvasDecoder(model, expand_cache(cache, canvas.shape[0]))
    if case.agree:
        target = canvas[[seeded for _, seeded in case.rows].index(True)].clone()
        if case.half_wrong:
            target[4:8] = (target[4:8] + 1) % ids.vocab_size
        decoder = BonusDecoder(decoder, target, case.agree, case.everywhere)
    banned = torch.tensor(ids.banned_in_hole)
    return Inputs(decoder, canvas, clamp, banned, ids.vocab_size, kwargs)


class BonusDecoder:
    """The real decoder, plus ``bonus`` on ``target``'s token (L,) at every slot where the canvas
    already holds it (sure exactly where a draft is right, so drafts get verified), or with
    ``everywhere`` at every slot (sure of one answer whatever it reads: a stable argmax)."""

    open_logits = CanvasDecoder.open_logits  # one pass: this class's hidden, then logits

    def __init__(self, real: CanvasDecoder, target: torch.Tensor, bonus: float, everywhere: bool) -> None:
        self.real, self.target, self.bonus, self.everywhere = real, target, bonus, everywhere

    def hidden(self, canvas, soft):
        hidden = self.real.hidden(canvas, soft)  # (B, L, D)
        target = self.target.expand_as(canvas)
        bonus = torch.where((canvas == target) | self.everywhere, self.bonus, 0.0).to(hidden.dtype)  # (B, L)
        return torch.cat([hidden, bonus[..., None], target[..., None].to(hidden.dtype)], -1)  # (B, L, D + 2)

    def logits(self, hidden):
        logits = self.real.logits(hidden[..., :-2])  # (N, V)
        logits[torch.arange(hidden.shape[0]), hidden[:, -1].long()] += hidden[:, -2].float()
        return logits

    def soft_embeddings(self, canvas, open_slots, open_logits):
        return self.real.soft_embeddings(canvas, open_slots, open_logits)


def run_both(loaded, case: Case) -> tuple[tuple, tuple]:
    return run_one(reference_denoise, loaded, case), run_one(run_denoise, loaded, case)


def run_one(function, loaded, case: Case) -> tuple[DenoiseResult | None, list[tuple[int, torch.Tensor]], int]:
    """(result or None when cancelled, the (step, best) previews reported, should_stop calls)."""
    inputs = build_inputs(loaded, case)
    previews: list[tuple[int, torch.Tensor]] = []
    calls = []

    def should_stop() -> bool:
        calls.append(1)
        return case.stop_after is not None and len(calls) >= case.stop_after

    with torch.inference_mode():
        try:
            result = function(
                inputs.decoder, inputs.canvas, inputs.clamp, inputs.banned, inputs.vocab_size, case.config,
                torch.Generator().manual_seed(case.seed), should_stop=should_stop,
                on_step=lambda step, best: previews.append((step, best.clone())), **inputs.kwargs,
            )  # fmt: skip
        except Cancelled:
            result = None
    return result, previews, len(calls)


def run_denoise(
    decoder, canvas, clamp, banned, vocab_size, config, generator, should_stop, on_step, **kwargs
) -> DenoiseResult:
    """The code under test, called with the reference's arguments."""
    request = DenoiseRequest(canvas, clamp, banned, vocab_size, **kwargs)
    return denoise(decoder, request, config, generator, should_stop=should_stop, on_step=on_step)


@pytest.mark.parametrize("name", sorted(CASES))
def test_denoise_matches_the_reference_bit_for_bit(loaded, name):
    case = CASES[name]
    (expected, expected_previews, expected_calls), (got, got_previews, got_calls) = run_both(loaded, case)
    if case.early:
        assert expected is not None and expected.steps < case.config.max_steps, "the case misses its path"
    assert got_calls == expected_calls
    assert [s for s, _ in got_previews] == [s for s, _ in expected_previews]
    for (_, want), (_, have) in zip(expected_previews, got_previews, strict=True):
        assert torch.equal(have, want)
    if expected is None:
        assert got is None  # both cancelled
        return
    assert got.steps == expected.steps
    assert torch.equal(got.canvas, expected.canvas)
    assert torch.equal(got.token_logprob, expected.token_logprob)
    assert torch.equal(got.token_confidence, expected.token_confidence)
    if expected.done is None:
        assert got.done is None
    else:
        assert torch.equal(got.done, expected.done)


# ----------------------------------------------------------------- host reads


class HostReads(TorchDispatchMode):
    """Counts the ops that make an accelerator wait for the host: a value read back (item, bool,
    tolist, equal) or a result whose size depends on the data (nonzero, boolean-mask indexing).

    On the CPU nothing waits, so this counts what would; ``tolist`` dispatches no op there, so the
    test counts it by wrapping the method.  The decoder's own forward (``hidden``) is not counted:
    it is the model's, the same before and after.
    """

    READS = {
        "item",
        "_local_scalar_dense",
        "is_nonzero",
        "equal",
        "nonzero",
        "nonzero_numpy",
        "masked_select",
    }

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.paused = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if not self.paused:
            masked = name in ("index", "index_put", "index_put_") and any(
                index is not None and index.dtype == torch.bool for index in args[1]
            )
            self.count += name in self.READS or masked
        return func(*args, **(kwargs or {}))


class UncountedForward:
    """A decoder whose forward the counter skips; logits and soft embeddings are counted."""

    open_logits = CanvasDecoder.open_logits  # one pass: this class's hidden, then logits

    def __init__(self, real, counter: HostReads) -> None:
        self.real, self.counter = real, counter

    def hidden(self, canvas, soft):
        self.counter.paused = True
        try:
            return self.real.hidden(canvas, soft)
        finally:
            self.counter.paused = False

    def logits(self, hidden):
        return self.real.logits(hidden)

    def soft_embeddings(self, canvas, open_slots, open_logits):
        return self.real.soft_embeddings(canvas, open_slots, open_logits)


def host_reads(function, loaded, case: Case, monkeypatch) -> tuple[int, int]:
    """(host reads, steps) of one call of ``function`` on ``case``."""
    inputs = build_inputs(loaded, case)
    counter = HostReads()
    real_tolist = torch.Tensor.tolist

    def counted_tolist(tensor):
        counter.count += not counter.paused
        return real_tolist(tensor)

    with monkeypatch.context() as patch, torch.inference_mode(), counter:
        patch.setattr(torch.Tensor, "tolist", counted_tolist)
        result = function(
            UncountedForward(inputs.decoder, counter), inputs.canvas, inputs.clamp, inputs.banned,
            inputs.vocab_size, case.config, torch.Generator().manual_seed(case.seed), should_stop=None,
            on_step=None, **inputs.kwargs,
        )  # fmt: skip
    return counter.count, result.steps


@pytest.mark.parametrize("name", sorted(name for name, case in CASES.items() if case.stop_after is None))
def test_each_step_reads_the_host_at_most_twice(loaded, name, monkeypatch):
    """Monotone: the open slots' count (nonzero) and the stop tests, once each per step.  Revise:
    the stop tests per step, and the hole's slots once per call."""
    case = CASES[name]
    reads, steps = host_reads(run_denoise, loaded, case, monkeypatch)
    if case.config.revise:
        assert reads <= steps + 1
    else:
        assert reads <= 2 * steps + 1  # + 1: the check that finds no slot left open ends the loop
    before, _ = host_reads(reference_denoise, loaded, case, monkeypatch)
    assert reads < before  # the counter sees the reference's reads: it counts what it should

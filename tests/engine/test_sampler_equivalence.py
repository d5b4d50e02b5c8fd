"""The NumPy denoising loop gives exactly what the torch one gave.

``reference_denoise`` below is a copy of ``engine/sampler.py``'s ``denoise`` as it was in torch,
in one piece, before its split into steps (commit c1b7c31) and before the loop left torch for
NumPy, verbatim but for its names, its docstrings, and two deliberate changes made with the port:
self-conditioning is built by ``CanvasDecoder.soft_tensor`` (the torch side of
``soft_embeddings``), and a sampled token is drawn by the exponential race from ``torch.rand``
(``reference_sample``), which NumPy draws from the same stream (engine/noise.py), where it was
``torch.multinomial``.  The reference runs in torch on torch tensors with a ``torch.Generator``;
the code under test runs in NumPy with ``Noise`` of the same seed.  Each case runs both on the tiny
random DiffusionGemma and compares every output: canvas, steps, done, the preview each step
reported and should_stop's calls bit for bit; token_logprob and token_confidence to 1e-5 (``close``:
the two libraries sum a softmax in different orders).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from difill.engine import slot_rules
from difill.engine.api import Cancelled
from difill.engine.canvas import build_canvas, seeded_canvas
from difill.engine.decoder import CanvasDecoder
from difill.engine.noise import Noise
from difill.engine.prefix_cache import PrefixCache, expand_cache
from difill.engine.sampler import DenoiseRequest, DenoiseResult, denoise
from difill.engine.sampler_config import SamplerConfig, temperature_at
from difill.engine.tokens import encode

PREFIX = "def area(width, height):\n    return "
SUFFIX = "\n\n\nprint(area(2, 3))\n"


# ----------------------------------------------------------------- the reference (pre-split) code


def via_numpy(rule):
    """A slot rule of engine/slot_rules.py (NumPy) called on torch tensors: comparisons and index
    logic, exact in either library."""

    def call(*args):
        out = rule(*(a.numpy() if isinstance(a, torch.Tensor) else a for a in args))
        return tuple(map(torch.from_numpy, out)) if isinstance(out, tuple) else torch.from_numpy(out)

    return call


filler_constraints = via_numpy(slot_rules.filler_constraints)
shown_part_decided = via_numpy(slot_rules.shown_part_decided)
shows_text = via_numpy(slot_rules.shows_text)
verified_rows = via_numpy(slot_rules.verified_rows)


def entropy_of(logits: torch.Tensor) -> torch.Tensor:
    """The torch sampler's entropy (slot_rules.entropy_of before the port)."""
    logp = torch.log_softmax(logits, dim=-1)
    p = logp.exp()
    return -(p * torch.where(p > 0, logp, torch.zeros_like(logp))).sum(-1)


def reference_sample(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """probs (N, V) -> (N,): the exponential race on torch's uniforms, as Noise.sample draws it."""
    u = torch.rand(probs.shape, generator=generator)
    q = (-torch.log1p(-u)).clamp(min=torch.finfo(torch.float32).tiny)
    return (probs / q).argmax(-1)


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
        soft = decoder.soft_tensor(current, open_mask, signal.masked_fill(torch.isinf(signal), -1e4))
        logp = torch.log_softmax(logits, dim=-1)  # (N_open, V)
        if config.greedy:
            picked = logits.argmax(-1)  # (N_open,)
        else:
            picked = reference_sample(logp.exp(), generator)
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
    canvas: np.ndarray  # (B, L)
    clamp: np.ndarray  # (B, L)
    banned: np.ndarray  # (K,)
    vocab_size: int
    kwargs: dict  # NumPy arrays, ints and floats


def build_inputs(loaded, case: Case) -> Inputs:
    tok, ids, model = loaded.tokenizer, loaded.ids, loaded.model
    cache = PrefixCache(model).encode([ids.bos, *encode(tok, PREFIX)]).cache
    suffix = encode(tok, SUFFIX)[:6]
    length = max(size for size, _ in case.rows) + len(suffix) + 1
    draft = encode(tok, "width * height * 2 + 1 - 3 * width")
    canvases, clamps, seeds = [], [], []
    for size, seeded in case.rows:
        canvas = build_canvas([size, suffix], length, ids, document_ends=True)
        mask = np.zeros_like(canvas.clamp_mask)
        if seeded:
            canvas, mask = seeded_canvas(canvas, draft[:size])
        canvases.append(canvas.ids)
        clamps.append(canvas.clamp_mask)
        seeds.append(mask)
    canvas, clamp = np.stack(canvases), np.stack(clamps)  # (B, L)
    kwargs: dict = {}
    if any(seeded for _, seeded in case.rows):
        kwargs["seeded"] = np.stack(seeds)
    if case.filler:
        kwargs["filler_id"] = ids.filler[0]
    kept = np.zeros_like(clamp)
    if case.plant_filler:
        canvas[0, 5] = ids.filler[0]
        kept[0, 5] = True
    if case.keep_first:
        kept[:, : case.keep_first] = True
        canvas[:, : case.keep_first] = draft[: case.keep_first]
    if kept.any():
        kwargs["initially_committed"] = kept
    if case.slot_allowed:
        allowed = np.arange(ids.vocab_size) % 3 == 0
        allowed[list(ids.banned_in_hole)] = False
        kwargs["slot_allowed"] = (0, allowed)
    if case.cut_below is not None:
        kwargs["cut_below"] = case.cut_below
    decoder = CanvasDecoder(model, expand_cache(cache, canvas.shape[0]))
    if case.agree:
        target = canvas[[seeded for _, seeded in case.rows].index(True)].copy()
        if case.half_wrong:
            target[4:8] = (target[4:8] + 1) % ids.vocab_size
        decoder = BonusDecoder(decoder, torch.from_numpy(target), case.agree, case.everywhere)
    banned = np.array(ids.banned_in_hole, dtype=np.int64)
    return Inputs(decoder, canvas, clamp, banned, ids.vocab_size, kwargs)


class BonusDecoder:
    """The real decoder, plus ``bonus`` on ``target``'s token (L,) at every slot where the canvas
    already holds it (sure exactly where a draft is right, so drafts get verified), or with
    ``everywhere`` at every slot (sure of one answer whatever it reads: a stable argmax).
    It has both sides: the torch reference calls hidden, logits and soft_tensor; the NumPy loop
    calls open_logits and soft_embeddings."""

    open_logits = CanvasDecoder.open_logits  # NumPy in and out, around this class's pass_logits
    top_k, sent_ids = 0, None  # what open_logits reads: whole rows, as on a CPU
    pass_logits = CanvasDecoder.pass_logits  # one pass: this class's hidden, then logits

    def __init__(self, real: CanvasDecoder, target: torch.Tensor, bonus: float, everywhere: bool) -> None:
        self.real, self.target, self.bonus, self.everywhere = real, target, bonus, everywhere

    def on_device(self, array):
        return self.real.on_device(array)

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

    def soft_tensor(self, canvas, open_slots, open_logits):
        return self.real.soft_tensor(canvas, open_slots, open_logits)


def as_torch(value):
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value)
    if isinstance(value, tuple):
        return tuple(as_torch(v) for v in value)
    return value


def run_reference(loaded, case: Case):
    """The torch loop: torch tensors in, a torch.Generator."""
    inputs = build_inputs(loaded, case)
    kwargs = {name: as_torch(value) for name, value in inputs.kwargs.items()}
    args = (
        inputs.decoder,
        *map(torch.from_numpy, (inputs.canvas, inputs.clamp, inputs.banned)),
        inputs.vocab_size,
    )
    return run_one(
        lambda **k: reference_denoise(
            *args, case.config, torch.Generator().manual_seed(case.seed), **kwargs, **k
        ),
        case,
    )


def run_numpy(loaded, case: Case):
    """The code under test: NumPy arrays in, Noise of the same seed."""
    inputs = build_inputs(loaded, case)
    request = DenoiseRequest(inputs.canvas, inputs.clamp, inputs.banned, inputs.vocab_size, **inputs.kwargs)
    return run_one(lambda **k: denoise(inputs.decoder, request, case.config, Noise(case.seed), **k), case)


def run_one(function, case: Case) -> tuple[DenoiseResult | None, list[tuple[int, np.ndarray]], int]:
    """(result or None when cancelled, the (step, best) previews reported, should_stop calls)."""
    previews: list[tuple[int, np.ndarray]] = []
    calls = []

    def should_stop() -> bool:
        calls.append(1)
        return case.stop_after is not None and len(calls) >= case.stop_after

    def on_step(step, best) -> None:
        previews.append((step, (best.numpy() if isinstance(best, torch.Tensor) else best).copy()))

    with torch.inference_mode():
        try:
            result = function(should_stop=should_stop, on_step=on_step)
        except Cancelled:
            result = None
    return result, previews, len(calls)


def same(have, want) -> bool:
    """Bit for bit: the same shape, dtype and values (a torch tensor read as NumPy)."""
    want = want.numpy() if isinstance(want, torch.Tensor) else want
    return have.shape == want.shape and have.dtype == want.dtype and np.array_equal(have, want)


def close(have: np.ndarray, want: torch.Tensor) -> bool:
    """Log-probs (float32): within 1e-5.  NumPy and torch sum a softmax's terms in different
    orders, so a log-prob differs in its last bits (4.8e-7 at most over these cases, 9.5e-7 once);
    every token, step and stop decided from them is the same, which ``same`` checks."""
    return (
        have.shape == tuple(want.shape)
        and have.dtype == np.float32
        and np.allclose(have, want.numpy(), rtol=0, atol=1e-5)
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_denoise_matches_the_torch_reference(loaded, name):
    case = CASES[name]
    expected, expected_previews, expected_calls = run_reference(loaded, case)
    got, got_previews, got_calls = run_numpy(loaded, case)
    if case.early:
        assert expected is not None and expected.steps < case.config.max_steps, "the case misses its path"
    assert got_calls == expected_calls
    assert [s for s, _ in got_previews] == [s for s, _ in expected_previews]
    for (_, want), (_, have) in zip(expected_previews, got_previews, strict=True):
        assert same(have, want)
    if expected is None:
        assert got is None  # both cancelled
        return
    assert got.steps == expected.steps
    assert same(got.canvas, expected.canvas)
    assert close(got.token_logprob, expected.token_logprob)
    assert close(got.token_confidence, expected.token_confidence)
    if expected.done is None:
        assert got.done is None
    else:
        assert same(got.done, expected.done)

"""The denoising loop's settings: a checkpoint's sampler, a fill's changes on top, the temperature
schedule, and how much of a row a decoder that runs apart from the loop sends it.

``SamplerConfig.from_checkpoint`` starts from a checkpoint's generation_config.json; the loop
itself is engine/sampler.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from difill.engine.api import FillOptions

# A decoder whose logits live apart from the loop (the llama.cpp worker, torch on an accelerator)
# sends whole open-slot rows for a vocabulary up to this size, else each row's top ``TOP_K`` ids:
# the rest of the row gets no probability (the 26B's 262k-wide rows would be 1 MB a slot a pass).
FULL_ROWS_UP_TO = 65536
TOP_K = 256


def crossing_top_k(vocab_size: int) -> int:
    """How many ids per open slot such a decoder sends; 0: whole rows."""
    return 0 if vocab_size <= FULL_ROWS_UP_TO else TOP_K


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
    # monotone: stop once every row's shown text (Settled) came out the same this many passes in a
    # row, though slots are still open (0: never).  2 on the held-out cases (docs/bench.md): 30%
    # fewer passes, exact match and similarity within a case or 0.007 of every pass's
    settled_passes: int = 2
    # Keep settled canvas slots' keys and values across passes, a full pass every this many
    # (engine/canvas_kv.py: the approximate dual cache); 0: every pass computes every slot.
    canvas_cache_refresh: int = 0
    # monotone: also commit, in the same pass, every open slot whose token the model gives at least
    # this probability (temperature 1): Fast-dLLM's confidence-aware parallel decoding; 0: off
    commit_probability: float = 0.0

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


def sampler_config(checkpoint: SamplerConfig, options: FillOptions) -> SamplerConfig:
    """The checkpoint's sampler with difill's infill changes on top: the step cap, the options."""
    return replace(
        checkpoint,
        max_steps=max(1, min(options.max_steps, checkpoint.max_steps)),
        entropy_bound=checkpoint.entropy_bound if options.entropy_bound is None else options.entropy_bound,
        revise=bool(options.revise),
    )

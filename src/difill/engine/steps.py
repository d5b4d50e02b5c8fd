"""What a fill calls between its denoising steps: the caller's one call per step.

``sampler.denoise`` has two hooks, ``should_stop`` before each forward and ``on_step`` after each
step.  A caller that watches the fill's preview (the server: ghost text compared with what is typed
meanwhile, an edit's ``difill/preview``) answers in that same call whether to stop, so the engine
crosses into it once per step, not twice (``api.PreviewCallback``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from difill.engine.api import PreviewCallback, ShouldStop

StepCallback = Callable[[int, np.ndarray], None]  # (step, current best canvas (B, L)): denoise's on_step


@dataclass(frozen=True)
class Steps:
    """The hooks ``sampler.denoise`` calls: ``should_stop`` before each forward, ``on_step`` after
    each step."""

    should_stop: ShouldStop | None
    on_step: StepCallback | None = None


def one_call_per_step(
    should_stop: ShouldStop | None,
    on_preview: PreviewCallback | None,
    preview_text: Callable[[np.ndarray], str],
) -> Steps:
    """The sampler's hooks from the caller's: after each step ``on_preview`` gets the text the best
    canvas shows (``preview_text``), and its answer is the stop check before the next step.  Before
    the first, the check made just before the prefix encoder stands.  A preview callback that
    answers None (a listener) leaves each step's check to ``should_stop``."""
    if on_preview is None:
        return Steps(should_stop)
    answer: list[bool | None] = [False]

    def report(step: int, best: np.ndarray) -> None:
        answer[0] = on_preview(preview_text(best), step)

    def stop() -> bool:
        said = answer[0]
        if said is None:
            return should_stop is not None and should_stop()
        return said

    return Steps(stop, report)

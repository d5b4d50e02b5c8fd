"""What the rest of difill needs from a fill engine, wherever the model runs.

``InfillBackend`` is structural: the in-process ``InfillEngine`` satisfies it as it is (that is the
local backend), ``RemoteBackend`` satisfies it over HTTP, and ``BatchingBackend`` (engine/batcher.py)
satisfies it for many concurrent callers sharing one model.  All of them return the engine's own
result dataclasses, so a caller never knows where the model ran.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from difill.engine.infill import DEFAULT_HOLE_MARKER, FillOptions, FillResult, HolesResult

ShouldStop = Callable[[], bool]
DraftCallback = Callable[[str, int], None]


class BackendError(RuntimeError):
    """A fill failed for a reason the user can act on; ``str(err)`` is the one message to show.

    The message says what failed and how to fix it.  It never holds an API key.
    """


@runtime_checkable
class InfillBackend(Protocol):
    def fill(
        self,
        prefix: str,
        suffix: str,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_draft: DraftCallback | None = None,
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
        prefix: str,
        selection: str,
        suffix: str,
        strength: float = 0.5,
        instruction: str | None = None,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_draft: DraftCallback | None = None,
    ) -> FillResult: ...

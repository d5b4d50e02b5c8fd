"""The bound every resolver and every scan of user input works within (issue 62: "every resolver
and every scan of user input is bounded").

A scan of what a user or a repository supplies (a module walk, an index of ``go.mod`` files,
the matches of a rename in a 90 KB line) may be asked for any size.  It spends a ``Budget``:
steps (files read, matches looked at) and milliseconds, and it stops when the request that asked
for it is cancelled.  Out of budget, it answers what it found so far: a partial answer in time
is worth more than a whole one after the user moved on.  The work runs in the caller's thread:
a thread that outlives its request is a defect, so the scan itself checks the cancel flag
(cooperative cancellation), never a thread left running that nobody waits for.
"""

from __future__ import annotations

import threading
import time


class Budget:
    """At most ``steps`` steps and ``ms`` milliseconds of work, until ``cancel`` is set."""

    def __init__(self, ms: float, steps: int, cancel: threading.Event | None = None) -> None:
        self.deadline = time.monotonic() + ms / 1000
        self.steps = steps
        self.cancel = cancel
        self.spent = 0
        self.out = False  # once out, always out: a scan that stopped says so to its caller

    def spend(self, steps: int = 1) -> bool:
        """Take ``steps`` more steps: False (and from then on) when the budget is spent, the
        clock ran out, or the request was cancelled."""
        if self.out:
            return False
        self.spent += steps
        if self.spent > self.steps or time.monotonic() > self.deadline or self.cancelled:
            self.out = True
        return not self.out

    @property
    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()


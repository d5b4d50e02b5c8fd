"""The budget every resolver and scan of user input spends (text/budget.py, issue 62)."""

from __future__ import annotations

import threading

from difill.text.budget import Budget


def test_a_budget_stops_at_its_steps_its_clock_and_a_cancel():
    budget = Budget(ms=10_000, steps=3)
    assert [budget.spend() for _ in range(5)] == [True, True, True, False, False]
    cancel = threading.Event()
    budget = Budget(ms=10_000, steps=100, cancel=cancel)
    assert budget.spend()
    cancel.set()
    assert not budget.spend() and budget.cancelled
    assert not Budget(ms=-1, steps=100).spend()  # the clock ran out

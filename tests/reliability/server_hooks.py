"""The environment that loads ``hooks/sitecustomize.py`` into a server subprocess, and the events
those hooks write (fault injection, inspection, audit)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from stdio_client import BASE_ENV

HOOKS_DIR = Path(__file__).parent / "hooks"


def hook_env(log_path: Path, **settings: str) -> dict[str, str]:
    """Environment for a subprocess that loads the test hooks; they write events to ``log_path``.

    ``settings`` become DIFILL_HOOK_<NAME> variables (see hooks/sitecustomize.py)."""
    path = os.pathsep.join(p for p in (str(HOOKS_DIR), BASE_ENV.get("PYTHONPATH", "")) if p)
    env = {"PYTHONPATH": path, "DIFILL_HOOK_LOG": str(log_path)}
    env.update({f"DIFILL_HOOK_{name.upper()}": value for name, value in settings.items()})
    return env


def hook_events(log_path: Path, kind: str | None = None) -> list[dict]:
    """The events the hooks wrote, optionally only those of one kind."""
    if not log_path.exists():
        return []
    events = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    return [e for e in events if kind is None or e["event"] == kind]

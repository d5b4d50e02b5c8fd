"""JSON shapes of difill's native HTTP API (``POST /v1/fill``), shared by server and client.

Options travel as FillOptions' own field names; results as the engine's dataclasses turned into
objects.  Parsing is strict on what a client sends (an unknown option is a typo to report, not to
ignore); a server's answer is read by engine/backends/answers.py, which checks its shape and
bounds and drops an unknown stats field from a newer server, so an older client keeps working.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from difill.engine.api import FillOptions, FillResult, HolesResult

# Bounds a server enforces so that one request cannot hold the model for minutes.
OPTION_BOUNDS: dict[str, tuple[float, float]] = {
    "max_hole_tokens": (1, 512),
    "suffix_tokens": (0, 512),
    "prefix_tokens": (1, 32768),
    "max_steps": (1, 256),
    "entropy_bound": (0.0, 100.0),
    "min_token_prob": (0.0, 1.0),
    "seed": (0, 2**63 - 1),
}
MAX_HOLE_CANDIDATES = 4
MAX_DRAFTS = 8  # draft rows one request may add to the batch (FillOptions.drafts)
MAX_DRAFT_CHARS = 4096
MAX_CONTEXT_BLOCK_CHARS = 64 * 1024  # FillOptions.context_block: snippets from other files
_HINTS = typing.get_type_hints(FillOptions)


def options_to_json(options: FillOptions | None) -> dict[str, Any] | None:
    """Only the options that differ from FillOptions' defaults, so that a server from an older
    difill, which rejects options it does not know, still takes every request that leaves a newer
    option at its default."""
    if options is None:
        return None
    defaults = FillOptions()
    out = {}
    for f in dataclasses.fields(FillOptions):
        value = getattr(options, f.name)
        if value != getattr(defaults, f.name):
            out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def options_from_json(raw: Any) -> FillOptions | None:
    """FillOptions from a client's JSON; ValueError with one sentence per problem otherwise."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError(f"'options' must be an object, got {type(raw).__name__}")
    known = {f.name for f in dataclasses.fields(FillOptions)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    values = {name: _checked(name, value) for name, value in raw.items()}
    return FillOptions(**values)


def _checked(name: str, value: Any) -> Any:
    hint = _HINTS[name]
    optional = isinstance(hint, types.UnionType) and type(None) in typing.get_args(hint)
    if value is None and optional:
        return None
    base = next(a for a in typing.get_args(hint) if a is not type(None)) if optional else hint
    if name == "drafts":
        ok = isinstance(value, list) and len(value) <= MAX_DRAFTS
        ok = ok and all(isinstance(v, str) and len(v) <= MAX_DRAFT_CHARS for v in value)
        if not ok:
            raise ValueError(
                f"option drafts must be a list of at most {MAX_DRAFTS} strings of <= {MAX_DRAFT_CHARS} chars"
            )
        return tuple(value)
    if typing.get_origin(base) is tuple:
        ok = isinstance(value, list) and len(value) <= MAX_HOLE_CANDIDATES
        ok = ok and all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 512 for v in value)
        if not ok:
            raise ValueError(f"option {name} must be a list of at most {MAX_HOLE_CANDIDATES} integers 1..512")
        return tuple(value)
    if base is bool:
        if not isinstance(value, bool):
            raise ValueError(f"option {name} must be true or false")
        return value
    if base is str:
        if not isinstance(value, str):
            raise ValueError(f"option {name} must be a string")
        if name == "context_block" and len(value) > MAX_CONTEXT_BLOCK_CHARS:
            raise ValueError(f"option context_block must be at most {MAX_CONTEXT_BLOCK_CHARS} characters")
        return value
    number_types = (int,) if base is int else (int, float)
    if isinstance(value, bool) or not isinstance(value, number_types):
        raise ValueError(f"option {name} must be {'an integer' if base is int else 'a number'}")
    low, high = OPTION_BOUNDS.get(name, (float("-inf"), float("inf")))
    if not low <= value <= high:
        raise ValueError(f"option {name} must be between {low} and {high}, got {value}")
    return base(value)


def fill_result_to_json(result: FillResult) -> dict[str, Any]:
    return {
        "text": result.text,
        "candidates": [dataclasses.asdict(c) for c in result.candidates],
        "stats": dataclasses.asdict(result.stats),
    }


def holes_result_to_json(result: HolesResult) -> dict[str, Any]:
    return {"text": result.text, "middles": result.middles, "stats": dataclasses.asdict(result.stats)}

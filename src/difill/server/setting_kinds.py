"""What a setting may hold: its kind decides which raw JSON values are valid, what the message
says about the others, and the JSON schema an editor checks values against (server/config.py
``setting``; the clients' files are written from these: server/settings_clients.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

# Each Settings field names its kind in its metadata; ``convert`` gives (value as the field's
# type, None) or (None, what is wrong with it).  The problem text completes the sentence
# "<key> ..., got <value>; using <default>" that parse_settings reports.


@runtime_checkable
class Kind(Protocol):
    def convert(self, value: Any) -> tuple[Any, str | None]: ...

    def schema(self) -> dict[str, Any]:
        """The JSON schema of the values it takes, as VS Code reads it (package.json): the
        editor then refuses what the server would."""
        ...


def _blank(value: Any) -> bool:
    """None or an empty/whitespace string: "not set", so the field's None default applies."""
    return value is None or (isinstance(value, str) and value.strip() == "")


@dataclass(frozen=True)
class DirectoryPath:
    """A directory path; blank: None (the default)."""

    what = "a directory path"

    def schema(self) -> dict[str, Any]:
        return {"type": "string"}  # empty: the default

    def convert(self, value: Any) -> tuple[str | None, str | None]:
        if _blank(value):
            return None, None
        return (value, None) if isinstance(value, str) else (None, f"must be {self.what} (string)")


@dataclass(frozen=True)
class FilePath(DirectoryPath):
    """A file path; blank: None (the default)."""

    what = "a file path"


@dataclass(frozen=True)
class HttpUrl:
    """An http(s) URL, surrounding spaces dropped; blank: None (the default)."""

    def schema(self) -> dict[str, Any]:
        return {"type": "string"}

    def convert(self, value: Any) -> tuple[str | None, str | None]:
        if _blank(value):
            return None, None
        ok = isinstance(value, str) and value.startswith(("http://", "https://"))
        return (value.strip(), None) if ok else (None, "must be an http:// or https:// URL")


@dataclass(frozen=True)
class Choice:
    """One of a few fixed strings."""

    values: tuple[str, ...]

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.values)}

    def convert(self, value: Any) -> tuple[str | None, str | None]:
        ok = isinstance(value, str) and value in self.values
        return (value, None) if ok else (None, f"must be one of {', '.join(self.values)}")


@dataclass(frozen=True)
class Device:
    """A torch device name difill supports: auto, cpu, cuda, cuda:N or mps."""

    def schema(self) -> dict[str, Any]:
        return {
            "type": "string", "pattern": "^(auto|cpu|cuda|cuda:[0-9]+|mps)$",
            "patternErrorMessage": "auto, cpu, cuda, cuda:N or mps",
        }  # fmt: skip

    def convert(self, value: Any) -> tuple[str | None, str | None]:
        ok = isinstance(value, str) and (
            value in ("auto", "cpu", "cuda", "mps") or (value.startswith("cuda:") and value[5:].isdigit())
        )
        return (value, None) if ok else (None, "must be one of auto, cpu, cuda, cuda:N, mps")


@dataclass(frozen=True)
class LanguageIds:
    """A list of non-empty language ids, kept as a tuple."""

    def schema(self) -> dict[str, Any]:
        return {"type": "array", "items": {"type": "string"}}

    def convert(self, value: Any) -> tuple[tuple[str, ...] | None, str | None]:
        if isinstance(value, list) and all(isinstance(x, str) and x for x in value):
            return tuple(value), None
        return None, "must be a list of language ids"


@dataclass(frozen=True)
class Globs:
    """A list of gitignore-style patterns (one line each, at most 1024 characters), as a tuple."""

    def schema(self) -> dict[str, Any]:
        return {"type": "array", "items": {"type": "string"}}

    def convert(self, value: Any) -> tuple[tuple[str, ...] | None, str | None]:
        if (
            isinstance(value, list)
            and len(value) <= 1000
            and all(isinstance(x, str) and x.strip() and "\n" not in x and len(x) <= 1024 for x in value)
        ):
            return tuple(value), None
        return None, "must be a list of at most 1000 one-line glob patterns (gitignore syntax)"


@dataclass(frozen=True)
class Flag:
    """true or false (not 0 or 1, not "true")."""

    def schema(self) -> dict[str, Any]:
        return {"type": "boolean"}

    def convert(self, value: Any) -> tuple[bool | None, str | None]:
        return (value, None) if isinstance(value, bool) else (None, "must be true or false")


@dataclass(frozen=True)
class OneLine:
    """A non-blank string without a line break."""

    def schema(self) -> dict[str, Any]:
        return {"type": "string"}

    def convert(self, value: Any) -> tuple[str | None, str | None]:
        ok = isinstance(value, str) and value.strip() != "" and "\n" not in value
        return (value, None) if ok else (None, "must be a non-empty one-line string")


@dataclass(frozen=True)
class Probability:
    """A number from 0 to 1, as a float; None allowed (the default: "the checkpoint's choice")."""

    def schema(self) -> dict[str, Any]:
        return {"type": ["number", "null"], "minimum": 0, "maximum": 1}

    def convert(self, value: Any) -> tuple[float | None, str | None]:
        if value is None:
            return None, None
        # bool is an int in Python: refuse it explicitly.  NaN fails the range check.
        ok = not isinstance(value, bool) and isinstance(value, int | float) and 0.0 <= value <= 1.0
        return (float(value), None) if ok else (None, "must be a number between 0 and 1")


@dataclass(frozen=True)
class BoundedInt:
    """An integer from ``low`` to ``high``; a float with no fraction (2.0) counts as one."""

    low: int
    high: int

    def schema(self) -> dict[str, Any]:
        return {"type": "integer", "minimum": self.low, "maximum": self.high}

    def convert(self, value: Any) -> tuple[int | None, str | None]:
        # bool is an int in Python: refuse it explicitly.  NaN and infinities are no integer.
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value != int(value)
        ):
            return None, f"must be an integer between {self.low} and {self.high}"
        if not self.low <= value <= self.high:
            return None, f"must be between {self.low} and {self.high}"
        return int(value), None

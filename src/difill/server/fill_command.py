"""``difill fill``: the suggestion an editor would show at a position in a file when asked for one
(``--typing``: as ghost text while typing), or every marked hole filled, through the server's own
path (server/suggestion_path.py) on a local or remote model."""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from difill.engine.api import InfillBackend
    from difill.server.suggestion_path import Shown, ShownHoles

# A line and its ending: \n, \r\n or \r, as LSP and editors count lines (str.splitlines also
# splits at form feeds and U+2028, which would shift every later line number).
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def parse_location(spec: str) -> tuple[Path, int | None, int | None]:
    """``PATH[:LINE[:COL]]`` with 1-based line and column, as editors show them."""
    parts = spec.rsplit(":", 2)
    numbers: list[int] = []
    while len(parts) > 1 and parts[-1].isdigit():
        numbers.insert(0, int(parts.pop()))
    path = Path(":".join(parts))
    line = numbers[0] if numbers else None
    col = numbers[1] if len(numbers) > 1 else None
    return path, line, col


def split_at(text: str, line: int, col: int) -> tuple[str, str]:
    """Prefix and suffix around a 1-based (line, column); the column counts characters."""
    lines = LINE.findall(text) or [""]
    if not 1 <= line <= len(lines) + 1:
        raise SystemExit(f"difill: line {line} is outside the file (1..{len(lines)})")
    offset = sum(len(x) for x in lines[: line - 1])
    current = lines[line - 1] if line <= len(lines) else ""
    content = current.rstrip("\r\n")
    if not 1 <= col <= len(content) + 1:
        raise SystemExit(f"difill: column {col} is outside line {line} (1..{len(content) + 1})")
    offset += col - 1
    return text[:offset], text[offset:]


def main(args: argparse.Namespace) -> int:
    from difill.engine.api import BackendError, ModelLoadError
    from difill.engine.backends import make_backend
    from difill.server.config import Settings, backend_spec, command_line_settings
    from difill.server.suggestion_path import ServedModel
    from difill.text.languages import language_for_path

    path, line, col = parse_location(args.location)
    text = read_source(path)
    if args.holes and args.marker not in text:  # before the model loads: nothing to fill
        raise SystemExit(f"difill: {path} has no hole marker {args.marker!r}; put one where code should go")
    settings = command_line_settings(
        args, remote=args.remote, remote_canvas=args.remote_canvas,
        max_tokens=args.max_tokens or Settings.max_tokens, steps=args.steps,
    )  # fmt: skip
    try:
        engine = make_backend(backend_spec(settings))
    except (ModelLoadError, BackendError) as err:
        raise SystemExit(f"difill: {err}") from err
    language = language_for_path(str(path))
    served = ServedModel(engine, settings)
    if args.holes:
        try:
            holes = served.fill_holes(text, args.marker, language, args.max_tokens)
        except BackendError as err:
            raise SystemExit(f"difill: {err}") from err
        print_holes(holes, args.json)
        return 0
    if line is None:
        raise SystemExit("difill: give a position as PATH:LINE:COL, or --holes")
    prefix, _ = split_at(text, line, col or 1)
    # The server's own suggestion path (shape, settings, pipeline): what an editor would show here
    # when asked (Alt+\\, <M-\\>), or with --typing as ghost text while typing (the ghost-text cut
    # may leave nothing when the model is unsure).
    try:
        shown = served.suggest(
            text, len(prefix), path.resolve().as_uri(), language or "plaintext", invoked=not args.typing
        )
    except BackendError as err:
        raise SystemExit(f"difill: {err}") from err
    where = args.location if col else f"{args.location}:1"  # as the terminal view names it
    print_shown(args, text, len(prefix), shown, engine, where)
    return 0


def read_source(path: Path) -> str:
    """The file's text as it is (read_text would turn CRLF into LF); a clear exit when unreadable."""
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as err:
        raise SystemExit(f"difill: cannot read {path}: {err.strerror}") from err
    except UnicodeDecodeError as err:
        raise SystemExit(
            f"difill: {path} is not UTF-8 text (byte {err.start}); difill reads UTF-8 files"
        ) from err


def print_holes(holes: ShownHoles, as_json: bool) -> None:
    """The file with its holes filled, or with --json the fills and what they cost."""
    if as_json:
        print(json.dumps({"text": holes.text, "middles": holes.middles, "model_middles": holes.result.middles,
                          "steps": holes.result.stats.steps, "ms": round(holes.ms, 1),
                          "stats": asdict(holes.result.stats)}))  # fmt: skip
    else:
        sys.stdout.write(holes.text)


def print_shown(
    args: argparse.Namespace, text: str, cursor: int, shown: Shown, engine: InfillBackend, where: str
) -> None:
    """The suggestion as JSON (--json), bare (--raw, or stdout not a terminal), or in its line."""
    from difill.engine.api import about

    if args.json:
        result = shown.result
        print(json.dumps({
            "text": shown.text, "steps": result.stats.steps, "ms": round(shown.ms, 1), "model_text": result.text,
            "candidates": [asdict(c) for c in result.candidates], "stats": asdict(result.stats),
            "declined": shown.declined,
        }))  # fmt: skip
    elif args.raw or not sys.stdout.isatty():
        if shown.declined:
            print(f"difill: {shown.declined}", file=sys.stderr)
        print(shown.text)
    else:
        said = (
            f"{model_label(args, about(engine).engine)}, {shown.result.stats.steps} steps, {shown.ms:.0f} ms"
        )
        origin = origin_label(shown.sources[0]) if shown.sources else ""
        print(terminal_view(text, cursor, shown.text, where, said, shown.declined, origin))


def model_label(args: argparse.Namespace, engine: str) -> str:
    """Which model wrote the fill, as a newcomer reads it: the shipped one, a path, or a server
    (its host only: a URL may carry a password).  ``engine`` is the backend's own word for what
    ran it (``About.engine``): what "auto" chose is decided once, where the engine is made."""
    if args.remote:
        from urllib.parse import urlsplit

        parts = urlsplit(args.remote)
        return f"the server at {parts.hostname or args.remote}{f':{parts.port}' if parts.port else ''}"
    model = args.model or "the model shipped with difill (4M parameters)"
    return f"{model} on {engine}"


def origin_label(source: str) -> str:
    """Where a shown text came from, as a newcomer reads it (Candidate.source)."""
    if not source.startswith("draft:"):
        return "written by the model"
    where = source.removeprefix("draft:")
    if where == "current":
        return "a draft: what followed the same code earlier in this file"
    if where == "jedi":
        return "a name from jedi's list"
    return f"a draft from {where}"


GREEN, PLAIN = "\x1b[32m", "\x1b[0m"


def terminal_view(
    text: str, offset: int, fill: str, where: str, about: str, declined: str | None, origin: str = ""
) -> str:
    """The fill in place, for a person at a terminal: a header naming the model (and, given
    ``origin``, where the text came from), then the line before and the lines the fill lands on,
    numbered, with the fill in green."""
    if not fill:
        reason = (
            f": {declined}" if declined else " (the model was unsure: it shows nothing rather than a guess)"
        )
        return f"{where}: nothing to fill{reason}\n({about})"
    cursor = text.count("\n", 0, offset)  # the cursor's line, 0-based
    top = max(cursor - 1, 0)  # one line of context above it
    start = 0
    for _ in range(top):
        start = text.index("\n", start) + 1
    end = text.find("\n", offset)
    marked = text[start:offset] + GREEN + fill + PLAIN + text[offset : len(text) if end < 0 else end]
    lines = []
    for k, line in enumerate(marked.split("\n"), start=top):
        # The lines a fill runs on to are green from their first column.
        colour = GREEN if cursor < k <= cursor + fill.count("\n") else ""
        lines.append(f"{k + 1:>5} | {colour}{line.rstrip(chr(13))}{PLAIN if colour else ''}")
    header = f"{where}: filled by {about}" + (f"\n(the text: {origin})" if origin else "")
    return header + "\n" + "\n".join(lines)

"""`difill eval --next-edit` (issue 35, part 6): next edits through `difill serve`, as an editor
asks for them.

For each mined case (lab/next_edit_mining.py, benchmarks/next_edit/cases.jsonl) a scripted client
opens the file as it was before the commit, sends the commit's first hunk as one didChange, and
asks ``textDocument/copilotInlineEdit`` with the cursor at the end of that hunk; the round trip
is timed.  The first edit answered is applied and compared with the commit:

* **exact**: the file is then exactly as the commit left it (the second hunk, nothing else);
* **changed-line F1**: the lines removed and added by the answer against those of the second
  hunk (multisets of ``-line`` / ``+line``), 0 when nothing is answered;
* **noise** on "none" cases (a single-hunk commit): the share where anything is answered.

Issue 63: each case is opened with its own file's language (lab/next_edit_history.py mines Go,
TypeScript and JavaScript too), and words are typed in two halves; an ask between them, inside a
word being typed, is scored apart (**half-typed asks answered**, per ask).

Three rows, one server each: ``nextEdit`` = ``drafts`` (drafts alone), ``model`` (the model
alone) and ``on`` (as served).  Nothing here knows the answers: the server gets only what an
editor would send.  A last table (lab/next_edit_gate.py, in process) says what the model wrote
before the gate.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import math
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from lsprotocol import types

from difill.text.languages import language_for_path
from lab.bench_server import position_of
from lab.bench_timing import percentile
from lab.next_edit_mining import TOKEN, Case, read_cases
from lab.serve_client import UNREAD, ServeClient, serve_args

METHOD = "textDocument/copilotInlineEdit"
DEFAULT_CASES = Path(__file__).resolve().parents[1] / "benchmarks" / "next_edit" / "cases.jsonl"
ROWS = (("drafts alone", "drafts"), ("model alone", "model"), ("as served", "on"))
KINDS = ("repeat", "follow", "none")
# The clients' pause before they ask with the cursor at the end of a word (issue 63:
# FINISHED_PAUSE_MS in editors/vscode/src/nextEditView.ts and editors/neovim/lua/difill/next_edit.lua).
FINISHED_PAUSE_S = 1.0


def offset_of(text: str, line: int, character: int) -> int:
    """Character offset of an LSP position (UTF-16 columns)."""
    start = 0
    for _ in range(line):
        found = text.find("\n", start)
        if found < 0:
            return len(text)
        start = found + 1
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    units = 0
    for i, char in enumerate(text[start:end]):
        if units >= character:
            return start + i
        units += 2 if ord(char) > 0xFFFF else 1
    return end


CHUNK = re.compile(r"\w+|[ \t]+|\n|[^\w\s]")  # what an editor sends per keystroke burst
_WORD = re.compile(r"\w")


def keystrokes(before: str, edit: tuple[int, int, str], mid_word: bool = False) -> list[tuple[int, int, str]]:
    """The first hunk as an editor sends it, one ranged didChange a step: the old text selected
    and deleted, then the new text a word, a run of spaces, a line break or a symbol at a time.
    Each step is (start, end, text) in the document as the steps before it left it.  With
    ``mid_word`` a word of two or more characters is typed in two halves (issue 63): the state
    between them is a word half typed, where the right answer is none."""
    start, end, new = edit
    if start == end and new.endswith("\n") and before[start - 1 : start] == "\n":
        # A line inserted is typed as an editor types it: the line break first (``o``, Enter at
        # the end of the line above), then the line.  The document it makes is the same.
        start, end, new = start - 1, end - 1, "\n" + new[:-1]
    steps = [(start, end, "")] if end > start else []
    at = start
    for chunk in CHUNK.findall(new):
        parts = _halves(chunk) if mid_word and _WORD.match(chunk) else (chunk,)
        for part in parts:
            steps.append((at, at, part))
            at += len(part)
    if not steps:
        return [(start, end, new)]
    return steps


def _halves(word: str) -> tuple[str, ...]:
    return (word[: len(word) // 2], word[len(word) // 2 :]) if len(word) >= 2 else (word,)


def mid_word(text: str, at: int) -> bool:
    """Is offset ``at`` of ``text`` (the document as the edit leaves it) inside a word?"""
    return 0 < at < len(text) and _WORD.match(text[at - 1]) is not None and _WORD.match(text[at]) is not None


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson interval of a rate of ``hits`` in ``n``."""
    if n == 0:
        return 0.0, 0.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def changed_lines(old: str, new: str) -> Counter:
    """The lines ``old`` -> ``new`` removes and adds, as a multiset of ("-", line) / ("+", line)."""
    out: Counter = Counter()
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), n=0, lineterm=""):
        if line.startswith(("---", "+++", "@@")):
            continue
        out[(line[0], line[1:])] += 1
    return out


def line_f1(predicted: Counter, expected: Counter) -> float:
    if not predicted or not expected:
        return 0.0
    common = sum((predicted & expected).values())
    if common == 0:
        return 0.0
    precision, recall = common / sum(predicted.values()), common / sum(expected.values())
    return 2 * precision * recall / (precision + recall)


@dataclass
class Outcome:
    kind: str
    answered: bool
    exact: bool
    exact_any: bool  # one of the alternatives answered is exact
    f1: float
    ms: float
    repo: str = ""
    interim: int = 0  # intermediate asks after a whole token (a half-made edit) that answered anything
    half_asks: int = 0  # intermediate asks with the cursor inside a word being typed (issue 63)
    half_answered: int = 0  # of those, the ones that answered anything


def score(
    case: Case,
    text: str,
    edits: list[dict[str, Any]],
    ms: float,
    interim: int = 0,
    half: tuple[int, int] = (0, 0),
) -> Outcome:
    """``edits`` (the server's answer for ``text``, the file after the first hunk) against ``case``;
    ``half``: (mid-word asks, those answered)."""
    results = []
    for edit in edits:
        start, end = edit["range"]["start"], edit["range"]["end"]
        low = offset_of(text, start["line"], start["character"])
        high = offset_of(text, end["line"], end["character"])
        results.append(text[:low] + edit["text"] + text[high:])
    if case.kind == "none":
        return Outcome(case.kind, bool(results), not results, not results, 0.0, ms, case.repo, interim, *half)
    first = results[0] if results else text
    f1 = line_f1(changed_lines(text, first), changed_lines(text, case.expected)) if results else 0.0
    exact_any = any(r == case.expected for r in results)
    exact = first == case.expected and bool(results)
    return Outcome(case.kind, bool(results), exact, exact_any, f1, ms, case.repo, interim, *half)


def _rates(outcomes: list[Outcome]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in KINDS:
        of = [o for o in outcomes if o.kind == kind]
        n = max(1, len(of))
        if kind == "none":
            noisy = sum(o.answered for o in of)
            out["none"] = {"cases": len(of), "noise": round(noisy / n, 4), "noise_ci": wilson(noisy, len(of))}
        else:
            exact = sum(o.exact for o in of)
            out[kind] = {
                "cases": len(of),
                "exact": round(exact / n, 4),
                "exact_ci": wilson(exact, len(of)),
                "exact_any": round(sum(o.exact_any for o in of) / n, 4),
                "line_f1": round(sum(o.f1 for o in of) / n, 4),
                "answered": round(sum(o.answered for o in of) / n, 4),
                "silent": round(sum(not o.answered for o in of) / n, 4),
            }
    interim = sum(o.interim > 0 for o in outcomes)
    out["interim"] = {"cases": len(outcomes), "noise": round(interim / max(1, len(outcomes)), 4)}
    asks, answered = sum(o.half_asks for o in outcomes), sum(o.half_answered for o in outcomes)
    out["half_typed"] = {
        "asks": asks,
        "answered": round(answered / max(1, asks), 4),
        "ci": wilson(answered, asks),
    }
    return out


@dataclass
class Row:
    name: str
    mode: str
    outcomes: list[Outcome] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"row": self.name, "nextEdit": self.mode, **_rates(self.outcomes)}
        repos = sorted({o.repo for o in self.outcomes})
        out["projects"] = {r: _rates([o for o in self.outcomes if o.repo == r]) for r in repos}
        ms = [o.ms for o in self.outcomes]
        out["p50_ms"], out["p95_ms"] = round(percentile(ms, 50), 1), round(percentile(ms, 95), 1)
        return out


def copy_rule(case: Case) -> tuple[str, list[dict[str, Any]]]:
    """The no-model rule the issue measured against: the first hunk's token substitutions (as
    whole lines, old tokens -> new tokens), the first that applies at the nearest other line that
    has it, applied there once.  (The text after the hunk, the edit as an LSP answer.)"""
    start, end, new = case.edit
    text = case.before[:start] + new + case.before[end:]
    line_start = case.before.rfind("\n", 0, start) + 1
    old_end = case.before.find("\n", end)
    old_lines = case.before[line_start : len(case.before) if old_end < 0 else old_end]
    new_end = text.find("\n", start + len(new))
    new_lines = text[line_start : len(text) if new_end < 0 else new_end]
    old_tokens = TOKEN.findall(old_lines)
    new_matches = list(TOKEN.finditer(new_lines))
    new_tokens = [m.group() for m in new_matches]
    matcher = difflib.SequenceMatcher(a=old_tokens, b=new_tokens, autojunk=False)
    changes = [  # (old tokens, the new text as written)
        (old_tokens[i1:i2], new_lines[new_matches[j1].start() : new_matches[j2 - 1].end()])
        for op, i1, i2, j1, j2 in matcher.get_opcodes()
        if op == "replace"
    ]
    edited = (text.count("\n", 0, line_start), text.count("\n", 0, line_start + len(new_lines)))
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    order = sorted(
        (i for i in range(len(lines)) if not edited[0] <= i <= edited[1]),
        key=lambda i: min(abs(i - edited[0]), abs(i - edited[1])),
    )
    for i in order:
        for old, replacement in changes:
            found = re.search(r"\s*".join(re.escape(t) for t in old), lines[i])
            if found is None:
                continue
            low, high = offsets[i] + found.start(), offsets[i] + found.end()
            rng = {"start": _offset_position(text, low), "end": _offset_position(text, high)}
            return text, [{"range": rng, "text": replacement}]
    return text, []


def _offset_position(text: str, offset: int) -> dict[str, int]:
    return _position_json(position_of(text, offset))


class NextEditClient(ServeClient):
    """`difill serve` over stdio with one ``nextEdit`` setting, driven as an editor drives it."""

    def __init__(self) -> None:
        super().__init__("difill-next-edit-eval", (*UNREAD, types.PROGRESS))

    async def start(self, model_dir: str | None, mode: str, python: str = sys.executable) -> None:
        await self.start_serve(serve_args(model_dir), types.InitializeParams(
            capabilities=types.ClientCapabilities(), process_id=None,
            initialization_options={"nextEdit": mode, "workspaceIndex": False},
        ), python)  # fmt: skip
        await asyncio.wait_for(self.ready.wait(), 300)

    async def ask(
        self, name: str, case: Case
    ) -> tuple[str, list[dict[str, Any]], float, int, tuple[int, int]]:
        """Open the file as it was, type the first hunk as an editor sends it (keystrokes(), words
        in two halves), ask after each step but the last as a client does after its debounce, then
        ask at the end; (the text after the hunk, the edits answered at the end, that round trip in
        ms, the number of whole-token steps whose ask answered anything, (mid-word asks, those
        answered))."""
        uri, language = document(case, name)
        item = types.TextDocumentItem(uri=uri, language_id=language, version=1, text=case.before)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
        text, version, interim, half = case.before, 1, 0, [0, 0]
        start, end, new = case.edit
        final = case.before[:start] + new + case.before[end:]
        steps = keystrokes(case.before, case.edit, mid_word=True)
        for i, (start, end, new) in enumerate(steps):
            rng = types.Range(start=position_of(text, start), end=position_of(text, end))
            version += 1
            self.client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangePartial(range=rng, text=new)],
            ))  # fmt: skip
            text = text[:start] + new + text[end:]
            if i < len(steps) - 1:  # a half-made edit: the right answer is none
                cursor = start + len(new)
                edits, _ = await self._request(uri, version, text, cursor)
                if mid_word(final, cursor):
                    half = [half[0] + 1, half[1] + bool(edits)]
                else:
                    interim += bool(edits)
        start, _, new = case.edit
        if _word_end(text[: start + len(new)]):
            await asyncio.sleep(FINISHED_PAUSE_S)  # a client asks at a word's end only after a pause
        edits, ms = await self._request(uri, version, text, start + len(new))
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        return text, edits, ms, interim, (half[0], half[1])

    async def _request(
        self, uri: str, version: int, text: str, cursor: int
    ) -> tuple[list[dict[str, Any]], float]:
        params = {
            "textDocument": {"uri": uri, "version": version},
            "position": _position_json(position_of(text, cursor)),
            "context": {"triggerKind": 2},  # automatic: after an edit, as clients ask
        }
        started = time.perf_counter()
        answer = await self.client.protocol.send_request_async(METHOD, params)
        return _plain(answer).get("edits", []), (time.perf_counter() - started) * 1000


def _word_end(before_cursor: str) -> bool:
    """The cursor is right after a word character (the clients' atWordEnd / mid_word)."""
    return bool(before_cursor) and (before_cursor[-1].isalnum() or before_cursor[-1] == "_")


def _position_json(position: types.Position) -> dict[str, int]:
    return {"line": position.line, "character": position.character}


def _plain(value: Any) -> Any:
    """pygls hands a custom method's result over as namedtuples, nested ones included."""
    if hasattr(value, "_asdict"):
        value = value._asdict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value if value is not None else {}


def document(case: Case, name: str) -> tuple[str, str]:
    """The URI and language id an editor gives the case's file: its own extension's (a Go case is
    opened as Go), in a folder of no workspace."""
    suffix = PurePosixPath(case.path).suffix or ".py"
    return f"file:///next_edit_eval/{name}{suffix}", language_for_path(case.path) or "python"


async def run_row(name: str, mode: str, cases: list[Case], model_dir: str | None) -> Row:
    client = NextEditClient()
    await client.start(model_dir, mode)
    row = Row(name, mode)
    try:
        await client.ask("warm_up", cases[0])  # first-call setup, not scored
        for i, case in enumerate(cases):
            text, edits, ms, interim, half = await client.ask(f"case_{i}", case)
            row.outcomes.append(score(case, text, edits, ms, interim, half))
    finally:
        await client.stop()
    return row


def copy_rule_row(cases: list[Case]) -> Row:
    """The no-model rule, in process, scored as the rows are (no intermediate asks: it is not
    served)."""
    row = Row("copy rule (no model, not served)", "-")
    for case in cases:
        started = time.perf_counter()
        text, edits = copy_rule(case)
        row.outcomes.append(score(case, text, edits, (time.perf_counter() - started) * 1000))
    return row


def evaluate(cases: list[Case], model_dir: str | None, rows=ROWS) -> list[dict[str, Any]]:
    served = [asyncio.run(run_row(name, mode, cases, model_dir)).summary() for name, mode in rows]
    return [copy_rule_row(cases).summary(), *served]


def main(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in (getattr(args, "next_edit_cases", None) or str(DEFAULT_CASES)).split(",")]
    cases = [case for path in paths for case in read_cases(path)]
    counts = Counter(c.kind for c in cases)
    print(f"{len(cases)} cases from {', '.join(map(str, paths))}: {dict(counts)}", file=sys.stderr)
    started = time.time()
    wanted = (getattr(args, "next_edit_rows", None) or ",".join(m for _, m in ROWS)).split(",")
    unknown = set(wanted) - {m for _, m in ROWS}
    if unknown:
        raise SystemExit(f"--next-edit-rows: unknown {sorted(unknown)}; the rows are drafts, model, on")
    summaries = evaluate(cases, args.model, tuple(r for r in ROWS if r[1] in wanted))
    if not args.json:  # the rows first: the gate's table takes one more model pass
        from lab.next_edit_tables import format_rows

        print(format_rows(summaries), flush=True)
    from lab.next_edit_gate import format_gate, gate_report

    # In process: what the model wrote before the gate (only when a model row ran).
    gate = gate_report(cases, args.model) if "model" in wanted or "on" in wanted else {}
    if args.json:
        report = {
            "rows": summaries,
            "gate": gate,
            "cases": dict(counts),
            "seconds": round(time.time() - started, 1),
        }
        print(json.dumps(report, indent=1))
    elif gate:
        print("\nThe gate (model alone, in process):\n" + format_gate(gate))
    return 0

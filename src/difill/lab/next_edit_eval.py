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
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from difill.lab.bench_server import position_of
from difill.lab.bench_timing import percentile
from difill.lab.next_edit_mining import Case, read_cases

METHOD = "textDocument/copilotInlineEdit"
DEFAULT_CASES = Path(__file__).resolve().parents[3] / "benchmarks" / "next_edit" / "cases.jsonl"
ROWS = (("drafts alone", "drafts"), ("model alone", "model"), ("as served", "on"))
KINDS = ("repeat", "follow", "none")


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


def score(case: Case, text: str, edits: list[dict[str, Any]], ms: float) -> Outcome:
    """``edits`` (the server's answer for ``text``, the file after the first hunk) against ``case``."""
    results = []
    for edit in edits:
        start, end = edit["range"]["start"], edit["range"]["end"]
        low = offset_of(text, start["line"], start["character"])
        high = offset_of(text, end["line"], end["character"])
        results.append(text[:low] + edit["text"] + text[high:])
    if case.kind == "none":
        return Outcome(case.kind, bool(results), not results, not results, 0.0, ms)
    first = results[0] if results else text
    f1 = line_f1(changed_lines(text, first), changed_lines(text, case.expected)) if results else 0.0
    exact_any = any(r == case.expected for r in results)
    return Outcome(case.kind, bool(results), first == case.expected and bool(results), exact_any, f1, ms)


@dataclass
class Row:
    name: str
    mode: str
    outcomes: list[Outcome] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"row": self.name, "nextEdit": self.mode}
        for kind in KINDS:
            of = [o for o in self.outcomes if o.kind == kind]
            n = max(1, len(of))
            if kind == "none":
                out["none"] = {"cases": len(of), "noise": round(sum(o.answered for o in of) / n, 4)}
            else:
                out[kind] = {
                    "cases": len(of),
                    "exact": round(sum(o.exact for o in of) / n, 4),
                    "exact_any": round(sum(o.exact_any for o in of) / n, 4),
                    "line_f1": round(sum(o.f1 for o in of) / n, 4),
                    "answered": round(sum(o.answered for o in of) / n, 4),
                }
        ms = [o.ms for o in self.outcomes]
        out["p50_ms"], out["p95_ms"] = round(percentile(ms, 50), 1), round(percentile(ms, 95), 1)
        return out


class NextEditClient:
    """`difill serve` over stdio with one ``nextEdit`` setting, driven as an editor drives it."""

    def __init__(self) -> None:
        self.client = LanguageClient("difill-next-edit-eval", "0")
        self.ready = asyncio.Event()

        @self.client.feature("difill/status")
        def on_status(params) -> None:
            state = params.get("state") if isinstance(params, dict) else getattr(params, "state", None)
            if state == "ready":
                self.ready.set()

        for method in (types.WINDOW_LOG_MESSAGE, types.WINDOW_WORK_DONE_PROGRESS_CREATE, types.PROGRESS):
            self.client.feature(method)(lambda params: None)

    async def start(self, model_dir: str | None, mode: str, python: str = sys.executable) -> None:
        args = ["-m", "difill", "serve"] + (["--model", model_dir] if model_dir else [])
        await self.client.start_io(python, *args)
        await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), process_id=None,
            initialization_options={"nextEdit": mode, "workspaceIndex": False},
        ))  # fmt: skip
        self.client.initialized(types.InitializedParams())
        await asyncio.wait_for(self.ready.wait(), 300)

    async def ask(self, uri: str, case: Case) -> tuple[str, list[dict[str, Any]], float]:
        """Open the file as it was, make the first hunk, ask; (the text after the hunk, the
        edits answered, the round trip in ms)."""
        item = types.TextDocumentItem(uri=uri, language_id="python", version=1, text=case.before)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
        start, end, new = case.edit
        rng = types.Range(start=position_of(case.before, start), end=position_of(case.before, end))
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(range=rng, text=new)],
        ))  # fmt: skip
        text = case.before[:start] + new + case.before[end:]
        params = {
            "textDocument": {"uri": uri, "version": 2},
            "position": _position_json(position_of(text, start + len(new))),
            "context": {"triggerKind": 2},  # automatic: after an edit, as clients ask
        }
        started = time.perf_counter()
        answer = await self.client.protocol.send_request_async(METHOD, params)
        ms = (time.perf_counter() - started) * 1000
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        return text, _plain(answer).get("edits", []), ms

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await asyncio.sleep(0.2)
        await self.client.stop()


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


async def run_row(name: str, mode: str, cases: list[Case], model_dir: str | None) -> Row:
    client = NextEditClient()
    await client.start(model_dir, mode)
    row = Row(name, mode)
    try:
        await client.ask("file:///next_edit_eval/warm_up.py", cases[0])  # first-call setup, not scored
        for i, case in enumerate(cases):
            text, edits, ms = await client.ask(f"file:///next_edit_eval/case_{i}.py", case)
            row.outcomes.append(score(case, text, edits, ms))
    finally:
        await client.stop()
    return row


def evaluate(cases: list[Case], model_dir: str | None, rows=ROWS) -> list[dict[str, Any]]:
    return [asyncio.run(run_row(name, mode, cases, model_dir)).summary() for name, mode in rows]


def format_rows(summaries: list[dict[str, Any]]) -> str:
    lines = [
        "| row | repeat exact (any of 3) | repeat line F1 | follow exact (any of 3) | follow line F1 "
        "| noise on none | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        r, f, n = s["repeat"], s["follow"], s["none"]
        lines.append(
            f"| {s['row']} (`nextEdit: {s['nextEdit']}`) | {r['exact']:.1%} ({r['exact_any']:.1%}) "
            f"| {r['line_f1']:.3f} | {f['exact']:.1%} ({f['exact_any']:.1%}) | {f['line_f1']:.3f} "
            f"| {n['noise']:.1%} | {s['p50_ms']:.0f} | {s['p95_ms']:.0f} |"
        )
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    path = Path(getattr(args, "next_edit_cases", None) or DEFAULT_CASES)
    cases = read_cases(path)
    counts = Counter(c.kind for c in cases)
    print(f"{len(cases)} cases from {path}: {dict(counts)}", file=sys.stderr)
    started = time.time()
    summaries = evaluate(cases, args.model)
    if not args.json:  # the rows first: the gate's table takes one more model pass
        print(format_rows(summaries), flush=True)
    from difill.lab.next_edit_gate import format_gate, gate_report

    gate = gate_report(cases, args.model)  # in process: what the model wrote before the gate
    if args.json:
        report = {
            "rows": summaries,
            "gate": gate,
            "cases": dict(counts),
            "seconds": round(time.time() - started, 1),
        }
        print(json.dumps(report, indent=1))
    else:
        print("\nThe gate (model alone, in process):\n" + format_gate(gate))
    return 0

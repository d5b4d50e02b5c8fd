"""The server half of `difill bench`: `difill serve` over stdio, driven as an editor drives it.

* independent cases: open the document without its middle, the prefix's last character typed
  (a didChange), ask for an inline completion (Automatic trigger, as ghost text does) and time
  the round trip;
* typing replay: held-out lines typed one character at a time (didChange + inlineCompletion per
  keystroke); a suggestion that the rest of the line starts with is accepted, as a user would, and
  the share of the line's characters accepted that way is reported;
* start to first completion, and the warm server's resident memory.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from pathlib import Path

from lsprotocol import types

from lab.bench_timing import SHAPE_GROUPS, Timing, percentile
from lab.serve_client import ServeClient, serve_args
from lab.training.examples import InfillExample

URI = "file:///bench/case.py"


def position_of(text: str, offset: int) -> types.Position:
    """LSP position (UTF-16 columns) of a character offset."""
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    column = len(text[start:offset].encode("utf-16-le")) // 2
    return types.Position(line=line, character=column)


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class BenchClient(ServeClient):
    def __init__(self) -> None:
        super().__init__("difill-bench")
        self.version = 0

    async def start(
        self, model_dir: str | None, python: str = sys.executable, engine: str | None = None,
        settings: dict | None = None,
    ) -> int:  # fmt: skip
        """``difill serve`` under ``python`` (another checkout's, for a before/after), initialized;
        ``engine``: its ``--engine`` (None: the server's default); ``settings``: its
        initializationOptions (None: the defaults)."""
        capabilities = types.ClientCapabilities(
            text_document=types.TextDocumentClientCapabilities(
                inline_completion=types.InlineCompletionClientCapabilities(),
                synchronization=types.TextDocumentSyncClientCapabilities(),
            )
        )
        params = types.InitializeParams(
            capabilities=capabilities, process_id=None, initialization_options=settings
        )
        return await self.start_serve(serve_args(model_dir, engine), params, python)

    def open(self, text: str) -> None:
        self.version += 1
        item = types.TextDocumentItem(uri=URI, language_id="python", version=self.version, text=text)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))

    def close(self) -> None:
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=URI))
        )

    def insert(self, text: str, offset: int, new: str) -> str:
        self.version += 1
        at = position_of(text, offset)
        change = types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text=new)
        doc = types.VersionedTextDocumentIdentifier(uri=URI, version=self.version)
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(text_document=doc, content_changes=[change])
        )
        return text[:offset] + new + text[offset:]

    def open_typed(self, text: str, offset: int) -> None:
        """Open ``text`` as a user who just typed the character before ``offset``: the server
        answers nothing automatic at a cursor that only moved in front of code (issue 66)."""
        if offset == 0 or text[offset - 1] == "\n":
            self.open(text)
            return
        self.open(text[: offset - 1] + text[offset:])
        self.insert(text[: offset - 1] + text[offset:], offset - 1, text[offset - 1])

    async def suggest(self, text: str, offset: int) -> tuple[str, float]:
        params = types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            position=position_of(text, offset),
            context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
        )
        started = time.perf_counter()
        result = await self.client.text_document_inline_completion_async(params)
        ms = (time.perf_counter() - started) * 1000
        items = result.items if isinstance(result, types.InlineCompletionList) else (result or [])
        text_out = items[0].insert_text if items else ""
        return (text_out if isinstance(text_out, str) else text_out.value), ms


async def _bench(model_dir: str | None, cases: dict[str, list[InfillExample]], quick: bool) -> dict:
    bench = BenchClient()
    started = time.perf_counter()
    pid = await bench.start(model_dir)
    first = next(ex for exs in cases.values() for ex in exs)
    bench.open_typed(first.prefix + first.suffix, len(first.prefix))
    await asyncio.wait_for(bench.ready.wait(), 120)
    await bench.suggest(first.prefix + first.suffix, len(first.prefix))
    start_to_first_s = time.perf_counter() - started
    bench.close()

    groups = {g: Timing() for g in SHAPE_GROUPS}
    for group, shapes in SHAPE_GROUPS.items():
        for shape in shapes:
            for ex in cases[shape]:
                text = ex.prefix + ex.suffix
                bench.open_typed(text, len(ex.prefix))
                suggestion, ms = await bench.suggest(text, len(ex.prefix))
                bench.close()
                t = groups[group]
                t.ms.append(ms)
                t.exact.append(suggestion.rstrip() == ex.middles[0].rstrip())
    report: dict = {g: t.summary() for g, t in groups.items()}
    for group in SHAPE_GROUPS:
        for key in ("forwards", "tokens_per_forward", "tokens_per_s"):
            report[group].pop(
                key, None
            )  # the server path reports latency and quality; the engine path the rest

    report["typing"] = await _typing_replay(bench, cases, lines=2 if quick else 20)
    report["start_to_first_completion_s"] = round(start_to_first_s, 2)
    report["warm_rss_mb"] = round(resident_mb(pid), 1)
    await bench.stop()
    return report


async def _typing_replay(bench: BenchClient, cases: dict[str, list[InfillExample]], lines: int) -> dict:
    """Type whole held-out lines key by key; accept a suggestion when the line continues with it."""
    rng = random.Random(5)
    pool = [ex for ex in cases["whole_line"] if 8 <= len(ex.middles[0]) <= 80]
    rng.shuffle(pool)
    latencies: list[float] = []
    typed_chars = accepted_chars = 0
    for ex in pool[:lines]:
        target = ex.middles[0]
        text = ex.prefix + ex.suffix
        bench.open(text)
        offset = len(ex.prefix)
        done = 0
        while done < len(target):
            suggestion, ms = await bench.suggest(text, offset)
            latencies.append(ms)
            rest = target[done:]
            if suggestion and rest.startswith(suggestion):
                text = bench.insert(text, offset, suggestion)  # the user presses Tab
                offset += len(suggestion)
                done += len(suggestion)
                accepted_chars += len(suggestion)
                continue
            text = bench.insert(text, offset, rest[0])  # the user types one more character
            offset += 1
            done += 1
            typed_chars += 1
        bench.close()
    total = typed_chars + accepted_chars
    return {
        "lines": min(lines, len(pool)),
        "keystrokes": len(latencies),
        "p50_ms": round(percentile(latencies, 50), 1),
        "p95_ms": round(percentile(latencies, 95), 1),
        "accepted_share": round(accepted_chars / max(1, total), 4),
    }


def bench_server(model_dir: str | None, cases: dict[str, list[InfillExample]], quick: bool = False) -> dict:
    return asyncio.run(_bench(model_dir, cases, quick))

"""Soak: many inline completion requests through one ``difill serve``, with random edits between
them, some requests superseded or cancelled, and documents closed and reopened.  Every request
must be answered, the whole run must finish in bounded time, and nothing may pile up: threads,
asyncio tasks, jobs and resident memory end where they were after the warm-up, and the p95 latency
of the last tenth of requests stays near that of the first tenth.

DIFILL_SOAK_REQUESTS sets the number of requests (CI: 300).  The full run behind
docs/reliability.md is

    OMP_NUM_THREADS=1 DIFILL_SOAK_REQUESTS=10000 .venv/bin/pytest tests/reliability/test_soak.py -s

and prints its figures on a ``SOAK FIGURES`` line.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time

from server_hooks import hook_env
from stdio_client import StdioServer
from sync_reference import apply_change, line_spans, units

REQUESTS = int(os.environ.get("DIFILL_SOAK_REQUESTS", "300"))
SECONDS_PER_REQUEST = 1.0  # the bound on the whole run: generous, a hang or a slowdown still fails it
MAX_RSS_GROWTH_MB = 64
SNIPPETS = ("x", "y", " ", "(", ")", ":", "\n    ", "return ", "value", "é", "😀", "\r\n", "# note\n", "1")
START = "import os\n\n\ndef area(width, height):\n    return width * \n\n\nclass Shape:\n    pass\n"


def proc_status(pid: int) -> dict[str, int]:
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status if ":" in line)
    return {"rss_mb": int(fields["VmRSS"].split()[0]) // 1024, "threads": int(fields["Threads"])}


class Editor:
    """The client's side of a few open documents, edited at random like someone typing."""

    def __init__(self, server: StdioServer, rng: random.Random) -> None:
        self.server, self.rng = server, rng
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.opened = 0
        for _ in range(3):
            self.open()

    def open(self) -> str:
        self.opened += 1
        uri = f"file:///tmp/soak/file{self.opened}.py"
        self.texts[uri], self.versions[uri] = START, 1
        self.server.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": START}},
        )
        return uri

    def close(self, uri: str) -> None:
        self.server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        del self.texts[uri], self.versions[uri]

    def cursor(self, uri: str) -> dict:
        spans = line_spans(self.texts[uri])
        line = self.rng.randrange(len(spans))
        start, end = spans[line]
        index = self.rng.randint(0, end - start)
        return {"line": line, "character": units(self.texts[uri][start : start + index], "utf-16")}

    def edit(self, uri: str) -> None:
        text = self.texts[uri]
        if len(text) > 4000:  # keep documents editor-sized: start over
            change = {"text": START}
        elif self.rng.random() < 0.7:
            at = self.cursor(uri)
            change = {"range": {"start": at, "end": at}, "text": self.rng.choice(SNIPPETS)}
        else:
            a, b = sorted([self.cursor(uri), self.cursor(uri)], key=lambda p: (p["line"], p["character"]))
            change = {"range": {"start": a, "end": b}, "text": ""}
        self.texts[uri] = apply_change(text, change, "utf-16")
        self.versions[uri] += 1
        self.server.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": self.versions[uri]}, "contentChanges": [change]},
        )


def completion(uri: str, position: dict, invoked: bool) -> dict:
    return {
        "textDocument": {"uri": uri},
        "position": position,
        "context": {"triggerKind": 1 if invoked else 2},
    }


def test_soak_answers_every_request_and_leaves_nothing_behind(tiny_model_dir, tmp_path):
    rng = random.Random(9)
    server = StdioServer(
        tiny_model_dir, tmp_path / "stderr.txt", env=hook_env(tmp_path / "hooks.jsonl", inspect="1")
    )
    try:
        server.initialize()
        assert server.wait_ready()["params"]["state"] == "ready"
        editor = Editor(server, rng)
        latencies: list[float] = []
        kinds = {"answered": 0, "superseded": 0, "cancelled": 0, "errors": 0, "reopened": 0}
        warm_up = max(20, REQUESTS // 10)
        baseline = None
        rss_curve: list[int] = []
        started = time.monotonic()
        deadline = started + 60 + REQUESTS * SECONDS_PER_REQUEST
        for i in range(REQUESTS):
            assert time.monotonic() < deadline, f"the soak ran out of time after {i} requests"
            if i == warm_up:
                baseline = {**proc_status(server.proc.pid), **inspect(server)}
            if i % max(1, REQUESTS // 10) == 0:  # the memory curve: a leak climbs, a cache levels off
                rss_curve.append(proc_status(server.proc.pid)["rss_mb"])
            uri = rng.choice(list(editor.texts))
            for _ in range(rng.choice((0, 1, 1, 2, 3))):
                editor.edit(uri)
            roll = rng.random()
            if roll < 0.05:  # a request superseded by the next one on the same document
                first = server.send_request(
                    "textDocument/inlineCompletion", completion(uri, editor.cursor(uri), False)
                )
                second = server.request(
                    "textDocument/inlineCompletion", completion(uri, editor.cursor(uri), False)
                )
                assert "result" in server.response_to(first) and "result" in second
                kinds["superseded"] += 1
            elif roll < 0.08:  # a request the editor cancels
                msg_id = server.send_request(
                    "textDocument/inlineCompletion", completion(uri, editor.cursor(uri), True)
                )
                server.notify("$/cancelRequest", {"id": msg_id})
                answer = server.response_to(msg_id)  # answered: a result, or RequestCancelled
                assert "result" in answer or answer["error"]["code"] == -32800, answer
                kinds["cancelled"] += 1
            else:
                sent = time.perf_counter()
                answer = server.request(
                    "textDocument/inlineCompletion", completion(uri, editor.cursor(uri), roll < 0.3)
                )
                latencies.append(time.perf_counter() - sent)
                kinds["errors" if "error" in answer else "answered"] += 1
            if rng.random() < 0.01:  # close a document and open another
                editor.close(uri)
                editor.open()
                kinds["reopened"] += 1
        elapsed = time.monotonic() - started

        time.sleep(0.5)  # let the last cancelled fills reach their next denoising step
        end = {**proc_status(server.proc.pid), **inspect(server)}
        for uri, text in editor.texts.items():  # and the documents never drifted from the editor's
            assert server.request("difillTest/inspect", {"uri": uri})["result"]["text"] == text
        tenth = max(1, len(latencies) // 10)
        figures = {
            "requests": REQUESTS,
            **kinds,
            "seconds": round(elapsed, 1),
            "rss_mb_after_warm_up": baseline["rss_mb"],
            "rss_mb_end": end["rss_mb"],
            "rss_mb_every_tenth": rss_curve + [end["rss_mb"]],
            "threads_after_warm_up": baseline["threads"],
            "threads_end": end["threads"],
            "tasks_after_warm_up": baseline["tasks"],
            "tasks_end": end["tasks"],
            "jobs_end": end["jobs"],
            "request_futures_after_warm_up": baseline["requestFutures"],
            "request_futures_end": end["requestFutures"],
            "p95_ms_first_tenth": round(p95(latencies[:tenth]) * 1000, 1),
            "p95_ms_last_tenth": round(p95(latencies[-tenth:]) * 1000, 1),
            "median_ms": round(statistics.median(latencies) * 1000, 1),
        }
        print(f"\nSOAK FIGURES {json.dumps(figures)}")

        assert kinds["errors"] == 0
        assert end["threads"] == baseline["threads"] and end["threadNames"] == baseline["threadNames"]
        assert end["tasks"] <= baseline["tasks"]
        assert end["spawned"] == end["commandTasks"] == end["jobs"] == 0
        assert end["requestFutures"] <= baseline["requestFutures"]  # pygls kept one per didChange
        assert end["documents"] == len(editor.texts)
        assert end["rss_mb"] - baseline["rss_mb"] < MAX_RSS_GROWTH_MB, figures
        # The end is not slower than the start (beyond the noise of a shared machine).
        assert figures["p95_ms_last_tenth"] < 3 * figures["p95_ms_first_tenth"] + 50, figures
    finally:
        assert server.close() == 0, server.stderr_text()[-3000:]


def inspect(server: StdioServer) -> dict:
    return server.request("difillTest/inspect", {}, timeout=10)["result"]


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]

"""`difill bench --team`: what the team path costs on the wire, per keystroke.

One line of a real file (the stdlib's textwrap) is typed back keystroke by keystroke, and each
keystroke asks for ghost text through the server's own suggestion path (``ServedModel``) on a
``RemoteBackend``, against three servers on loopback:

* ``serve-http``: ``difill serve-http``'s app on the model (``--model``, default the shipped one);
* ``vllm-seeded``: the fake vLLM 0.33.0 (lab/fake_vllm.py, the release's rules): the seeded canvas,
  as vLLM 0.32 or later (released) serves it;
* ``vllm-plain``: the fake vLLM from before 0.32, which ignores the seed: the chat prompt.

It counts the round trips and the JSON bytes each keystroke sends and receives (bodies only: HTTP
headers add about 200 bytes a request), and the first fill's setup separately (protocol, model
name, tokenizing the suffix window).  The fakes do no model work, so their milliseconds are the
client's and the wire's; serve-http's include the model on this machine.  The latency model adds
what a network costs: ``round trips x RTT + bytes / bandwidth`` at the RTT and bandwidth given.
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import textwrap
from collections.abc import Callable

import httpx2 as httpx

from difill.engine.backends import RemoteBackend, RemoteConfig, connect
from difill.server.suggestion_path import ServedModel
from lab.fake_vllm import FakeVllm, serve_in_thread

RTT_MS = 20.0  # a laptop to a team GPU box over a VPN
MBIT_S = 20.0  # the slower direction of that link


def typed_document() -> tuple[str, int, str]:
    """(document without the typed line's text, where it goes, the text typed back)."""
    source = inspect.getsource(textwrap)
    lines = source.splitlines(keepends=True)
    index = next(i for i in range(len(lines) // 2, len(lines)) if len(lines[i].strip()) > 30)
    line = lines[index]
    indent = len(line) - len(line.lstrip())
    typed = line.strip()
    before = "".join(lines[:index]) + line[:indent]
    return before + "\n" + "".join(lines[index + 1 :]), len(before), typed


def count_requests(remote: RemoteBackend) -> list[tuple[str, int, int]]:
    """(path, bytes sent, bytes received) of every request ``remote`` makes from now on."""
    log: list[tuple[str, int, int]] = []
    fetch = remote.transport._fetch  # noqa: SLF001 - measuring the wire, not changing it

    async def counted(method: str, path: str, body: dict | None):
        answer = await fetch(method, path, body)
        sent = len(httpx.Request(method, "http://x" + path, json=body).content) if body is not None else 0
        log.append((path, sent, len(answer.content)))
        return answer

    remote.transport._fetch = counted  # noqa: SLF001
    return log


def replay(remote: RemoteBackend, keystrokes: int | None = None) -> dict:
    """Type the line back through ``remote``; the per-keystroke figures after the first fill."""
    document, offset, typed = typed_document()
    served = ServedModel(remote)
    log = count_requests(remote)
    served.suggest(document, offset, "file:///textwrap.py")  # setup: protocol, model, suffix tokens
    setup = list(log)
    rounds, sent, received, ms = [], [], [], []
    for i in range(1, min(len(typed), keystrokes or len(typed)) + 1):
        text = document[:offset] + typed[:i] + document[offset:]
        before = len(log)
        shown = served.suggest(text, offset + i, "file:///textwrap.py")
        ms.append(shown.ms)
        rounds.append(len(log) - before)
        sent.append(sum(s for _, s, _ in log[before:]))
        received.append(sum(r for _, _, r in log[before:]))
    up, down = statistics.fmean(sent), statistics.fmean(received)
    trips = statistics.fmean(rounds)
    return {
        "keystrokes": len(ms),
        "setup_round_trips": len(setup),
        "setup_paths": [p for p, _, _ in setup],
        "round_trips_per_keystroke": round(trips, 2),
        "bytes_sent_per_keystroke": round(up),
        "bytes_received_per_keystroke": round(down),
        "p50_ms_loopback": round(statistics.median(ms), 1),
        "network_ms_per_keystroke": round(trips * RTT_MS + (up + down) * 8 / (MBIT_S * 1000), 1),
    }


def with_server(start: Callable[[], tuple[str, Callable[[], None]]], make: Callable[[str], RemoteBackend], n):
    url, stop = start()
    remote = make(url)
    try:
        return replay(remote, n)
    finally:
        remote.close()
        stop()


def team_bench(model_dir: str | None, keystrokes: int | None = None) -> dict:
    from difill.engine.backends import local_backend
    from difill.server.serve_http import FillService, build_app
    from difill.server.serve_http import serve_in_thread as serve_app

    report = {"rtt_ms": RTT_MS, "mbit_s": MBIT_S}
    backend = local_backend(model_dir, "cpu")
    report["serve-http"] = with_server(
        lambda: serve_app(build_app(FillService(backend, "bench", "cpu", 2), None)),
        lambda url: connect(RemoteConfig(url)),
        keystrokes,
    )
    for name, contract in (("vllm-seeded", True), ("vllm-plain", False)):
        report[name] = with_server(
            lambda contract=contract: serve_in_thread(FakeVllm(contract=contract, numbered=True)),
            lambda url: connect(RemoteConfig(url, canvas="auto")),
            keystrokes,
        )
    return report


def format_team(report: dict) -> str:
    paths = ("serve-http", "vllm-seeded", "vllm-plain")
    rows = [
        ("round trips per keystroke", "round_trips_per_keystroke"),
        ("bytes sent per keystroke", "bytes_sent_per_keystroke"),
        ("bytes received per keystroke", "bytes_received_per_keystroke"),
        ("p50 ms on loopback", "p50_ms_loopback"),
        (
            f"network ms at {report['rtt_ms']:g} ms RTT, {report['mbit_s']:g} Mbit/s",
            "network_ms_per_keystroke",
        ),
        ("first fill's setup round trips", "setup_round_trips"),
    ]
    lines = ["| per keystroke | " + " | ".join(paths) + " |", "|---" * (len(paths) + 1) + "|"]
    for label, key in rows:
        lines.append(f"| {label} | " + " | ".join(str(report[p][key]) for p in paths) + " |")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    report = team_bench(args.model, 8 if args.quick else None)
    print(json.dumps(report, indent=1) if args.json else format_team(report))
    return 0

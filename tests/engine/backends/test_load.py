"""A bounded load test of difill serve-http on loopback: 32 clients x 20 requests, tiny model.

Prints p50/p95 latency and the decoder passes the server ran against the passes the same requests
need one by one (each fill reports its own; batching shares them).  Reproduce the figures in
docs/remote.md with:  .venv/bin/pytest tests/engine/backends/test_load.py -s -q
"""

from __future__ import annotations

import statistics
import threading
import time

import httpx2 as httpx
from backend_helpers import SERVER_KEY

from difill.engine.api import FillOptions
from difill.engine.backends import RemoteConfig, connect

CLIENTS = 32
REQUESTS_PER_CLIENT = 20
SNIPPETS = [
    ("def add(a, b):\n    return", "\n\nprint(add(1, 2))\n"),
    ("import os\n\nfor name in os.listdir('.'):\n    ", "\n"),
    ("class Point:\n    def __init__(self, x, y):\n        self.x = x\n        ", "\n"),
    ("values = [1, 2, 3]\ntotal = sum(", ")\nprint(total)\n"),
]


def batching(url: str) -> dict:
    return httpx.get(url + "/health", headers={"Authorization": f"Bearer {SERVER_KEY}"}).json()["batching"]


def fill_options(i: int) -> FillOptions:
    return FillOptions(seed=i, max_hole_tokens=8, hole_candidates=(8,))


def one_client_baseline(url: str, count: int = 32) -> tuple[float, float]:
    """(fills per second, p50 latency) of one client asking one request at a time."""
    remote = connect(RemoteConfig(url, protocol="difill", api_key=SERVER_KEY, timeout_s=60))
    latencies = []
    started = time.perf_counter()
    for i in range(count):
        prefix, suffix = SNIPPETS[i % len(SNIPPETS)]
        t0 = time.perf_counter()
        remote.fill(prefix * (1 + i % 3), suffix, fill_options(i))
        latencies.append(time.perf_counter() - t0)
    remote.close()
    return count / (time.perf_counter() - started), statistics.median(latencies)


def test_32_clients_x_20_requests_share_decoder_passes(served):
    alone_rate, alone_p50 = one_client_baseline(served)
    before = batching(served)
    latencies: list[float] = []
    needed_one_by_one: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def client(index: int) -> None:
        remote = connect(RemoteConfig(served, protocol="difill", api_key=SERVER_KEY, timeout_s=60))
        try:
            for i in range(REQUESTS_PER_CLIENT):
                prefix, suffix = SNIPPETS[(index + i) % len(SNIPPETS)]
                started = time.perf_counter()
                result = remote.fill(prefix * (1 + index % 3), suffix, fill_options(i))
                with lock:
                    latencies.append(time.perf_counter() - started)
                    needed_one_by_one.append(result.stats.decoder_forwards)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)
        finally:
            remote.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    wall = time.perf_counter() - started
    after = batching(served)

    assert not errors, errors[:3]
    assert len(latencies) == CLIENTS * REQUESTS_PER_CLIENT
    passes = after["forwards"] - before["forwards"]
    one_by_one = sum(needed_one_by_one)
    assert after["calls"] - before["calls"] == one_by_one  # every pass a fill asked for was run
    quantiles = statistics.quantiles(latencies, n=20)
    p50, p95 = statistics.median(latencies), quantiles[18]
    print(
        f"\nload: {CLIENTS} clients x {REQUESTS_PER_CLIENT} requests in {wall:.1f} s "
        f"({len(latencies) / wall:.0f} fills/s); latency p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms; "
        f"decoder passes {passes} batched vs {one_by_one} one by one ({one_by_one / passes:.1f}x fewer), "
        f"largest batch {after['largest_batch']} fills; one client alone: {alone_rate:.1f} fills/s, "
        f"p50 {alone_p50 * 1000:.0f} ms"
    )
    assert passes < one_by_one / 2
    assert wall < 60

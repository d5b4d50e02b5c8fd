"""Round-trip latency of single-line inline completions through ``difill serve`` (stdio).

    .venv/bin/python tests/server/latency.py [--model DIR] [--requests N] [--threads T]

Without --model it builds the tiny test model in a temporary directory.  Each request is at a
new mid-line position (so the suggestion cache never answers), Automatic trigger, like ghost
text while typing.  Prints the median and 90th percentile in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

from lsp_helpers import inline_params, insert_change, open_document, running_server  # noqa: E402


async def measure(model: str, requests: int) -> list[float]:
    uri = "file:///latency/case.py"
    async with running_server(model, "visual_studio_code") as client:
        open_document(client, uri, "def total(values):\n    result = 0\n    return result + \n")
        times = []
        line, column, version = 2, 20, 1
        for i in range(requests + 1):
            text = f"v{i} + "  # a new prefix each time: no cache hit
            version += 1
            client.text_document_did_change(insert_change(uri, version, line, column, text))
            column += len(text)
            started = time.perf_counter()
            result = await client.text_document_inline_completion_async(
                inline_params(uri, line, column, invoked=False)
            )
            if i:  # the first request warms the prefix cache and allocator
                times.append((time.perf_counter() - started) * 1000)
            assert result is not None
        return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS for the server")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import lsp_helpers

    lsp_helpers.SERVER_ENV["OMP_NUM_THREADS"] = str(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            from conftest import build_tiny_model

            model = str(build_tiny_model(Path(tmp) / "tiny"))
        times = asyncio.run(measure(model, args.requests))
    times.sort()
    p90 = times[int(0.9 * (len(times) - 1))]
    print(
        f"{len(times)} single-line inline completions: median {statistics.median(times):.1f} ms, p90 {p90:.1f} ms"
    )


if __name__ == "__main__":
    main()

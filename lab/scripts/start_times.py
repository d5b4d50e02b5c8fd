"""Figures for docs/install.md: how fast difill starts and what the server weighs, per engine.

    PYTHONPATH=src OMP_NUM_THREADS=1 .venv/bin/python -m lab.scripts.start_times [--runs 3] [--engines torch,llamacpp,remote]

For each figure the best of ``--runs`` (the machine is shared: the best run is the one least
disturbed).  ``difill --version`` and ``difill fill examples/demo.py:28:21 --raw`` are wall times
of the command as a user types it; ``difill serve`` is driven over stdio as an editor drives it:
``initialize`` answered, the model ready (``difill/status``), the first ghost text answered, and
then the server's resident memory (VmRSS, the server process alone; its children, the llama.cpp
worker and jedi's process, separately).  ``remote`` serves against the fake vLLM
(lab/fake_vllm.py) in this process.  "imports torch" reads the server's own ``-X importtime``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "reliability"))

from stdio_client import StdioServer  # noqa: E402

from lab.fake_vllm import FakeVllm, serve_in_thread  # noqa: E402

DEMO = ROOT / "examples" / "demo.py"
CLI = [sys.executable, "-m", "difill"]


def wall(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - started


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def children_rss_mb(pid: int) -> float:
    out = subprocess.run(["ps", "--ppid", str(pid), "-o", "pid="], capture_output=True, text=True).stdout
    return sum(rss_mb(int(child)) for child in out.split())


def serve_once(engine: str, url: str | None, folder: Path) -> dict[str, float | bool]:
    """One `difill serve`: seconds to initialize's answer, to ready, to the first ghost text; MB."""
    options = {"remote": url} if url else {"engine": engine}
    env = {"PYTHONPROFILEIMPORTTIME": "1", "DIFILL_API_KEY": ""}
    stderr = folder / f"stderr-{engine}.txt"
    started = time.perf_counter()
    server = StdioServer(None, stderr, env=env)
    try:
        server.initialize(options=options, root_uri=folder.as_uri())
        initialized = time.perf_counter() - started
        state = server.wait_ready(120)["params"]["state"]
        ready = time.perf_counter() - started
        assert state == "ready", server.stderr_text()[-2000:]
        uri = (folder / "demo.py").as_uri()
        text = DEMO.read_text()
        server.notify("textDocument/didOpen", {
            "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})  # fmt: skip
        asked = time.perf_counter()
        answer = server.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": 27, "character": 20},
            "context": {"triggerKind": 1}}, timeout=60)  # fmt: skip
        first = time.perf_counter() - asked
        assert "error" not in answer, answer
        figures = {
            "initialize_s": initialized, "ready_s": ready, "first_s": first,
            "rss_mb": rss_mb(server.proc.pid), "children_mb": children_rss_mb(server.proc.pid),
        }  # fmt: skip
    finally:
        server.close()
    imported = {line.rsplit("|", 1)[-1].strip() for line in stderr.read_text().splitlines() if "|" in line}
    return figures | {"torch": "torch" in imported, "transformers": "transformers" in imported}


def best(rows: list[dict]) -> dict:
    return {
        key: (min(r[key] for r in rows) if isinstance(rows[0][key], float) else rows[0][key])
        for key in rows[0]
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engines", default="torch,llamacpp,remote")
    args = parser.parse_args()
    engines = args.engines.split(",")
    version = min(wall([*CLI, "--version"]) for _ in range(args.runs))
    print(f"difill --version: {version:.2f} s")
    for engine in (e for e in engines if e != "remote"):
        fill = min(
            wall([*CLI, "fill", "examples/demo.py:28:21", "--raw", "--engine", engine])
            for _ in range(args.runs)
        )
        print(f"difill fill examples/demo.py:28:21 --raw --engine {engine}: {fill:.2f} s")
    fake = FakeVllm(canvas_length=256)
    url, stop = serve_in_thread(fake)
    try:
        for engine in engines:
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                (folder / "demo.py").write_text(DEMO.read_text())
                rows = [
                    serve_once(engine, url if engine == "remote" else None, folder) for _ in range(args.runs)
                ]
            b = best(rows)
            print(
                f"difill serve, {engine}: initialize {b['initialize_s']:.2f} s, ready {b['ready_s']:.2f} s, "
                f"first ghost text {b['first_s'] * 1000:.0f} ms, RSS {b['rss_mb']:.0f} MB "
                f"(children {b['children_mb']:.0f} MB), imports torch: {b['torch']}, transformers: {b['transformers']}"
            )
    finally:
        stop()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()

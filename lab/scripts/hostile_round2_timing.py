"""Time two of issue 28's event-loop probes, before and after: the completion fallback's typed word
at the end of a 30 KB literal, and a remote answer of 40,000 candidates.

Run: .venv/bin/python -m lab.scripts.hostile_round2_timing   (docs/reliability.md quotes the figures.)
"""

from __future__ import annotations

import http.server
import json
import re
import threading
import time

from difill.engine.api import BackendError, Candidate
from difill.engine.backends import RemoteConfig, connect
from difill.server.features.suggestions.completion import typed_word
from difill.text.context import build_context
from difill.text.pipeline import shown_texts
from difill.text.syntax import parser_for


def completion_word() -> None:
    line = 'KEY = "' + "deadbeef" * 3750 + '"'  # the cursor after a 30 KB hex literal
    started = time.perf_counter()
    re.compile(r"\w*$").search(line)  # what the fallback ran over the whole line before
    before = time.perf_counter() - started
    started = time.perf_counter()
    typed_word(line)
    after = time.perf_counter() - started
    print(
        f"typed word after a 30 KB literal: whole-line regex {before:.2f} s, bounded tail {after * 1000:.3f} ms"
    )


def many_candidates() -> None:
    texts = [f"x + {i}" for i in range(40_000)]
    text = "def f(x):\n    return \n"
    tree = parser_for("python").parse(text.encode())
    ctx = build_context(text, text.index("return ") + 7, "python", 1024, 32, tree)
    started = time.perf_counter()
    shown_texts([Candidate(t, 8, -i / 1e5, True) for i, t in enumerate(texts)], ctx)
    print(f"shown_texts over 40,000 candidates (16 looked at): {time.perf_counter() - started:.3f} s")

    candidates = [{"text": t, "hole_length": 8, "score": -0.1, "complete": True} for t in texts]
    body = json.dumps({"text": texts[0], "candidates": candidates, "stats": {}}).encode()

    class Handle(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802 - the stdlib's name
            self._send(b'{"server": "difill"}')

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._send(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    backend = connect(RemoteConfig(f"http://127.0.0.1:{server.server_address[1]}", retries=0))
    started = time.perf_counter()
    try:
        backend.fill("def f(x):\n    return ", "\n")
    except BackendError as err:
        print(f"remote answer of {len(body) / 1e6:.1f} MB, 40,000 candidates: refused in "
              f"{time.perf_counter() - started:.2f} s, off the event loop ({str(err)[:90]}...)")  # fmt: skip
    backend.close()
    server.shutdown()


if __name__ == "__main__":
    completion_word()
    many_candidates()

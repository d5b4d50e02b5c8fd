"""A fake vLLM serving DiffusionGemma: the remote backend's tests and ``difill bench --team`` use it.

``FakeVllm(contract=True)`` validates ``vllm_xargs`` as vLLM pull request #57250's request code
does (each rule below names the one it mirrors) and answers a seeded request with one denoised
canvas per sample, every pinned slot unchanged.  ``contract=False`` is released vLLM as difill sees
it: every ``vllm_xargs`` key is refused with 400.  Both refuse ``suffix`` (400) and answer the chat
fill-in-the-middle prompt, as vLLM does.

Its tokenizer is one id per character (``ord``, below 256); ids from 256 up are special tokens that
detokenize to nothing (PAD is the one the fake writes after a middle).  Its "model" writes
``middles`` into the runs of free (unpinned) slots: run k of sample s gets middle ``(k + s)``.

``fault`` makes it misbehave on seeded requests: ``wrong_length``, ``change_pins``, ``out_of_vocab``,
``hang`` (answers after ``hang_s``), ``flaky`` (HTTP 500 on every third completion).  ``numbered``
appends the completion's number to each middle, so that no two answers are alike (as while typing).
It does no model work: it measures what the client and the wire cost.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable
from typing import Any

MODEL = "RedHatAI/diffusiongemma-26B-A4B-it-NVFP4"
VOCAB = 262_144  # DiffusionGemma's (Gemma 3's), the RemoteConfig default
PAD = 256
MAX_SAMPLES = 32
KNOWN_XARGS = {
    "diffusion_seed_canvas", "diffusion_pinned", "diffusion_canvas_length", "diffusion_max_steps",
    "diffusion_samples", "diffusion_read_only",
}  # fmt: skip


def tokenize(text: str) -> list[int]:
    return [ord(c) if ord(c) < PAD else ord("?") for c in text]


def detokenize(ids: list[int]) -> str:
    return "".join(chr(i) for i in ids if i < PAD)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class FakeVllm:
    def __init__(
        self,
        contract: bool = True,
        canvas_length: int = 64,
        async_scheduling: bool = True,
        middles: tuple[str, ...] = ("a + b",),
        chat_answer: str = "chat(a, b)",
        fault: str | None = None,
        hang_s: float = 3.0,
        numbered: bool = False,
    ) -> None:
        self.contract = contract
        self.canvas_length = canvas_length  # --diffusion-config canvas_length
        self.async_scheduling = async_scheduling
        self.middles = middles
        self.chat_answer = chat_answer
        self.fault = fault
        self.hang_s = hang_s
        self.numbered = numbered
        self.requests: list[tuple[str, Any]] = []
        self.completions = 0
        self._lock = threading.Lock()

    def paths(self, since: int = 0) -> list[str]:
        return [path for path, _ in self.requests[since:]]

    def seeded_bodies(self) -> list[dict]:
        return [b for p, b in self.requests if p == "/v1/completions" and "vllm_xargs" in b]

    # ------------------------------------------------------------------ the handler

    def __call__(self, request) -> None:
        raw = read_body(request)
        body = json.loads(raw) if raw else None
        with self._lock:
            self.requests.append((request.path, body))
        if request.path == "/health":
            send(request, 200, b"")
        elif request.path == "/v1/models":
            self._json(request, 200, {"object": "list", "data": [{"id": MODEL, "max_model_len": 8192}]})
        elif request.path == "/tokenize":
            tokens = tokenize(body["prompt"])
            self._json(request, 200, {"tokens": tokens, "count": len(tokens), "max_model_len": 8192})
        elif request.path == "/detokenize":
            self._json(request, 200, {"prompt": detokenize(body["tokens"])})
        elif request.path == "/v1/completions":
            self._completion(request, body)
        elif request.path == "/v1/chat/completions":
            message = {"role": "assistant", "content": self.chat_answer}
            self._json(request, 200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
        else:
            self._json(request, 404, {"detail": "Not Found"})

    def _completion(self, request, body: dict) -> None:
        with self._lock:
            self.completions += 1
            number = self.completions
        if "suffix" in body:
            return self._error(request, "suffix is not currently supported")
        xargs = body.get("vllm_xargs")
        if xargs is None:
            return self._json(
                request, 200, {"choices": [{"index": 0, "text": "plain", "finish_reason": "stop"}]}
            )
        if not self.contract:
            return self._error(request, f"Unknown vllm_xargs key(s): {', '.join(sorted(xargs))}")
        problem = self.validate(xargs)
        if problem:
            return self._error(request, problem)
        if self.fault == "flaky" and number % 3 == 0:
            return self._json(request, 500, {"object": "error", "message": "EngineCore died", "code": 500})
        if self.fault == "hang":
            time.sleep(self.hang_s)
        seed, pinned = xargs["diffusion_seed_canvas"], set(xargs.get("diffusion_pinned", []))
        choices = []
        for sample in range(xargs.get("diffusion_samples", 1)):
            canvas = self.denoise(seed, pinned, sample, number if self.numbered else None)
            choices.append(
                {"index": sample, "text": detokenize(canvas), "token_ids": canvas, "finish_reason": "length"}
            )
        self._json(request, 200, {"choices": choices, "usage": {"completion_tokens": len(seed)}})

    # ------------------------------------------------------------------ #57250's rules

    def validate(self, xargs: dict) -> str | None:
        """The first rule ``xargs`` breaks, in #57250's words, or None."""
        unknown = sorted(set(xargs) - KNOWN_XARGS)
        if unknown:
            return f"unknown diffusion argument(s): {', '.join(unknown)}"
        length = self.canvas_length
        if "diffusion_canvas_length" in xargs:  # a positive int no larger than the served canvas
            value = xargs["diffusion_canvas_length"]
            if not is_int(value) or not 0 < value <= self.canvas_length:
                return f"diffusion_canvas_length must be an int in [1, {self.canvas_length}]"
            if value < self.canvas_length and not self.async_scheduling:
                return "diffusion_canvas_length smaller than canvas_length requires --async-scheduling"
            length = value
        seed = xargs.get("diffusion_seed_canvas")
        if seed is not None:  # exactly canvas-length ids, each in [0, vocab)
            if not isinstance(seed, list) or len(seed) != length:
                return f"diffusion_seed_canvas must hold exactly {length} token ids"
            if not all(is_int(t) and 0 <= t < VOCAB for t in seed):
                return f"diffusion_seed_canvas ids must be in [0, {VOCAB})"
        pinned = xargs.get("diffusion_pinned")
        if pinned is not None:  # in-canvas positions; needs a seed canvas
            if seed is None:
                return "diffusion_pinned requires diffusion_seed_canvas"
            if not isinstance(pinned, list) or not all(is_int(p) and 0 <= p < length for p in pinned):
                return f"diffusion_pinned must be positions in [0, {length})"
        steps = xargs.get("diffusion_max_steps")
        if steps is not None and not (is_int(steps) and steps > 0):
            return "diffusion_max_steps must be an int > 0"
        samples = xargs.get("diffusion_samples")
        if samples is not None:  # at most 32, needs both a seed canvas and pins
            if not is_int(samples) or not 0 < samples <= MAX_SAMPLES:
                return f"diffusion_samples must be an int in [1, {MAX_SAMPLES}]"
            if seed is None or pinned is None:
                return "diffusion_samples requires diffusion_seed_canvas and diffusion_pinned"
        read_only = xargs.get("diffusion_read_only")
        if read_only is not None and not isinstance(read_only, bool):
            return "diffusion_read_only must be a bool"
        if seed is None:
            return "this fake only answers seeded canvases"
        return None

    def denoise(self, seed: list[int], pinned: set[int], sample: int, number: int | None = None) -> list[int]:
        """Pinned slots as seeded; run k of free slots holds middle (k + sample), then PAD."""
        canvas = list(seed)
        run, at = -1, 0
        for i in range(len(canvas)):
            if i in pinned:
                continue
            if i == 0 or (i - 1) in pinned:
                run, at = run + 1, 0
            middle = tokenize(
                self.middles[(run + sample) % len(self.middles)] + (str(number) if number else "")
            )
            canvas[i] = middle[at] if at < len(middle) else PAD
            at += 1
        if self.fault == "wrong_length":
            canvas = canvas[:-1]
        elif self.fault == "change_pins" and pinned:
            first = min(pinned)
            canvas[first] = (canvas[first] + 1) % PAD
        elif self.fault == "out_of_vocab":
            canvas[0] = VOCAB + 7
        return canvas

    # ------------------------------------------------------------------ answers

    def _json(self, request, status: int, payload: Any) -> None:
        try:
            send(request, status, json.dumps(payload).encode())
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (hang): nobody to answer
            pass

    def _error(self, request, message: str) -> None:
        self._json(
            request, 400, {"object": "error", "message": message, "type": "BadRequestError", "code": 400}
        )


def send(request: http.server.BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    request.send_response(status)
    request.send_header("Content-Type", "application/json")
    request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    request.wfile.write(body)


def read_body(request: http.server.BaseHTTPRequestHandler) -> bytes:
    return request.rfile.read(int(request.headers.get("Content-Length") or 0))


def serve_in_thread(
    handler: Callable[[http.server.BaseHTTPRequestHandler], None],
) -> tuple[str, Callable[[], None]]:
    """``handler`` behind a loopback HTTP server in a daemon thread: (its URL, stop)."""

    class Handle(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            handler(self)

        do_POST = do_GET  # noqa: N815

        def log_message(self, *args):  # quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return f"http://127.0.0.1:{server.server_address[1]}", stop

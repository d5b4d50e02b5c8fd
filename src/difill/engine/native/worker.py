"""The client of ``difill-llama-worker`` (engine/native/worker.cpp): a child process, binary frames
over its stdin and stdout.

The worker runs llama.cpp's DiffusionGemma forwards out of the language server's process, so a
native crash costs one fill, not the server: a dead or silent worker fails the call in progress
with ``WorkerError`` (what happened, and its last stderr lines), and the next call starts a fresh
one.  A call that gets no answer within ``timeout_s`` kills the worker.
"""

from __future__ import annotations

import os
import select
import struct
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from difill.engine.api import BackendError


def tag(name: str) -> int:
    return struct.unpack("<I", name.encode())[0]


READY, FAIL, FILL, STEP, LOGITS, ERROR, QUIT = (
    tag(n) for n in ("REDY", "FAIL", "FILL", "STEP", "LOGI", "ERRO", "QUIT")
)
OPEN, NO_FILLER = 1, 2  # STEP slot flags


class WorkerError(BackendError):
    """The worker died, hung, or refused a request; the message says which and how to fix it."""


class WorkerDied(WorkerError):
    """The worker process ended (crashed, killed) while a request was on its way or answered."""


@dataclass(frozen=True)
class WorkerSettings:
    binary: Path
    gguf: Path
    threads: int = 2
    context: int = 2304  # prompt + canvas tokens one pass may hold
    ubatch: int = 512  # prompt tokens prefilled per chunk, canvas slots per pass (a wider canvas goes alone)
    gpu_layers: int = 0
    flash_attn: bool = False
    timeout_s: float = 60.0  # a call unanswered this long is a hung worker

    def command(self) -> list[str]:
        cmd = [str(self.binary), str(self.gguf), "--threads", str(self.threads), "--ctx", str(self.context)]
        cmd += ["--ubatch", str(self.ubatch), "--gpu-layers", str(self.gpu_layers)]
        return cmd + (["--flash-attn"] if self.flash_attn else [])


@dataclass(frozen=True)
class WorkerInfo:
    vocab_size: int
    context: int
    hidden_size: int
    layers: int
    canvas_length: int


@dataclass(frozen=True)
class FillRules:
    """What the worker applies to every open slot's logits (and to the self-conditioning signal)."""

    vocab_limit: int  # ids at or past it are never proposed
    banned: tuple[int, ...] = ()
    filler_id: int = -1  # -1: none
    heal_slot: int = -1  # the canvas column limited to ``allowed``; -1: none
    allowed: tuple[int, ...] = ()


@dataclass
class StepLogits:
    values: np.ndarray  # (N_open, W) float32: full logits (W = vocab) or the top-k values
    ids: np.ndarray | None  # (N_open, k) int32 ids of the top-k values; None for full logits


class LlamaWorker:
    """One worker process, started on first use and restarted after a failure.  Thread-safe."""

    def __init__(self, settings: WorkerSettings) -> None:
        self.settings = settings
        self.info: WorkerInfo | None = None
        self.starts = 0  # worker processes started
        self._proc: subprocess.Popen | None = None
        self._stderr: deque[str] = deque(maxlen=20)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ calls

    def start(self) -> WorkerInfo:
        with self._lock:
            return self._ensure_started()

    def fill(self, prompt: list[int], rules: FillRules) -> tuple[int, int]:
        """Cache ``prompt``'s K,V (only past the common prefix with the last one) and set the
        fill's rules; -> (reused tokens, encoded tokens)."""
        payload = struct.pack(f"<i{len(prompt)}i", len(prompt), *prompt)
        payload += struct.pack("<iii", rules.vocab_limit, rules.filler_id, rules.heal_slot)
        payload += struct.pack(f"<i{len(rules.banned)}i", len(rules.banned), *rules.banned)
        payload += struct.pack(f"<i{len(rules.allowed)}i", len(rules.allowed), *rules.allowed)
        body = self._call(FILL, payload, FILL)
        reused, encoded = struct.unpack("<ii", body)
        return reused, encoded

    def step(
        self, canvas: np.ndarray, flags: np.ndarray, use_sc: bool, temp_inv: float, top_k: int = 0
    ) -> StepLogits:
        """canvas (B, C) ids, flags (B, C) OPEN | NO_FILLER -> the open slots' logits, row-major."""
        rows, length = canvas.shape
        header = struct.pack("<iiifi", rows, length, int(use_sc), temp_inv, top_k)
        payload = header + canvas.astype("<i4").tobytes() + flags.astype(np.uint8).tobytes()
        body = self._call(STEP, payload, LOGITS, restart=False)
        n_open, width = struct.unpack_from("<ii", body)
        if top_k == 0:
            values = np.frombuffer(body, dtype="<f4", offset=8, count=n_open * width).reshape(n_open, width)
            return StepLogits(values, None)
        ids = np.frombuffer(body, dtype="<i4", offset=8, count=n_open * width).reshape(n_open, width)
        values = np.frombuffer(body, dtype="<f4", offset=8 + 4 * n_open * width).reshape(n_open, width)
        return StepLogits(values, ids)

    def close(self) -> None:
        with self._lock:
            self._stop(QUIT)

    @property
    def restarts(self) -> int:
        """Workers started after the first: each replaced one that died, hung or was refused."""
        return max(0, self.starts - 1)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    # ------------------------------------------------------------------ process

    def _ensure_started(self) -> WorkerInfo:
        if self._proc is not None and self._proc.poll() is None and self.info is not None:
            return self.info
        self._stop(None)
        binary, gguf = self.settings.binary, self.settings.gguf
        if not binary.is_file():
            raise WorkerError(
                f"the llama.cpp worker {binary} is missing: build it with `difill build-native` "
                "(docs/llamacpp.md), or choose another engine (--engine torch)"
            )
        if not gguf.is_file():
            raise WorkerError(
                f"the GGUF {gguf} is missing: write one with `difill export-gguf MODEL_DIR {gguf}` "
                "(docs/llamacpp.md)"
            )
        self._stderr.clear()
        self._proc = subprocess.Popen(
            self.settings.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, bufsize=0, env={**os.environ, "LLAMA_LOG_COLORS": "0"},
        )  # fmt: skip
        threading.Thread(target=self._drain_stderr, args=(self._proc,), daemon=True).start()
        self.starts += 1
        kind, body = self._read_frame(self.settings.timeout_s)
        if kind == FAIL:
            words = self._last_words()  # llama.cpp's own reason, from its log
            self._stop(None)
            raise WorkerError(
                f"the llama.cpp worker refused {gguf}: {body.decode(errors='replace')} ({words})"
            )
        if kind != READY:
            self._stop(None)
            raise WorkerError("the llama.cpp worker did not start: " + self._last_words())
        self.info = WorkerInfo(*struct.unpack("<5i", body))
        return self.info

    def _call(self, kind: int, payload: bytes, expect: int, restart: bool = True) -> bytes:
        """One request and its answer.  ``restart``: a dead worker is replaced first (a FILL
        starts a fill); else it fails the call (a STEP belongs to a fill the dead worker held)."""
        with self._lock:
            if not restart and self._proc is None:
                raise WorkerError("no fill in progress on the llama.cpp worker: a STEP follows a FILL")
            if not restart and self._proc.poll() is not None:
                code = self._proc.returncode
                words = self._last_words()
                self._stop(None)
                raise WorkerError(
                    f"the llama.cpp worker died during this fill (exit code {code}): {words}; "
                    "the next request starts a new one"
                )
            was_running = self._proc is not None and self._proc.poll() is None
            self._ensure_started()
            try:
                return self._exchange(kind, payload, expect)
            except WorkerDied:
                # It died before this request reached it (killed while idle): a FILL starts a
                # fill, so a fresh worker can take it without losing anything.
                if not (restart and was_running):
                    raise
                self._ensure_started()
                return self._exchange(kind, payload, expect)

    def _exchange(self, kind: int, payload: bytes, expect: int) -> bytes:
        proc = self._proc
        try:
            proc.stdin.write(struct.pack("<II", kind, len(payload)) + payload)
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            words = self._last_words()
            self._stop(None)
            raise WorkerDied(
                f"the llama.cpp worker died: {words}; the next request starts a new one"
            ) from None
        answer, body = self._read_frame(self.settings.timeout_s)
        if answer == ERROR:
            raise WorkerError(f"the llama.cpp worker refused the request: {body.decode(errors='replace')}")
        if answer != expect:
            raise WorkerError(f"the llama.cpp worker sent an unexpected frame {answer:#x}")
        return body

    def _read_frame(self, timeout_s: float) -> tuple[int, bytes]:
        head = self._read_exact(8, timeout_s)
        kind, size = struct.unpack("<II", head)
        return kind, self._read_exact(size, timeout_s)

    def _read_exact(self, size: int, timeout_s: float) -> bytes:
        """Read ``size`` bytes of stdout; a dead worker, or none within the timeout, raises."""
        proc = self._proc
        fd = proc.stdout.fileno()
        chunks, have = [], 0
        deadline = time.monotonic() + timeout_s
        while have < size:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, left))
            if not ready:
                self._stop(None)
                raise WorkerError(
                    f"the llama.cpp worker gave no answer in {timeout_s:.0f} s and was stopped; "
                    "the next request starts a new one"
                )
            chunk = os.read(fd, min(size - have, 1 << 20))
            if not chunk:
                code = proc.wait(timeout=5)
                words = self._last_words()
                self._stop(None)
                raise WorkerDied(
                    f"the llama.cpp worker died (exit code {code}): {words}; the next request starts a new one"
                )
            chunks.append(chunk)
            have += len(chunk)
        return b"".join(chunks)

    def _stop(self, farewell: int | None) -> None:
        proc, self._proc, self.info = self._proc, None, None
        if proc is None:
            return
        if farewell is not None and proc.poll() is None:
            try:
                proc.stdin.write(struct.pack("<II", farewell, 0))
                proc.stdin.flush()
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def _drain_stderr(self, proc: subprocess.Popen) -> None:
        for line in iter(proc.stderr.readline, b""):
            self._stderr.append(line.decode(errors="replace").rstrip())

    def _last_words(self) -> str:
        time.sleep(0.05)  # let the stderr thread catch the last lines
        lines = [line for line in self._stderr if line.strip()]
        return f"its last log lines: {' | '.join(lines[-3:])}" if lines else "it wrote nothing on stderr"

"""Dynamic batching: fills that run at the same time share their decoder passes.

A fill spends most of its time in decoder passes over a handful of short canvases, so when several
clients ask at once the cheapest way to serve them is one pass over all their canvases.  Each fill
still runs the engine's own code in its own thread - the same canvases, the same sampler, the same
seeded generator - and only its ``CanvasDecoder.hidden`` calls (the decoder layers) go to
``DecoderBatcher``.  The batcher collects the calls that arrive within a few milliseconds (bounded
in rows), pads their prefix caches and canvases to one length, runs the layers once with an
attention mask that hides the padding and per-row positions equal to each fill's own, and hands
every fill its rows back.  The LM head, softmax and acceptance stay in the fill's thread, on its
open slots only.  A fill's result is therefore the one it gets alone up to float rounding, and a
batch of one is the fill's own call, bit for bit.

``BatchingBackend`` is the InfillBackend for many concurrent callers (what ``serve-http`` runs): a
pool of engines that share one model, each with its own prefix cache and lock, whose decoders
are ``BatchedCanvasDecoder``s.
"""

from __future__ import annotations

import copy
import queue
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from difill.engine.api import DEFAULT_HOLE_MARKER, About, FillResult, HolesResult
from difill.engine.decoder import (
    CanvasDecoder,
    attention_mask,
    conditioned_inputs,
    crossing_top_k_on,
    decoder_layers,
)
from difill.engine.infill import InfillEngine, about_checkpoint
from difill.engine.model import LoadedModel
from difill.engine.prefix_cache import expand_cache


@dataclass
class BatcherStats:
    forwards: int = 0  # decoder passes run
    calls: int = 0  # decoder passes the fills asked for: what they would run one by one
    rows: int = 0  # canvases over all passes
    largest_batch: int = 0  # most fills served by one pass


@dataclass(eq=False)  # compared and hashed by identity: the batcher tracks the calls it owes
class _Call:
    decoder: BatchedCanvasDecoder  # holds the fill's cache: per layer (B_i, heads, K_i, head_dim)
    canvas: torch.Tensor  # (B_i, L_i)
    soft: torch.Tensor | None  # (B_i, L_i, D) self-conditioning input, None before the first pass
    done: Future


class BatcherError(RuntimeError):
    """The batcher cannot answer a decoder call: it is closed, it failed to gather a batch, or no
    pass answered in time."""


class DecoderBatcher:
    """One thread that runs the decoder layers for every fill, one batch of calls per pass.

    Every call gets an answer: its rows, the error its pass raised, or a ``BatcherError`` when the
    batcher closes, fails to gather a batch, or lets it wait longer than ``wait_timeout_s``.
    """

    def __init__(
        self, model: Any, window_ms: float = 5.0, max_rows: int = 64, wait_timeout_s: float = 300.0
    ) -> None:
        self.model = model
        self.window_s = window_ms / 1000
        self.max_rows = max_rows
        self.wait_timeout_s = wait_timeout_s  # far above any pass: reaching it means the batcher is stuck
        self.stats = BatcherStats()
        self._pending: queue.Queue[_Call | None] = queue.Queue()
        self._carry: list[_Call] = []  # calls left over when a batch reached max_rows
        self._denoising: set[int] = set()  # fills that made a call and have not finished
        self._owed: set[_Call] = set()  # calls handed in and not answered yet
        self._closed = False
        self._guard = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="difill-batcher", daemon=True)
        self._thread.start()

    def hidden(self, call: _Call) -> torch.Tensor:
        """Called from a fill's thread: its hidden states (B_i, L_i, D) once its batch has run."""
        with self._guard:
            if self._closed:
                raise BatcherError("the decoder batcher is closed")
            self._denoising.add(id(call.decoder.owner))
            self._owed.add(call)
            self._pending.put(call)
        try:
            return call.done.result(timeout=self.wait_timeout_s)
        except FutureTimeout:
            self._answer(
                call, error=BatcherError(f"no decoder pass answered within {self.wait_timeout_s:g} s")
            )
            return call.done.result(timeout=0)  # the pass's rows if they came in meanwhile

    def finished(self, owner: object) -> None:
        """The fill run by ``owner`` ended: stop waiting for its next call."""
        with self._guard:
            self._denoising.discard(id(owner))

    def close(self) -> None:
        """Serve the calls already handed in, then stop; later calls fail at once."""
        with self._guard:
            if self._closed:
                return
            self._closed = True
        self._pending.put(None)

    def _answer(self, call: _Call, rows: torch.Tensor | None = None, error: Exception | None = None) -> None:
        """Resolve ``call`` once: the first answer wins (a pass may finish after its caller timed out)."""
        with self._guard:  # set under the lock: a caller that timed out then reads a settled future
            if call not in self._owed:
                return
            self._owed.discard(call)
            if error is not None:
                call.done.set_exception(error)
            else:
                call.done.set_result(rows)

    def _is_owed(self, call: _Call) -> bool:
        with self._guard:
            return call in self._owed

    def _fail_owed(self, error: Exception) -> None:
        with self._guard:
            owed = list(self._owed)
        for call in owed:
            self._answer(call, error=error)

    def _run(self) -> None:
        while True:
            try:
                batch = self._gather()
            except Exception as err:  # noqa: BLE001 - a call it took would otherwise wait forever
                self._carry = []
                self._fail_owed(BatcherError(f"the decoder batcher failed to gather a batch: {err!r}"))
                continue
            if batch is None:
                break
            try:
                with torch.inference_mode():
                    hidden = self._pass(batch)
            except Exception as err:  # noqa: BLE001 - every waiting fill must hear of it
                for call in batch:
                    self._answer(call, error=err)
                continue
            for call, rows in zip(batch, hidden, strict=True):
                self._answer(call, rows)
        self._fail_owed(BatcherError("the decoder batcher is closed"))

    def _gather(self) -> list[_Call] | None:
        """The next batch: the first waiting call, then those of every other fill that is still
        denoising, for at most the window, so that fills in step keep sharing passes."""
        batch = [call for call in self._carry if self._is_owed(call)]  # not those that timed out
        self._carry = []
        while not batch:
            first = self._pending.get()
            if first is None:
                return None
            if self._is_owed(first):
                batch = [first]
        deadline = time.monotonic() + self.window_s
        while sum(c.canvas.shape[0] for c in batch) < self.max_rows:
            with self._guard:
                waiting_for = len(self._denoising)
            if len({id(c.decoder.owner) for c in batch}) >= waiting_for:
                break
            try:
                call = self._pending.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if call is None:
                self._pending.put(None)  # close once this batch is served
                break
            if self._is_owed(call):
                batch.append(call)
        rows = 0
        for i, call in enumerate(batch):
            rows += call.canvas.shape[0]
            if rows > self.max_rows and i > 0:
                batch, self._carry = batch[:i], batch[i:]
                break
        return batch

    def _pass(self, batch: list[_Call]) -> list[torch.Tensor]:
        stats = self.stats
        stats.forwards += 1
        stats.calls += len(batch)
        stats.rows += sum(c.canvas.shape[0] for c in batch)
        stats.largest_batch = max(stats.largest_batch, len(batch))
        if len(batch) == 1:
            call = batch[0]
            return [CanvasDecoder.hidden(call.decoder, call.canvas, call.soft)]
        return padded_hidden(self.model, batch)


def padded_hidden(model: Any, batch: list[_Call]) -> list[torch.Tensor]:
    """``CanvasDecoder.hidden`` for several fills in one pass; each fill gets its (B_i, L_i, D).

    Prefix caches are left-padded and canvases right-padded to one length; the mask over
    [prefix keys | canvas] hides both paddings, and each row keeps the positions it has alone
    (its own prefix length onwards), so a row sees exactly what it would see alone.
    """
    dec = model.model.decoder
    device = batch[0].canvas.device
    rows = sum(c.canvas.shape[0] for c in batch)
    length = max(c.canvas.shape[1] for c in batch)
    canvas = torch.zeros(rows, length, dtype=torch.long, device=device)  # (N, L)
    canvas_real = torch.zeros(rows, length, dtype=torch.bool, device=device)  # (N, L)
    positions = torch.zeros(rows, length, dtype=torch.long, device=device)  # (N, L)
    row = 0
    spans = []
    for call in batch:
        n, width = call.canvas.shape
        canvas[row : row + n, :width] = call.canvas
        canvas_real[row : row + n, :width] = True
        positions[row : row + n] = call.decoder.prefix_length + torch.arange(length, device=device)
        spans.append((row, n, width))
        row += n
    hidden = conditioned_inputs(dec, canvas, _padded_soft(batch, spans, length))  # (N, L, D)

    cache, key_real = _padded_cache(batch)
    layer_types = dec.text_config.layer_types
    masks = {}
    for kind in set(layer_types):
        allowed = torch.cat([key_real[layer_types.index(kind)], canvas_real], dim=1)  # (N, K + L)
        allowed = allowed[:, None, None, :].expand(rows, 1, length, allowed.shape[1])  # (N, 1, L, K + L)
        masks[kind] = attention_mask(dec, allowed, hidden.dtype)
    hidden = decoder_layers(dec, hidden, positions, masks, cache)  # (N, L, D)
    return [hidden[start : start + n, :width] for start, n, width in spans]


def _padded_soft(batch: list[_Call], spans: list[tuple[int, int, int]], length: int) -> torch.Tensor | None:
    """Every call's self-conditioning input in one (N, L, D) tensor, zeros where a call has none
    yet (as alone); None when no call has any."""
    given = [call.soft for call in batch if call.soft is not None]
    if not given:
        return None
    rows = sum(n for _, n, _ in spans)
    soft = given[0].new_zeros(rows, length, given[0].shape[-1])  # (N, L, D)
    for call, (start, n, width) in zip(batch, spans, strict=True):
        if call.soft is not None:
            soft[start : start + n, :width] = call.soft
    return soft


def _padded_cache(batch: list[_Call]) -> tuple[Any, dict[int, torch.Tensor]]:
    """One cache for all rows, each fill's keys left-padded to the longest; and per layer (N, K)
    True where a key is real.  Layers of one kind (sliding, full) hold the same keys per fill."""
    first = batch[0].decoder.cache
    device = batch[0].canvas.device
    cache = copy.copy(first)
    cache.layers = []
    key_real: dict[int, torch.Tensor] = {}
    for index, template in enumerate(first.layers):
        widest = max(c.decoder.cache.layers[index].keys.shape[2] for c in batch)
        keys, values, real = [], [], []
        for call in batch:
            layer = call.decoder.cache.layers[index]
            k, v = layer.keys, layer.values  # (B_i, H, K_i, D)
            missing = widest - k.shape[2]
            keys.append(F.pad(k, (0, 0, missing, 0)))
            values.append(F.pad(v, (0, 0, missing, 0)))
            real.append((torch.arange(widest, device=device) >= missing).expand(k.shape[0], widest))
        layer = copy.copy(template)
        layer.keys, layer.values = torch.cat(keys), torch.cat(values)  # (N, H, K, D)
        key_real[index] = torch.cat(real)  # (N, K)
        cache.layers.append(layer)
    return cache, key_real


class BatchedCanvasDecoder(CanvasDecoder):
    """A fill's CanvasDecoder whose decoder layers run in the batcher's shared passes."""

    def __init__(self, model: Any, cache: Any, batcher: DecoderBatcher, owner: object, top_k: int = 0) -> None:
        super().__init__(model, cache, top_k)
        self.batcher = batcher
        self.owner = owner  # the pooled engine running the fill

    def hidden(self, canvas: torch.Tensor, soft_embeddings: torch.Tensor | None) -> torch.Tensor:
        return self.batcher.hidden(_Call(self, canvas, soft_embeddings, Future()))


class _PooledEngine(InfillEngine):
    """An InfillEngine (own prefix cache and lock) whose decoder passes are batched."""

    def __init__(self, loaded: LoadedModel, batcher: DecoderBatcher) -> None:
        super().__init__(loaded)
        self.batcher = batcher

    def _decoder(self, cache, request, config) -> CanvasDecoder:
        batch_cache = expand_cache(cache, request.canvas.shape[0])
        top_k = crossing_top_k_on(self.model, self.ids.vocab_size)
        return BatchedCanvasDecoder(self.model, batch_cache, self.batcher, self, top_k)


class BatchingBackend:
    """An InfillBackend for many concurrent callers on one model; at most ``max_concurrent`` fills
    run at once (each on a pooled engine), the others wait their turn."""

    def __init__(
        self, loaded: LoadedModel, max_concurrent: int = 32, window_ms: float = 5.0, max_rows: int = 64
    ) -> None:
        self.loaded = loaded
        self.batcher = DecoderBatcher(loaded.model, window_ms=window_ms, max_rows=max_rows)
        self._slots = threading.BoundedSemaphore(max_concurrent)
        self._idle: list[_PooledEngine] = []  # most recently used last: its prefix cache is warmest
        self._idle_lock = threading.Lock()

    def about(self) -> About:
        return about_checkpoint("torch", self.loaded)

    @property
    def stats(self) -> BatcherStats:
        return self.batcher.stats

    @contextmanager
    def _engine(self) -> Iterator[_PooledEngine]:
        with self._slots:
            with self._idle_lock:
                engine = self._idle.pop() if self._idle else _PooledEngine(self.loaded, self.batcher)
            try:
                yield engine
            finally:
                self.batcher.finished(engine)
                with self._idle_lock:
                    self._idle.append(engine)

    def fill(self, prefix, suffix, options=None, should_stop=None, on_preview=None) -> FillResult:
        with self._engine() as engine:
            return engine.fill(prefix, suffix, options, should_stop, on_preview)

    def fill_holes(self, text, marker=DEFAULT_HOLE_MARKER, options=None, should_stop=None) -> HolesResult:
        with self._engine() as engine:
            return engine.fill_holes(text, marker, options, should_stop)

    def rewrite(self, request, options=None, should_stop=None, on_preview=None) -> FillResult:
        with self._engine() as engine:
            return engine.rewrite(request, options, should_stop, on_preview)

    def score_names(self, prefix, suffix, names, options=None) -> list[float]:
        with self._engine() as engine:
            return engine.score_names(prefix, suffix, names, options)

    def close(self) -> None:
        self.batcher.close()

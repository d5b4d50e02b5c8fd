"""The llama.cpp engine: difill's InfillEngine with its forwards in ``difill-llama-worker``.

Everything but the forward is the torch engine's own code - canvases, holes, drafts, rewrite,
the sampler, cancellation - so the two engines differ only where the model runs:

* ``WorkerPrefix`` stands in for the prefix cache: the worker keeps the prompt's K,V and
  prefills only what changed since the last fill (engine/native/worker.cpp);
* ``WorkerCanvasPass`` stands in for ``CanvasDecoder``: each pass sends the canvases' ids and
  which slots are open, and gets back the open slots' logits.  Self-conditioning stays in the
  worker, computed per slot exactly as ``CanvasDecoder.soft_embeddings`` does, so only ids cross
  the pipe one way and only the open slots' logits (or their top-k) the other.

The checkpoint directory still gives the tokenizer, the sampler settings and difill's metadata;
its weights are not loaded (``load_checkpoint_meta``).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from difill.engine.api import ModelLoadError
from difill.engine.infill import InfillEngine
from difill.engine.model import DEFAULT_MODEL_DIR, LoadedModel, load_checkpoint_meta
from difill.engine.native.build import cache_dir
from difill.engine.native.worker import NO_FILLER, OPEN, FillRules, LlamaWorker, WorkerError, WorkerSettings
from difill.engine.sampler import DenoiseRequest
from difill.engine.sampler_config import SamplerConfig, crossing_top_k, temperature_at

if TYPE_CHECKING:
    from difill.engine.backends import EngineChoice


@dataclass(frozen=True)
class PrefixEncoded:
    cache: list[int]  # the prompt ids the worker now holds
    reused_tokens: int
    encoded_tokens: int


class WorkerPrefix:
    """The prefix cache's interface over the worker's prompt store."""

    def __init__(self, worker: LlamaWorker, vocab_limit: int) -> None:
        self.worker, self.vocab_limit = worker, vocab_limit

    def encode(self, token_ids: list[int]) -> PrefixEncoded:
        if not token_ids:
            raise ValueError("a prefix needs at least one token (the engine adds bos or a newline)")
        reused, encoded = self.worker.fill(token_ids, FillRules(self.vocab_limit))
        return PrefixEncoded(list(token_ids), reused, encoded)

    def clear(self) -> None:
        """Nothing to free here: the worker's store is re-used or overwritten by the next prompt."""


@dataclass(frozen=True)
class WorkerSignal:
    """The self-conditioning input of the next pass: held by the worker; this says how to temper it."""

    temp_inv: float


class WorkerCanvasPass:
    """``CanvasDecoder``'s part in the sampler (open_logits, soft_embeddings) run by the worker."""

    def __init__(
        self, worker: LlamaWorker, prompt: list[int], request: DenoiseRequest, config: SamplerConfig,
        top_k: int = 0,
    ) -> None:  # fmt: skip
        heal_slot, allowed = -1, ()
        if request.slot_allowed is not None:
            heal_slot = int(request.slot_allowed[0])
            allowed = tuple(int(i) for i in np.flatnonzero(request.slot_allowed[1]))
        rules = FillRules(
            vocab_limit=request.vocab_size,
            banned=tuple(int(i) for i in request.banned_ids.tolist()),
            filler_id=-1 if request.filler_id is None else int(request.filler_id),
            heal_slot=heal_slot,
            allowed=allowed,
        )
        self.worker, self.config, self.top_k = worker, config, top_k
        info = worker.start()
        check_context(len(prompt), int(request.canvas.shape[1]), info.context)
        self.vocab = info.vocab_size
        self.worker.fill(prompt, rules)  # the same prompt: no prefill, new rules, no self-conditioning yet
        self.passes = 0

    def open_logits(
        self,
        canvas: np.ndarray,
        soft_embeddings: WorkerSignal | None,
        open_slots: tuple[np.ndarray, np.ndarray],
        no_filler: np.ndarray | None = None,
    ) -> np.ndarray:
        """canvas (B, L) -> logits (N, V) of the open slots, row-major as ``nonzero`` orders them."""
        flags = np.zeros(canvas.shape, dtype=np.uint8)  # (B, L)
        flags[open_slots] = OPEN
        if no_filler is not None:
            flags[no_filler & (flags == OPEN)] |= NO_FILLER
        use_sc = soft_embeddings is not None
        temp_inv = soft_embeddings.temp_inv if use_sc else 1.0
        answer = self.worker.step(canvas, flags, use_sc, temp_inv, self.top_k)
        self.passes += 1
        if answer.ids is None:
            return np.array(answer.values)  # (N, V), a copy the sampler may write
        # Top-k: the rest of the vocabulary gets no probability (the 26B's full rows stay in the worker).
        dense = np.full((answer.values.shape[0], self.vocab), -np.inf, dtype=np.float32)  # (N, V)
        np.put_along_axis(dense, answer.ids.astype(np.int64), answer.values, 1)
        return dense

    def soft_embeddings(self, canvas, open_slots, open_logits) -> WorkerSignal:
        """The worker keeps this pass's constrained logits; the next pass reads them at the
        temperature the sampler's signal has (engine/sampler.py ``propose``)."""
        if not self.config.tempered_self_conditioning:
            return WorkerSignal(1.0)
        return WorkerSignal(1.0 / temperature_at(self.passes - 1, self.config))


def check_context(prompt_tokens: int, canvas_length: int, context: int) -> None:
    """Refuse, before the worker sees it, a pass whose prompt and canvas exceed the worker's
    context (capped at what the model was trained for, worker.cpp): a clear error, where the
    worker's own refusal names a flag the user never set.  A WorkerError, as that refusal was:
    ghost text then answers empty and says why, as for any BackendError."""
    if prompt_tokens + canvas_length > context:
        raise WorkerError(
            f"the prompt's {prompt_tokens:,} tokens and the canvas's {canvas_length:,} slots exceed the "
            f"llama.cpp worker's context of {context:,} tokens: select less (a function or a block), "
            "or use the torch engine (engine: torch)"
        )


class LlamaCppEngine(InfillEngine):
    """An InfillBackend whose forwards run in llama.cpp; one fill at a time, like InfillEngine."""

    # The worker holds one prompt K,V store and one self-conditioning state: a fill run between two
    # steps of another (the server's urgent ghost text inside an edit) would leave the other's next
    # step on its prompt, so none is (api.runs_jobs_between_steps).
    one_fill_state = True
    engine = "llamacpp"

    def __init__(self, loaded: LoadedModel, worker: LlamaWorker, top_k: int = 0) -> None:
        super().__init__(loaded)  # tokenizer, ids, lock, ban list; its prefix cache is replaced below
        self.worker = worker
        self.top_k = top_k
        info = worker.start()
        if info.vocab_size != loaded.ids.vocab_size:
            worker.close()
            raise ModelLoadError(
                f"{worker.settings.gguf} has a vocabulary of {info.vocab_size} tokens but the checkpoint "
                f"in {loaded.path} has {loaded.ids.vocab_size}: export the GGUF from this checkpoint "
                f"(difill export-gguf {loaded.path} OUT.gguf)"
            )
        self.prefix_cache = WorkerPrefix(worker, loaded.ids.vocab_size)

    def _decoder(self, cache: list[int], request: DenoiseRequest, config: SamplerConfig) -> WorkerCanvasPass:
        return WorkerCanvasPass(self.worker, cache, request, config, self.top_k)

    def close(self) -> None:
        self.worker.close()


def shipped_gguf(model_dir: Path = DEFAULT_MODEL_DIR) -> Path:
    """The shipped model's GGUF, exported once into the cache (keyed by its weights and config).

    F32, as torch runs it on a CPU, so both engines give the same fills.  F16 (the checkpoint's
    own storage) is faster here, but ggml then rounds activations to f16 too: logits within
    4.5e-3, and one of four test fills took another token at a near-tie.  Q8_0 is faster still
    and moves logits by up to 0.5 (docs/llamacpp.md)."""
    digest = hashlib.sha256()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "generation_config.json"):
        path = model_dir / name
        if path.is_file():
            digest.update(path.read_bytes())
    out = cache_dir() / "gguf" / f"difill-default-{digest.hexdigest()[:16]}-f32.gguf"
    if not out.is_file():
        from difill.engine.native.gguf_export import export_gguf

        export_gguf(model_dir, out, "f32")
    return out


def load_llamacpp_engine(
    model_path: str | os.PathLike | None = None,
    gguf: str | os.PathLike | None = None,
    binary: str | os.PathLike | None = None,
    threads: int | None = None,
    gpu_layers: int = 0,
    top_k: int | None = None,
) -> LlamaCppEngine:
    """The llama.cpp engine for a checkpoint directory (tokenizer and settings) and its GGUF.

    The shipped model needs neither ``gguf`` (exported once into the cache) nor ``binary`` (the
    one ``difill build-native`` built).  Another checkpoint needs its GGUF.
    """
    from difill.engine.native.build import built_worker

    loaded = load_checkpoint_meta(model_path)
    if gguf is None:
        if loaded.path.resolve() != DEFAULT_MODEL_DIR.resolve():
            raise ModelLoadError(
                f"the llama.cpp engine needs a GGUF of {loaded.path}: pass --gguf FILE (setting "
                f"`ggufPath`), e.g. one written by `difill export-gguf {loaded.path} OUT.gguf` "
                "or a quantised one of the same checkpoint"
            )
        gguf = shipped_gguf(loaded.path)
    settings = WorkerSettings(
        binary=Path(binary) if binary else built_worker(),
        gguf=Path(gguf).expanduser(),
        threads=threads or max(1, (os.cpu_count() or 2) // 2),  # as torch: the editor keeps the rest
        gpu_layers=gpu_layers,
    )
    if top_k is None:  # full rows for a small vocabulary (exact); the 26B's 262k-wide rows stay home
        top_k = crossing_top_k(loaded.ids.vocab_size)
    return LlamaCppEngine(loaded, LlamaWorker(settings), top_k)


def load_engine(model: str | None, device: str, choice: EngineChoice) -> LlamaCppEngine:
    """``LOCAL_ENGINES["llamacpp"]`` (engine/names.py): llama.cpp picks its own device, the CPU or
    a GPU for ``gpu_layers`` (``device`` is torch's)."""
    return load_llamacpp_engine(
        model, choice.gguf, choice.worker, threads=choice.threads, gpu_layers=choice.gpu_layers
    )

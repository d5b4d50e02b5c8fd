"""``MlxEngine``: difill's own sampler (engine/sampler.py) with the forwards run by mlx-vlm.

The engine is ``InfillEngine`` with two parts replaced, as the llama.cpp engine does:

* ``MlxPrefix``, the prefix cache: the encoder's KV cache of the last prompt (mlx-vlm's
  ``diffusion_prefill_cache`` / ``diffusion_update_cache``), cut back with ``trim`` where every
  layer allows it (a sliding layer that has wrapped does not) and re-encoded otherwise;
* ``MlxCanvasPass``, ``CanvasDecoder``'s part in the sampler: ``open_logits`` runs mlx-vlm's
  bidirectional decoder over the canvas and applies the LM head to the open slots only;
  ``soft_embeddings`` builds the next pass's self-conditioning input as ``CanvasDecoder`` does
  (a known slot's own embedding, softmax(logits) @ E at an open one).

Everything else - canvases, pins, holes, rewrite, drafts, schedules, acceptance, cancellation - is
the torch engine's code, whose sampler runs in NumPy: the same seed gives the same noise, so the
same logits give the same fill, and this engine never imports torch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from difill.engine.infill import InfillEngine
from difill.engine.mlx.runtime import load_mlx_model, require_mlx
from difill.engine.model import LoadedModel, load_checkpoint_meta
from difill.engine.sampler import DenoiseRequest
from difill.engine.sampler_config import SamplerConfig
from difill.text.characters import common_prefix

if TYPE_CHECKING:
    from difill.engine.backends import EngineChoice


@dataclass(frozen=True)
class MlxEncoded:
    cache: list[Any]  # mlx-vlm's per-layer caches (KVCache, RotatingKVCache), batch 1
    reused_tokens: int
    encoded_tokens: int


class MlxPrefix:
    """The prefix cache's interface over mlx-vlm's encoder cache: only what changed is encoded."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.mx = require_mlx()
        self.token_ids: list[int] = []
        self.cache: list[Any] | None = None
        self.reencodes = 0  # cuts the cache could not take back (a wrapped sliding layer)

    def clear(self) -> None:
        self.token_ids, self.cache = [], None

    def encode(self, token_ids: list[int]) -> MlxEncoded:
        """A cache holding exactly ``token_ids``.  The caller must not modify it."""
        if not token_ids:
            raise ValueError("a prefix needs at least one token (the engine adds bos or a newline)")
        common = common_prefix(token_ids, self.token_ids)
        remove = len(self.token_ids) - common
        if self.cache is not None and remove and common:
            if all(layer.is_trimmable() for layer in self.cache):
                for layer in self.cache:
                    layer.trim(remove)
            else:
                self.reencodes += 1
                common = 0
        if self.cache is None or common == 0:
            self.clear()
            common = 0
            self.cache = self.model.make_cache()
        new = token_ids[common:]
        if new:
            ids = self.mx.array([new], dtype=self.mx.int32)  # (1, n)
            self.cache = self.model.diffusion_update_cache(ids, cache=self.cache)
            self.mx.eval([layer.state for layer in self.cache])
        self.token_ids = list(token_ids)
        return MlxEncoded(self.cache, common, len(new))


class CanvasView:
    """One layer's prompt keys and values as the decoder reads them, repeated for B canvases.

    mlx-vlm's decoder concatenates the cached keys with the canvas's along the sequence, which
    needs the same batch; it reads ``decoder_state`` where a cache has one (``_cache_state``)."""

    def __init__(self, mx: Any, layer: Any, batch: int) -> None:
        from mlx_vlm.models.diffusion_gemma.language import _cache_state

        keys, values = _cache_state(layer)  # (1, H, K, Dh) each, in time order
        self.keys, self.offset = keys, layer.offset  # what _cache_offset reads: the prompt length
        self.decoder_state = (
            mx.broadcast_to(keys, (batch, *keys.shape[1:])),
            mx.broadcast_to(values, (batch, *values.shape[1:])),
        )


class MlxCanvasPass:
    """``CanvasDecoder``'s part in the sampler, run by mlx-vlm's decoder."""

    def __init__(self, model: Any, cache: list[Any], batch: int) -> None:
        self.mx = require_mlx()
        self.model = model
        self.decoder = model.model.decoder
        self.embed = self.decoder.embed_tokens  # Embedding or QuantizedEmbedding (V, D)
        self.cache = [CanvasView(self.mx, layer, batch) for layer in cache]

    def open_logits(
        self,
        canvas: np.ndarray,
        soft_embeddings: Any | None,
        open_slots: tuple[np.ndarray, np.ndarray],
        no_filler: np.ndarray | None = None,  # noqa: ARG002 - the sampler masks what this returns
    ) -> np.ndarray:
        """canvas (B, L), soft_embeddings (B, L, D) mx or None -> logits (N, V) of the open slots."""
        mx = self.mx
        ids = mx.array(canvas.astype(np.int32))  # (B, L)
        hidden = self.decoder(
            ids, cache=self.cache, self_conditioning_embeddings=soft_embeddings
        )  # (B, L, D)
        rows, cols = (mx.array(s.astype(np.int32)) for s in open_slots)  # (N,), (N,)
        logits = self.model._softcap(self.embed.as_linear(hidden[rows, cols]))  # (N, V) float32
        return np.array(logits, copy=True)  # a copy the sampler may write

    def soft_embeddings(
        self, canvas: np.ndarray, open_slots: tuple[np.ndarray, np.ndarray], open_logits: np.ndarray
    ) -> Any:
        """The next pass's self-conditioning input (B, L, D): a known slot's own (scaled) embedding,
        softmax(logits) @ E at the open slots, as ``CanvasDecoder.soft_embeddings`` computes it."""
        mx = self.mx
        scale = self.decoder.embed_scale
        ids = mx.array(canvas.astype(np.int32))  # (B, L)
        soft = self.embed(ids) * scale  # (B, L, D): a lookup, also for a quantised table
        probs = mx.softmax(mx.array(open_logits.astype(np.float32)), axis=-1, precise=True)  # (N, V')
        vocab = self.embed.weight.shape[0] if not self.quantized else self.embed.scales.shape[0]
        if probs.shape[1] < vocab:  # the tokenizer's vocabulary; LM-head rows past it are padding
            probs = mx.pad(probs, [(0, 0), (0, vocab - probs.shape[1])])  # (N, V)
        rows, cols = (mx.array(s.astype(np.int32)) for s in open_slots)
        soft[rows, cols] = (self._times_table(probs) * scale).astype(soft.dtype)  # (N, D)
        return soft

    @property
    def quantized(self) -> bool:
        return hasattr(self.embed, "scales")

    def _times_table(self, probs: Any) -> Any:
        """probs (N, V) @ the embedding table (V, D) -> (N, D), dequantising on the fly if packed."""
        mx, embed = self.mx, self.embed
        if not self.quantized:
            return probs.astype(embed.weight.dtype) @ embed.weight
        return mx.quantized_matmul(
            probs.astype(embed.scales.dtype), embed.weight, embed.scales, embed.biases, transpose=False,
            group_size=embed.group_size, bits=embed.bits, mode=getattr(embed, "mode", "affine"),
        )  # fmt: skip


class MlxEngine(InfillEngine):
    """An InfillBackend whose forwards run in MLX; one fill at a time, like InfillEngine."""

    engine = "mlx"

    def __init__(self, loaded: LoadedModel, mlx_model: Any) -> None:
        super().__init__(loaded)  # tokenizer, ids, lock, ban list; its prefix cache is replaced below
        self.mlx_model = mlx_model
        self.prefix_cache = MlxPrefix(mlx_model)

    def _decoder(self, cache: list[Any], request: DenoiseRequest, config: SamplerConfig) -> MlxCanvasPass:
        return MlxCanvasPass(self.mlx_model, cache, request.canvas.shape[0])

    def close(self) -> None:
        """Nothing to stop: the weights live in this process until it drops the engine."""


def load_mlx_engine(model_path: str | os.PathLike | None = None, dtype: str = "auto") -> MlxEngine:
    """The MLX engine for a checkpoint directory: difill's own (the shipped model by default) or
    one written by ``mlx_vlm.convert`` (quantised or not).  The tokenizer and sampler settings come
    from the same directory, as for the torch engine."""
    require_mlx()
    loaded = load_checkpoint_meta(model_path)
    return MlxEngine(loaded, load_mlx_model(Path(loaded.path), dtype))


def load_engine(model: str | None, device: str, choice: EngineChoice) -> MlxEngine:
    """``LOCAL_ENGINES["mlx"]`` (engine/names.py): MLX picks its own device, Metal on a Mac, else
    the CPU; it has no options of its own."""
    return load_mlx_engine(model)

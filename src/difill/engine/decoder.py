"""One decoder pass that spends vocabulary-sized work only on the slots still being denoised.

``DiffusionGemmaForBlockDiffusion.forward`` computes logits for every canvas slot and takes the
self-conditioning signal as full (B, L, V) logits, which it softmaxes and multiplies by the
embedding matrix.  On a small model those vocabulary-sized steps dominate a denoising step, yet
clamped and committed slots need neither: their self-conditioning signal is exactly their own
embedding (one-hot logits), and their logits are never read.  This module runs the same layers
as ``DiffusionGemmaDecoderModel.forward`` (embed, self-conditioning, rotary positions after the
cached prefix, bidirectional layers, final norm) but takes soft embeddings directly and lets the
caller apply the LM head to the open slots only.  ``tests/engine/test_decoder.py`` checks that
the logits equal the stock forward's.

The functions below are the one copy of the decoder's layer loop, shared with the padded passes
of ``engine/batcher.py``; ``tests/engine/test_hf_compat.py`` pins the transformers internals they
touch, so an upgrade that moves one fails there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from transformers import DiffusionGemmaForBlockDiffusion, DynamicCache

from difill.engine.hf_compat import cache_kwargs
from difill.engine.sampler_config import crossing_top_k


def conditioned_inputs(
    decoder: Any, canvas: torch.Tensor, soft_embeddings: torch.Tensor | None
) -> torch.Tensor:
    """canvas (B, L) ids, soft_embeddings (B, L, D) or None (zeros: no self-conditioning yet) ->
    the first layer's input (B, L, D), as ``DiffusionGemmaDecoderModel.forward`` builds it."""
    inputs = decoder.embed_tokens(canvas)  # (B, L, D), already scaled
    if soft_embeddings is None:
        soft_embeddings = torch.zeros_like(inputs)
    return decoder.self_conditioning(inputs, soft_embeddings)  # (B, L, D)


def rotary_embeddings(decoder: Any, hidden: torch.Tensor, positions: torch.Tensor) -> dict[str, Any]:
    """Each layer type's rotary (cos, sin) at positions (1 or B, L), in ``hidden``'s dtype."""
    return {kind: decoder.rotary_emb(hidden, positions, kind) for kind in decoder.unique_layer_types}


def decoder_layers(
    decoder: Any,
    hidden: torch.Tensor,
    positions: torch.Tensor,
    masks: dict[str, torch.Tensor] | None,
    cache: Any,
    rotary: dict[str, Any] | None = None,
) -> torch.Tensor:
    """hidden (B, L, D) at positions (1 or B, L) -> normed hidden states (B, L, D).

    ``masks`` maps each layer type to its attention mask over [cached keys | canvas], None when
    every slot may see everything; ``rotary``: ``rotary_embeddings`` at ``positions``, when the
    caller keeps them across passes.  Rotary positions, layers and the final norm as the stock
    decoder runs them.
    """
    config = decoder.text_config
    if rotary is None:
        rotary = rotary_embeddings(decoder, hidden, positions)
    for i, layer in enumerate(decoder.layers[: config.num_hidden_layers]):
        kind = config.layer_types[i]
        hidden = layer(
            hidden,
            position_embeddings=rotary[kind],
            attention_mask=None if masks is None else masks[kind],
            position_ids=positions,
            **cache_kwargs(cache),
        )
    return decoder.norm(hidden)  # (B, L, D)


def attention_mask(decoder: Any, allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """allowed (B, 1, L, K + L) bool -> the mask the configured attention takes: sdpa takes the
    booleans, eager attention adds the mask to the scores."""
    if decoder.text_config._attn_implementation == "sdpa":
        return allowed
    return torch.where(allowed, 0.0, torch.finfo(dtype).min).to(dtype)


class CanvasDecoder:
    def __init__(self, model: DiffusionGemmaForBlockDiffusion, cache: DynamicCache, top_k: int = 0) -> None:
        """``top_k`` > 0: each open slot's logits cross to the loop as its top-k ids, the rest of
        the row -inf (sampler_config.crossing_top_k: a large vocabulary on an accelerator)."""
        self.top_k = top_k
        self.sent_ids: torch.Tensor | None = None  # (N, k) the ids the last pass sent, on the device
        self.model = model
        self.decoder = model.model.decoder
        self.cache = cache
        self.prefix_length = cache.get_seq_length()
        self.embed_scale = self.decoder.embed_tokens.embed_scale
        self._positions: tuple[tuple, torch.Tensor, dict[str, Any]] | None = None  # see ``positions``

    def positions(self, hidden: torch.Tensor) -> tuple[torch.Tensor, dict[str, Any]]:
        """The canvas's positions (1, L), after the cached prefix, and their rotary embeddings.

        Every pass of a fill has the same canvas length, so they are computed once and kept (keyed
        on what they depend on: the length, dtype, device, and the grad mode they were made in)."""
        length = hidden.shape[1]
        modes = (torch.is_inference_mode_enabled(), torch.is_grad_enabled())
        key = (length, hidden.dtype, hidden.device, modes)
        if self._positions is None or self._positions[0] != key:
            start = self.prefix_length
            positions = torch.arange(start, start + length, device=hidden.device)[None]  # (1, L)
            self._positions = (key, positions, rotary_embeddings(self.decoder, hidden, positions))
        return self._positions[1], self._positions[2]

    def hidden(self, canvas: torch.Tensor, soft_embeddings: torch.Tensor | None) -> torch.Tensor:
        """canvas (B, L) ids, soft_embeddings (B, L, D) or None -> hidden states (B, L, D)."""
        hidden = conditioned_inputs(self.decoder, canvas, soft_embeddings)  # (B, L, D)
        positions, rotary = self.positions(hidden)
        # No mask: no padding, every slot sees the whole prefix and canvas.
        return decoder_layers(self.decoder, hidden, positions, None, self.cache, rotary)  # (B, L, D)

    def open_logits(
        self,
        canvas: np.ndarray,
        soft_embeddings: torch.Tensor | None,
        open_slots: tuple[np.ndarray, np.ndarray],
        no_filler: np.ndarray | None = None,
    ) -> np.ndarray:
        """One pass -> the logits of the open slots (N, V) float32, in ``open_slots``' order.

        The sampler's side is NumPy (engine/sampler.py): ids and slots cross to the model's
        device here, and the logits come back (a view on a CPU, a copy from an accelerator).
        ``no_filler`` (B, L): slots where the sampler will ban the filler.  This pass ignores it
        (the sampler masks the logits it returns); a pass that keeps its own self-conditioning
        signal (engine/native/engine.py) needs it to mask that signal as the sampler does.
        """
        with torch.inference_mode():
            ids, slots = self.on_device(canvas), tuple(self.on_device(s) for s in open_slots)
            logits = self.pass_logits(ids, soft_embeddings, slots)  # (N, V)
            if not self.top_k:
                return logits.cpu().numpy()
            values, self.sent_ids = logits.topk(min(self.top_k, logits.shape[-1]), dim=-1)  # (N, k)
            rows = np.full(tuple(logits.shape), -np.inf, dtype=np.float32)  # (N, V)
            np.put_along_axis(rows, self.sent_ids.cpu().numpy(), values.cpu().numpy(), 1)
            return rows

    def on_device(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(array).to(self.decoder.embed_tokens.weight.device)

    def pass_logits(
        self, canvas: torch.Tensor, soft_embeddings: torch.Tensor | None, open_slots: tuple[torch.Tensor, torch.Tensor]
    ) -> torch.Tensor:
        """``open_logits`` on the device: canvas (B, L), open_slots (N,), (N,) -> (N, V)."""
        return self.logits(self.hidden(canvas, soft_embeddings)[open_slots])

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (..., D) -> soft-capped logits (..., V) in fp32, as the stock forward computes them."""
        cap = self.model.final_logit_softcapping
        return torch.tanh(self.model.lm_head(hidden).float() / cap) * cap

    def soft_embeddings(
        self, canvas: np.ndarray, open_slots: tuple[np.ndarray, np.ndarray], open_logits: np.ndarray
    ) -> torch.Tensor:
        """Self-conditioning input for the next pass (B, L, D), on the model's device.

        ``open_slots``: the (rows, cols) of the open slots; ``open_logits`` (N_open, V) in that
        order.  Open slots: softmax(logits) @ E, as the stock decoder computes it.  Every other
        slot holds a known token whose one-hot softmax picks its own embedding row, so a lookup
        is exact.
        """
        with torch.inference_mode():
            slots = tuple(self.on_device(s) for s in open_slots)
            if self.sent_ids is None:
                return self.soft_tensor(self.on_device(canvas), slots, self.on_device(open_logits))
            # Top-k rows: only the ids sent carry probability (the rest is -1e4 in ``open_logits``,
            # whose softmax is exactly 0), so only they go back, and are scattered on the device.
            sent = np.take_along_axis(open_logits, self.sent_ids.cpu().numpy(), 1)  # (N, k)
            dense = torch.full(open_logits.shape, -1e4, device=self.sent_ids.device)  # (N, V)
            dense.scatter_(1, self.sent_ids, self.on_device(sent))
            return self.soft_tensor(self.on_device(canvas), slots, dense)

    def soft_tensor(
        self,
        canvas: torch.Tensor,
        open_slots: torch.Tensor | tuple[torch.Tensor, torch.Tensor],
        open_logits: torch.Tensor,
    ) -> torch.Tensor:
        """``soft_embeddings`` on the device; ``open_slots`` may also be a (B, L) mask."""
        weight = self.decoder.embed_tokens.weight  # (V, D)
        soft = weight[canvas] * self.embed_scale.to(weight.dtype)  # (B, L, D)
        probs = open_logits.softmax(dim=-1, dtype=torch.float32).to(weight.dtype)  # (N_open, V)
        soft[open_slots] = (probs @ weight) * self.embed_scale.to(weight.dtype)  # (N_open, D)
        return soft


def crossing_top_k_on(model: Any, vocab_size: int) -> int:
    """The top-k per open slot a torch decoder sends (sampler_config.crossing_top_k): whole rows
    on a CPU, where the loop reads the logits where they are; on an accelerator they are copied,
    so a large vocabulary sends its top-k."""
    return 0 if model.device.type == "cpu" else crossing_top_k(vocab_size)


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
"""

from __future__ import annotations

import torch
from transformers import DiffusionGemmaForBlockDiffusion, DynamicCache

from difill.engine.hf_compat import cache_kwargs


class CanvasDecoder:
    def __init__(self, model: DiffusionGemmaForBlockDiffusion, cache: DynamicCache) -> None:
        self.model = model
        self.decoder = model.model.decoder
        self.cache = cache
        self.prefix_length = cache.get_seq_length()
        self.embed_scale = self.decoder.embed_tokens.embed_scale

    def hidden(self, canvas: torch.Tensor, soft_embeddings: torch.Tensor | None) -> torch.Tensor:
        """canvas (B, L) ids, soft_embeddings (B, L, D) or None -> hidden states (B, L, D)."""
        dec = self.decoder
        inputs = dec.embed_tokens(canvas)  # (B, L, D), already scaled
        if soft_embeddings is None:
            soft_embeddings = torch.zeros_like(inputs)
        hidden = dec.self_conditioning(inputs, soft_embeddings)  # (B, L, D)
        length = canvas.shape[1]
        positions = torch.arange(self.prefix_length, self.prefix_length + length, device=canvas.device)[
            None
        ]  # (1, L)
        rotary = {kind: dec.rotary_emb(hidden, positions, kind) for kind in dec.unique_layer_types}
        for i, layer in enumerate(dec.layers[: dec.text_config.num_hidden_layers]):
            hidden = layer(
                hidden,
                position_embeddings=rotary[dec.text_config.layer_types[i]],
                attention_mask=None,  # no padding: every slot sees the whole prefix and canvas
                position_ids=positions,
                **cache_kwargs(self.cache),
            )
        return dec.norm(hidden)  # (B, L, D)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (..., D) -> soft-capped logits (..., V) in fp32, as the stock forward computes them."""
        cap = self.model.final_logit_softcapping
        return torch.tanh(self.model.lm_head(hidden).float() / cap) * cap

    def soft_embeddings(
        self, canvas: torch.Tensor, open_mask: torch.Tensor, open_logits: torch.Tensor
    ) -> torch.Tensor:
        """Self-conditioning input for the next pass (B, L, D).

        Open slots: softmax(logits) @ E, as the stock decoder computes it.  Every other slot holds
        a known token whose one-hot softmax picks its own embedding row, so a lookup is exact.
        """
        weight = self.decoder.embed_tokens.weight  # (V, D)
        soft = weight[canvas] * self.embed_scale.to(weight.dtype)  # (B, L, D)
        probs = open_logits.softmax(dim=-1, dtype=torch.float32).to(weight.dtype)  # (N_open, V)
        soft[open_mask] = (probs @ weight) * self.embed_scale.to(weight.dtype)  # (N_open, D)
        return soft

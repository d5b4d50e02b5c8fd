"""Keep the encoder's KV cache of the last prefix, and encode only what changed.

While the user types, each request's prefix extends the previous one.  The cache keeps the token
ids it holds; a new prefix is compared token by token, the cache is cropped to the common part
and only the remaining tokens go through the encoder.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from transformers import DiffusionGemmaForBlockDiffusion, DynamicCache


@dataclass
class EncodedPrefix:
    cache: DynamicCache
    reused_tokens: int  # tokens taken from the previous prefix without re-encoding
    encoded_tokens: int  # tokens that went through the encoder now


class PrefixCache:
    def __init__(self, model: DiffusionGemmaForBlockDiffusion) -> None:
        self.model = model
        self.token_ids: list[int] = []
        self.cache: DynamicCache | None = None

    def clear(self) -> None:
        self.token_ids, self.cache = [], None

    @torch.inference_mode()
    def encode(self, token_ids: list[int]) -> EncodedPrefix:
        """A cache holding exactly ``token_ids`` (batch 1).  The caller must not modify it."""
        if not token_ids:
            raise ValueError("a prefix needs at least one token (the engine adds bos or a newline)")
        common = 0
        limit = min(len(token_ids), len(self.token_ids))
        while common < limit and token_ids[common] == self.token_ids[common]:
            common += 1
        if self.cache is None or common == 0:
            self.cache, self.token_ids = DynamicCache(config=self.model.config.text_config), []
            common = 0
        elif common < len(self.token_ids):
            self.cache.crop(-(len(self.token_ids) - common))
            self.token_ids = self.token_ids[:common]
        if common == len(token_ids):
            # Nothing new, but the decoder needs at least the last token's keys: they are cached.
            return EncodedPrefix(self.cache, common, 0)
        new = torch.tensor([token_ids[common:]], device=self.model.device)  # (1, n_new)
        self.model.model.encoder(input_ids=new, past_key_values=self.cache, use_cache=True)
        self.token_ids = list(token_ids)
        return EncodedPrefix(self.cache, common, len(token_ids) - common)


def expand_cache(cache: DynamicCache, batch: int) -> DynamicCache:
    """A copy of a batch-1 cache repeated ``batch`` times, for a batch of candidate canvases."""
    expanded = copy.copy(cache)
    expanded.layers = [copy.copy(layer) for layer in cache.layers]
    if batch > 1:
        for layer in expanded.layers:
            if layer.is_initialized:
                layer.keys = layer.keys.expand(batch, *layer.keys.shape[1:])
                layer.values = layer.values.expand(batch, *layer.values.shape[1:])
    return expanded

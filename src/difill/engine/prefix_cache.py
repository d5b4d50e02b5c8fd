"""Keep the encoder's KV cache of the last prefix, and encode only what changed.

While the user types, each request's prefix extends the previous one.  The cache keeps the token
ids it holds; a new prefix is compared token by token, the cache is cut back to the common part
and only the remaining tokens go through the encoder.

Sliding-window layers are the catch.  transformers' ``DynamicSlidingWindowLayer`` keeps only the
last ``sliding_window - 1`` keys, and that trimmed view is what the stock decoder attends to (a full
cache would change its output).  Once a prefix is a window long such a layer cannot be cropped: the
keys the shorter prefix needs are gone (``crop`` raises ``RuntimeError``).  So this cache keeps a
*tail* per sliding layer: the last ``sliding_window - 1 + CROP_SLACK`` keys and values.  A cut of up
to ``CROP_SLACK`` tokens (backspace, a retokenised last word) rebuilds the layer's trimmed view from
its tail; a longer one re-encodes the prefix from the start.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from transformers import DiffusionGemmaForBlockDiffusion, DynamicCache

from difill.engine.hf_compat import cache_kwargs
from difill.text.characters import common_prefix

CROP_SLACK = 64  # tokens a sliding layer can be cut back by without re-encoding


@dataclass
class EncodedPrefix:
    cache: DynamicCache
    reused_tokens: int  # tokens taken from the previous prefix without re-encoding
    encoded_tokens: int  # tokens that went through the encoder now


class PrefixCache:
    def __init__(self, model: DiffusionGemmaForBlockDiffusion, crop_slack: int = CROP_SLACK) -> None:
        self.model = model
        self.crop_slack = crop_slack
        self.token_ids: list[int] = []
        self.cache: DynamicCache | None = None
        self.tails: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # sliding layer -> (keys, values)
        self.reencodes = 0  # cuts too deep for the tails, served by encoding from scratch

    def clear(self) -> None:
        self.token_ids, self.cache, self.tails = [], None, {}

    @torch.inference_mode()
    def encode(self, token_ids: list[int]) -> EncodedPrefix:
        """A cache holding exactly ``token_ids`` (batch 1).  The caller must not modify it."""
        if not token_ids:
            raise ValueError("a prefix needs at least one token (the engine adds bos or a newline)")
        common = common_prefix(token_ids, self.token_ids)
        if common < len(self.token_ids) and common > 0 and not self._crop(len(self.token_ids) - common):
            self.reencodes += 1
            common = 0
        if self.cache is None or common == 0:
            self.clear()
            self.cache = DynamicCache(config=self.model.config.text_config)
        if common == len(token_ids):
            # Nothing new, but the decoder needs at least the last token's keys: they are cached.
            return EncodedPrefix(self.cache, common, 0)
        new = token_ids[common:]
        for start, end in self._chunks(len(new)):
            chunk = torch.tensor([new[start:end]], device=self.model.device)  # (1, n)
            self.model.model.encoder(input_ids=chunk, use_cache=True, **cache_kwargs(self.cache))
            self._extend_tails(end - start)
        self.token_ids = list(token_ids)
        return EncodedPrefix(self.cache, common, len(token_ids) - common)

    def _chunks(self, n_new: int) -> list[tuple[int, int]]:
        """Encoder calls for ``n_new`` tokens: the bulk at once, the last window + slack in pieces.

        A sliding layer returns at most ``window - 1`` new keys per call, so the tail can only
        grow past the window if its last ``window - 1 + slack`` tokens arrive in pieces that short.
        """
        text = self.model.config.text_config
        if "sliding_attention" not in text.layer_types:
            return [(0, n_new)]
        piece = max(1, text.sliding_window - 1)
        cuts = [n_new]
        while cuts[-1] > 0 and n_new - cuts[-1] < piece + self.crop_slack:
            cuts.append(max(0, cuts[-1] - piece))
        if cuts[-1] > 0:
            cuts.append(0)
        cuts.reverse()
        return list(zip(cuts[:-1], cuts[1:], strict=True))

    def _extend_tails(self, n_new: int) -> None:
        """Append the sliding layers' newest keys to their tails, keeping window - 1 + slack."""
        for i, layer in enumerate(self.cache.layers):
            if not getattr(layer, "is_sliding", False):
                continue
            cap = layer.sliding_window - 1 + self.crop_slack
            visible = layer.keys.shape[-2]  # min(window - 1, tokens so far)
            if i not in self.tails or n_new > visible:  # everything older than the window is gone
                self.tails[i] = (layer.keys, layer.values)
                continue
            keys, values = self.tails[i]
            keys = torch.cat([keys, layer.keys[:, :, visible - n_new :]], dim=-2)[:, :, -cap:]
            values = torch.cat([values, layer.values[:, :, visible - n_new :]], dim=-2)[:, :, -cap:]
            self.tails[i] = (keys, values)

    def _crop(self, remove: int) -> bool:
        """Cut the last ``remove`` tokens from every layer; False if a sliding tail is too short."""
        kept = len(self.token_ids) - remove
        for i, layer in enumerate(self.cache.layers):
            if getattr(layer, "is_sliding", False):
                tail = self.tails[i][0].shape[-2]
                if tail - remove < min(layer.sliding_window - 1, kept):
                    return False
        for i, layer in enumerate(self.cache.layers):
            if not getattr(layer, "is_sliding", False):
                layer.crop(-remove)
                continue
            keys, values = (t[:, :, : t.shape[-2] - remove] for t in self.tails[i])
            self.tails[i] = (keys, values)
            window = layer.sliding_window - 1
            layer.keys, layer.values = keys[:, :, -window:], values[:, :, -window:]
            layer.cumulative_length = kept
        self.token_ids = self.token_ids[:kept]
        return True


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

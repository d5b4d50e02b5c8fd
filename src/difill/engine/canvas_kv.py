"""A decoder pass that recomputes only the canvas slots still open: the approximate dual cache.

Every pass of ``CanvasDecoder`` runs every canvas slot through every layer, settled or open, though
a settled slot (clamped text, a committed token) changes little from one pass to the next: only
through what it attends to.  Fast-dLLM (arXiv 2505.22618) and dKV-Cache (arXiv 2505.15781) keep
the keys and values of such slots across passes and run only the rest; the error is what the
settled slots' deeper keys would have moved by, and a full pass every ``refresh_every`` passes
resets it.  This decoder keeps, per layer, one key and value buffer for [cached prefix | canvas]
(B, Hkv, P + L, d) and, per slot, the token its entry was computed from and whether it was
settled then.  A pass computes:

* every open slot (its token is noise and its self-conditioning signal changes every pass);
* every slot whose entry is stale: computed while it was open (dKV-Cache's delayed caching: a
  slot committed in pass t is computed as settled in pass t + 1, then read), or from a token the
  slot no longer holds (a slot changed under the cache).  A stale entry is never read: the
  pass overwrites it before any attention reads the buffer.

A fill's first pass has no self-conditioning signal yet (zeros), so its settled slots' entries
are approximate in the same way as the deeper keys (their input changes to their own embedding
on the second pass) until the next full pass.

The computed slots are gathered into a (B, n) batch, n rounded up to a bucket (4, 8, 16, 32, 64,
then multiples of 64, capped at L) so shapes repeat; a row with fewer slots to compute fills its
bucket with settled ones, which are recomputed (fresh, never wrong).  A canvas wider than the
largest bucket runs at its own width: nothing asserts on a size.

The layer loop below is ``DiffusionGemmaDecoderTextLayer.forward`` with the attention's keys
written into the buffer instead of concatenated to the prefix's;
``tests/engine/test_canvas_kv.py`` checks it against the stock layers (a full pass, and a cached
pass whose inputs did not change) and that a stale entry is recomputed.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers import DynamicCache
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.diffusion_gemma.modeling_diffusion_gemma import (
    apply_rotary_pos_emb,
    eager_attention_forward,
)

from difill.engine.decoder import CanvasDecoder, conditioned_inputs, crossing_top_k_on
from difill.engine.prefix_cache import expand_cache

BUCKETS = (4, 8, 16, 32, 64)  # compact batch widths; wider ones are multiples of the last


def bucket_width(needed: int, length: int) -> int:
    """The compact batch's width for ``needed`` slots of a canvas of ``length``."""
    for width in BUCKETS:
        if needed <= width:
            return min(width, length)
    step = BUCKETS[-1]
    return min(-(-needed // step) * step, length)


class CachedCanvasDecoder(CanvasDecoder):
    """``CanvasDecoder`` whose passes recompute the open and stale slots only (module docstring).

    Contract with the sampler: a slot outside ``open_slots`` holds a settled token, and its
    self-conditioning signal is its own embedding (``soft_embeddings`` makes it so).
    """

    def __init__(self, model: Any, cache: DynamicCache, refresh_every: int, top_k: int = 0) -> None:
        super().__init__(model, cache, top_k)
        self.refresh_every = max(1, refresh_every)
        self.kv: list[tuple[torch.Tensor, torch.Tensor]] = []  # per layer (B, Hkv, P + L, d) x 2
        # Per layer, where the canvas starts in its buffer: the prefix's keys that layer keeps (a
        # sliding layer keeps at most its window's, fewer than the prefix's length).
        self.offsets: list[int] = []
        self.cached_ids: torch.Tensor | None = None  # (B, L) the token each slot's entry was made from
        self.settled: torch.Tensor | None = None  # (B, L) the entry was made while the slot was settled
        self.passes = 0
        self.computed: list[int] = []  # slots computed per row, pass by pass (the bench reads it)

    def pass_logits(self, canvas, soft_embeddings, open_slots) -> torch.Tensor:
        """One pass -> the open slots' logits (N, V) in ``open_slots``' order (on the device)."""
        open_mask = torch.zeros(canvas.shape, dtype=torch.bool, device=canvas.device)  # (B, L)
        open_mask[open_slots] = True
        if self.cached_ids is None or self.passes % self.refresh_every == 0:
            columns = torch.arange(canvas.shape[1], device=canvas.device).expand_as(canvas)  # (B, L)
            self._reset_buffers(canvas.shape[0], canvas.shape[1])
        else:
            columns = self.columns_to_compute(canvas, open_mask)  # (B, n)
        hidden = self.compact_hidden(canvas, soft_embeddings, columns)  # (B, n, D)
        self.cached_ids = self.cached_ids.scatter(1, columns, canvas.gather(1, columns))
        self.settled = self.settled.scatter(1, columns, ~open_mask.gather(1, columns))
        self.passes += 1
        self.computed.append(columns.shape[1])
        where = torch.zeros(canvas.shape, dtype=torch.long, device=canvas.device)  # (B, L)
        where.scatter_(1, columns, torch.arange(columns.shape[1], device=canvas.device).expand_as(columns))
        rows, cols = open_slots
        return self.logits(hidden[rows, where[rows, cols]])  # (N, V)

    def stale(self, canvas: torch.Tensor, open_mask: torch.Tensor) -> torch.Tensor:
        """(B, L) slots whose cached entry may not be read this pass: open ones, ones computed
        while open, ones whose token changed since."""
        return open_mask | ~self.settled | (canvas != self.cached_ids)

    def columns_to_compute(self, canvas: torch.Tensor, open_mask: torch.Tensor) -> torch.Tensor:
        """(B, n): each row's stale slots first (in column order), then settled ones to fill the bucket."""
        need = self.stale(canvas, open_mask)  # (B, L)
        width = bucket_width(int(need.sum(-1).max()), canvas.shape[1])
        order = torch.argsort((~need).to(torch.int8), dim=1, stable=True)  # (B, L) stale slots first
        return order[:, :width]

    def _reset_buffers(self, batch: int, length: int) -> None:
        """Fresh buffers: the prefix's keys and values, the canvas part to be written by the pass."""
        self.kv, self.offsets = [], [layer.keys.shape[-2] for layer in self.cache.layers]
        for layer in self.cache.layers:
            keys, values = layer.keys.expand(batch, -1, -1, -1), layer.values.expand(batch, -1, -1, -1)
            canvas_part = keys.new_zeros(batch, keys.shape[1], length, keys.shape[3])  # (B, Hkv, L, d)
            self.kv.append((torch.cat([keys, canvas_part], 2), torch.cat([values, canvas_part.clone()], 2)))
        device = self.cache.layers[0].keys.device
        self.cached_ids = torch.full((batch, length), -1, dtype=torch.long, device=device)
        self.settled = torch.zeros((batch, length), dtype=torch.bool, device=device)

    def compact_hidden(
        self, canvas: torch.Tensor, soft_embeddings: torch.Tensor | None, columns: torch.Tensor
    ) -> torch.Tensor:
        """The hidden states (B, n, D) of the canvas slots ``columns`` (B, n), the other slots'
        keys and values read from the buffers."""
        index = columns.unsqueeze(-1)  # (B, n, 1)
        soft = (
            None
            if soft_embeddings is None
            else soft_embeddings.gather(1, index.expand(-1, -1, soft_embeddings.shape[-1]))
        )  # (B, n, D)
        hidden = conditioned_inputs(self.decoder, canvas.gather(1, columns), soft)  # (B, n, D)
        _, rotary = self.positions(
            torch.empty(1, canvas.shape[1], 0, dtype=hidden.dtype, device=hidden.device)
        )
        kinds = self.decoder.text_config.layer_types
        for i, lean in enumerate(lean_layers(self.decoder)):
            cos, sin = (t[0][columns] for t in rotary[kinds[i]])  # (B, n, d) each
            hidden = layer_pass(lean, hidden, (cos, sin), self.kv[i], self.offsets[i] + columns)
        return rms(self.decoder.norm, hidden)  # (B, n, D)


@dataclass(frozen=True)
class LeanLayer:
    """One decoder layer's weights laid out for few launches: q, k and v in one matrix, the
    MLP's gate and up in one, the router's scale folded.  A small pass is launch-bound on a CPU
    (a 4M model's pass is ~400 ops whatever its width), so fewer ops is what makes it cheaper."""

    layer: Any
    qkv: torch.Tensor  # (H * d + 2 * Hkv * d, D); v's rows are k's where the layer has no v_proj
    split: tuple[int, int, int]
    gate_up: torch.Tensor  # (2 * I, D)
    router_scale: torch.Tensor  # (D,)
    dense_experts: bool  # few experts: run them all on every slot and weight them (no host reads)


_LEAN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # decoder module -> its LeanLayers


def lean_layers(decoder: Any) -> list[LeanLayer]:
    """The decoder's layers as LeanLayer, made once per model (copies of its weights: a model
    trained further in the same process would need them made again)."""
    if decoder not in _LEAN:
        layers = []
        for layer in decoder.layers[: decoder.text_config.num_hidden_layers]:
            attn = layer.self_attn
            v = attn.v_proj.weight if attn.v_proj is not None else attn.k_proj.weight
            parts = (attn.q_proj.weight, attn.k_proj.weight, v)
            router = layer.router
            layers.append(LeanLayer(
                layer, torch.cat(parts).detach(), tuple(p.shape[0] for p in parts),
                torch.cat([layer.mlp.gate_proj.weight, layer.mlp.up_proj.weight]).detach(),
                (router.scale * router.scalar_root_size).detach(), layer.experts.num_experts <= 8,
            ))  # fmt: skip
        _LEAN[decoder] = layers
    return _LEAN[decoder]


def rms(norm: Any, x: torch.Tensor) -> torch.Tensor:
    """``DiffusionGemmaRMSNorm`` in one op: x / sqrt(mean(x^2) + eps) * weight, in fp32."""
    weight = norm.weight.float() if norm.with_scale else None
    return F.rms_norm(x.float(), (x.shape[-1],), weight, norm.variance_epsilon).type_as(x)


def layer_pass(
    lean: LeanLayer,
    hidden: torch.Tensor,
    rotary: tuple[torch.Tensor, torch.Tensor],
    kv: tuple[torch.Tensor, torch.Tensor],
    slots: torch.Tensor,
) -> torch.Tensor:
    """``DiffusionGemmaDecoderTextLayer.forward`` for the slots at buffer positions ``slots``
    (B, n): their new keys and values are written into ``kv`` before the attention reads it."""
    layer = lean.layer
    residual = hidden
    attended = attention_pass(lean, rms(layer.input_layernorm, hidden), rotary, kv, slots)
    hidden = residual + rms(layer.post_attention_layernorm, attended)
    residual = hidden
    gate, up = F.linear(rms(layer.pre_feedforward_layernorm, hidden), lean.gate_up).chunk(2, dim=-1)
    dense = rms(layer.post_feedforward_layernorm_1, layer.mlp.down_proj(layer.mlp.act_fn(gate) * up))
    flat = residual.reshape(-1, residual.shape[-1])  # (B * n, D): the router reads the residual
    experts = expert_pass(lean, rms(layer.pre_feedforward_layernorm_2, flat), *route(lean, flat))
    hidden = dense + rms(layer.post_feedforward_layernorm_2, experts.reshape(residual.shape))
    hidden = residual + rms(layer.post_feedforward_layernorm, hidden)
    return hidden * layer.layer_scalar


def route(lean: LeanLayer, flat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``DiffusionGemmaTextRouter.forward``: flat (N, D) -> the chosen experts (N, K) and weights (N, K)."""
    router = lean.layer.router
    scores = router.proj(rms(router.norm, flat) * lean.router_scale)  # (N, E)
    probs = scores.softmax(-1, dtype=torch.float32)
    weights, chosen = probs.topk(router.config.top_k_experts, dim=-1)  # (N, K) each
    weights = weights / weights.sum(-1, keepdim=True) * router.per_expert_scale[chosen]
    return chosen, weights


def expert_pass(
    lean: LeanLayer, flat: torch.Tensor, chosen: torch.Tensor, weights: torch.Tensor
) -> torch.Tensor:
    """The experts on flat (N, D): with few experts every one runs on every slot and a dense
    (N, E) weight keeps the chosen ones (the eager loop's host reads and index ops cost more
    than the wasted product on a small pass); with many, the model's own implementation."""
    experts = lean.layer.experts
    if not lean.dense_experts:
        return experts(flat, chosen, weights)
    gate, up = torch.matmul(flat, experts.gate_up_proj.transpose(1, 2)).chunk(2, dim=-1)  # (E, N, I) each
    out = torch.matmul(experts.act_fn(gate) * up, experts.down_proj.transpose(1, 2))  # (E, N, D)
    dense = torch.zeros(flat.shape[0], experts.num_experts, dtype=out.dtype, device=out.device)
    dense.scatter_(1, chosen, weights.to(out.dtype))  # (N, E)
    return torch.einsum("end,ne->nd", out, dense)


def attention_pass(
    lean: LeanLayer,
    hidden: torch.Tensor,
    rotary: tuple[torch.Tensor, torch.Tensor],
    kv: tuple[torch.Tensor, torch.Tensor],
    slots: torch.Tensor,
) -> torch.Tensor:
    """``DiffusionGemmaDecoderTextAttention.forward`` over [prefix | canvas] from the buffers."""
    attn = lean.layer.self_attn
    cos, sin = rotary
    shape = (*hidden.shape[:-1], -1, attn.head_dim)  # (B, n, H, d)
    query, key, value = (t.view(shape) for t in F.linear(hidden, lean.qkv).split(lean.split, dim=-1))
    query = apply_rotary_pos_emb(rms(attn.q_norm, query), cos, sin, unsqueeze_dim=2)  # (B, n, H, d)
    key = apply_rotary_pos_emb(rms(attn.k_norm, key), cos, sin, unsqueeze_dim=2).transpose(
        1, 2
    )  # (B, Hkv, n, d)
    value = rms(attn.v_norm, value).transpose(1, 2)  # (B, Hkv, n, d)
    keys, values = kv
    at = slots[:, None, :, None].expand(-1, keys.shape[1], -1, keys.shape[3])  # (B, Hkv, n, d)
    keys.scatter_(2, at, key)
    values.scatter_(2, at, value)
    interface = ALL_ATTENTION_FUNCTIONS.get_interface(
        attn.config._attn_implementation, eager_attention_forward
    )
    out, _ = interface(
        attn, query.transpose(1, 2), keys, values, None, dropout=0.0, scaling=attn.scaling,
        sliding_window=attn.sliding_window, is_causal=False,
    )  # fmt: skip
    return attn.o_proj(out.reshape(*hidden.shape[:-1], -1).contiguous())


def fill_decoder(model: Any, cache: DynamicCache, rows: int, vocab_size: int, canvas_cache_refresh: int) -> CanvasDecoder:
    """The torch engine's decoder for one fill's ``rows`` canvases: the prefix's cache repeated
    per row; with ``canvas_cache_refresh`` this module's canvas cache."""
    expanded, top_k = expand_cache(cache, rows), crossing_top_k_on(model, vocab_size)
    if canvas_cache_refresh > 0:
        return CachedCanvasDecoder(model, expanded, canvas_cache_refresh, top_k)
    return CanvasDecoder(model, expanded, top_k)

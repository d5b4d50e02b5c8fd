"""The synthetic DiffusionGemma-26B-A4B's shape and tensors (lab/big_gguf.py writes and measures
the file): the config, every tensor the loader reads with its Q4_K_M type and size, and what one
canvas pass reads and computes (the roofline).  Arithmetic only: nothing is written or loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from difill.engine.native import gguf_export

GIB = 1 << 30


@dataclass(frozen=True)
class BigConfig:
    """The text model's shape; the defaults are DiffusionGemma-26B-A4B's (research.md §11)."""

    hidden: int = 2816
    layers: int = 30
    full_every: int = 6  # 5 sliding : 1 full, the last of each six full
    heads: int = 16
    kv_heads: int = 8  # sliding layers
    global_kv_heads: int = 2  # full-attention layers
    head_dim: int = 256
    global_head_dim: int = 512
    intermediate: int = 2112  # the dense MLP (and self-conditioning's)
    experts: int = 128
    top_k: int = 8
    moe_intermediate: int = 704
    vocab: int = 262_144
    sliding_window: int = 1024
    softcap: float = 30.0
    k_eq_v: bool = True  # full-attention layers have no v_proj (the Gemma-4 26B-A4B's config)
    context: int = 262_144
    canvas_length: int = 256
    rms_eps: float = 1e-6
    full_rotary: float = 0.25  # partial_rotary_factor of the full-attention layers

    def layer_types(self) -> list[str]:
        return [
            "full_attention" if (i + 1) % self.full_every == 0 else "sliding_attention"
            for i in range(self.layers)
        ]

    def text_config(self) -> dict:
        """The checkpoint's text_config keys that gguf_export.write_metadata reads."""
        return {
            "layer_types": self.layer_types(), "num_hidden_layers": self.layers,
            "hidden_size": self.hidden, "intermediate_size": self.intermediate,
            "num_attention_heads": self.heads, "num_key_value_heads": self.kv_heads,
            "num_global_key_value_heads": self.global_kv_heads, "head_dim": self.head_dim,
            "global_head_dim": self.global_head_dim, "num_experts": self.experts,
            "top_k_experts": self.top_k, "moe_intermediate_size": self.moe_intermediate,
            "vocab_size": self.vocab, "sliding_window": self.sliding_window,
            "final_logit_softcapping": self.softcap, "max_position_embeddings": self.context,
            "rms_norm_eps": self.rms_eps, "attention_k_eq_v": self.k_eq_v,
            "rope_parameters": {
                "full_attention": {"rope_theta": 1e6, "partial_rotary_factor": self.full_rotary},
                "sliding_attention": {"rope_theta": 1e4},
            },
        }  # fmt: skip


FULL = BigConfig()
# Small enough to write and load in a second; still 5:1-free but with both layer kinds, K=V full
# attention, experts, and rows that fall back (128 and 384 are not multiples of 256).
SMALL = BigConfig(
    hidden=256, layers=2, full_every=2, heads=2, kv_heads=1, global_kv_heads=1, head_dim=128,
    global_head_dim=256, intermediate=384, experts=8, top_k=2, moe_intermediate=128, vocab=1024,
    sliding_window=64, context=4096, canvas_length=32,
)  # fmt: skip


@dataclass(frozen=True)
class TensorSpec:
    name: str
    ne: tuple[int, ...]  # ggml order: ne[0] is the row length
    kind: str  # "Q4_K", "Q6_K", "Q5_0", "Q8_0", "F32"
    fill: str = "random"  # F32 only: "ones" or "random"

    @property
    def elements(self) -> int:
        return int(np.prod(self.ne))

    @property
    def nbytes(self) -> int:
        block, size = BLOCKS[self.kind]
        return self.elements // block * size


# ggml's block sizes (elements, bytes) and where each block keeps its fp16 scale(s).
BLOCKS = {"Q4_K": (256, 144), "Q6_K": (256, 210), "Q5_0": (32, 22), "Q8_0": (32, 34), "F32": (1, 4)}
FALLBACK = {"Q4_K": "Q5_0", "Q6_K": "Q8_0"}  # llama-quant.cpp tensor_type_fallback


def more_bits(layer: int, layers: int) -> bool:
    """llama-quant.cpp's use_more_bits: the layers Q4_K_M gives Q6_K for attn_v and ffn_down."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def q4_k_m(ne: tuple[int, ...], more: bool = False) -> str:
    kind = "Q6_K" if more else "Q4_K"
    if ne[0] % BLOCKS[kind][0]:
        kind = FALLBACK[kind]
        if ne[0] % BLOCKS[kind][0]:
            raise ValueError(f"a row of {ne[0]} fits no quantized block; choose a multiple of 32")
    return kind


def tensor_plan(config: BigConfig) -> list[TensorSpec]:
    """Every tensor the PR's loader (models/diffusion-gemma.cpp load_arch_tensors) reads, named as
    gguf_export names the checkpoint's, typed as Q4_K_M types them."""
    c = config
    layer_names = set(gguf_export.LAYER_TENSORS.values()) | {"enc_layer_output_scale.weight"}
    top = {v.split(".")[0]: v for v in gguf_export.GLOBAL_TENSORS.values()}
    plan = [
        TensorSpec(top["token_embd"], (c.hidden, c.vocab), q4_k_m((c.hidden, c.vocab), more=True)),
        TensorSpec(top["output_norm"], (c.hidden,), "F32", "ones"),
        TensorSpec("rope_freqs.weight", (c.global_head_dim // 2,), "F32", "rope"),
        TensorSpec(top["self_cond_pre_norm"], (c.hidden,), "F32", "ones"),
        TensorSpec(top["self_cond_gate"], (c.hidden, c.intermediate), q4_k_m((c.hidden, c.intermediate))),
        TensorSpec(top["self_cond_up"], (c.hidden, c.intermediate), q4_k_m((c.hidden, c.intermediate))),
        TensorSpec(top["self_cond_down"], (c.intermediate, c.hidden), q4_k_m((c.intermediate, c.hidden))),
    ]
    attn_v_layers = [i for i, t in enumerate(c.layer_types()) if t == "sliding_attention" or not c.k_eq_v]
    for i, kind in enumerate(c.layer_types()):
        full = kind == "full_attention"
        head = c.global_head_dim if full else c.head_dim
        kv = c.global_kv_heads if full else c.kv_heads
        more = more_bits(i, c.layers)

        def add(key: str, ne: tuple[int, ...], kind: str | None = None, fill: str = "random", i=i) -> None:
            name = key if "." in key else key + ".weight"
            assert name in layer_names, name  # gguf_export's names are the loader's
            plan.append(TensorSpec(f"blk.{i}.{name}", ne, kind or q4_k_m(ne), fill))

        add("attn_norm", (c.hidden,), "F32", "ones")
        add("attn_q", (c.hidden, c.heads * head))
        add("attn_k", (c.hidden, kv * head))
        if i in attn_v_layers:
            nth = attn_v_layers.index(i)  # Q4_K_M counts attn_v tensors, not layers
            v_kind = q4_k_m((c.hidden, kv * head), more_bits(nth, len(attn_v_layers)))
            add("attn_v", (c.hidden, kv * head), v_kind)
        add("attn_output", (c.heads * head, c.hidden))
        add("attn_q_norm", (head,), "F32", "ones")
        add("attn_k_norm", (head,), "F32", "ones")
        add("post_attention_norm", (c.hidden,), "F32", "ones")
        add("layer_output_scale", (1,), "F32", "ones")
        add("enc_layer_output_scale.weight", (1,), "F32", "ones")
        add("ffn_norm", (c.hidden,), "F32", "ones")
        add("ffn_gate", (c.hidden, c.intermediate))
        add("ffn_up", (c.hidden, c.intermediate))
        add("ffn_down", (c.intermediate, c.hidden), q4_k_m((c.intermediate, c.hidden), more))
        add("post_ffw_norm", (c.hidden,), "F32", "ones")
        add("ffn_gate_inp.weight", (c.hidden, c.experts), "F32")  # the router: never quantized
        add("ffn_gate_inp.scale", (c.hidden,), "F32", "ones")
        add("pre_ffw_norm_2", (c.hidden,), "F32", "ones")
        add("post_ffw_norm_1", (c.hidden,), "F32", "ones")
        add("post_ffw_norm_2", (c.hidden,), "F32", "ones")
        add("ffn_gate_up_exps", (c.hidden, 2 * c.moe_intermediate, c.experts))
        add("ffn_down_exps.weight", (c.moe_intermediate, c.hidden, c.experts),
            q4_k_m((c.moe_intermediate, c.hidden), more))  # fmt: skip
        add("ffn_down_exps.scale", (c.experts,), "F32", "ones")
    return plan


# ------------------------------------------------------------------ sizes: the file, one pass (the roofline)


def file_bytes(plan: list[TensorSpec], alignment: int = 32) -> int:
    """The tensor data's size in the file (the metadata adds a few MiB: the token list)."""
    return sum(-(-spec.nbytes // alignment) * alignment for spec in plan)


def step_bytes(config: BigConfig, plan: list[TensorSpec], canvas: int) -> int:
    """Weight bytes one canvas pass of ``canvas`` slots must read: every tensor but the experts
    whole (the tied embedding once, as the LM head), and of each layer's experts the share a canvas
    routes to when routing is uniform, as random weights' is (1 - (1 - k/E)^C): the roofline."""
    share = 1 - (1 - config.top_k / config.experts) ** canvas
    return int(sum(spec.nbytes * (share if "_exps." in spec.name else 1) for spec in plan))


def step_flops(config: BigConfig, plan: list[TensorSpec], canvas: int) -> int:
    """Multiply-adds x 2 of one pass over ``canvas`` slots: every matrix but the experts per slot
    (the tied embedding as the LM head, every slot open), and top_k of the E experts."""
    per_slot = sum(
        spec.elements * (config.top_k / config.experts if "_exps." in spec.name else 1)
        for spec in plan
        if len(spec.ne) > 1
    )
    return int(2 * per_slot * canvas)

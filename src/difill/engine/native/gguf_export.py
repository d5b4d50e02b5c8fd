"""``difill export-gguf MODEL_DIR OUT.gguf``: a DiffusionGemma checkpoint as the GGUF that llama.cpp's
DiffusionGemma (pull request #24423, ``src/models/diffusion-gemma.cpp``) loads.

Written with PyPI ``gguf`` alone: every metadata key is named here, as the PR's loader reads it
(``conversion/diffusion_gemma.py`` on top of its Gemma-4 converter writes the same keys), so no
converter from the PR's tree and none of its workarounds are needed.  Tensors are mapped by name;
weights and norms go over unchanged (Gemma-4 norms need no +1 shift), the full-attention layers'
proportional rope becomes a ``rope_freqs`` tensor, the vision tower is left out.

Types: ``f32``, ``f16`` (norms, scales and rope stay f32 in every type) or ``q8_0`` (matrices whose
rows are a multiple of 32; the others f16).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
from safetensors import safe_open

from difill.engine.api import ModelLoadError

ARCH = "diffusion-gemma"
TYPES = ("f32", "f16", "q8_0")

# HF name (after model.decoder.) -> GGUF name; {n} is the layer.
LAYER_TENSORS = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "post_attention_norm.weight",
    "pre_feedforward_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
    "post_feedforward_layernorm_1.weight": "post_ffw_norm_1.weight",
    "post_feedforward_layernorm_2.weight": "post_ffw_norm_2.weight",
    "pre_feedforward_layernorm_2.weight": "pre_ffw_norm_2.weight",
    "router.proj.weight": "ffn_gate_inp.weight",
    "router.scale": "ffn_gate_inp.scale",
    "router.per_expert_scale": "ffn_down_exps.scale",
    "experts.gate_up_proj": "ffn_gate_up_exps.weight",
    "experts.down_proj": "ffn_down_exps.weight",
    "layer_scalar": "layer_output_scale.weight",
}
GLOBAL_TENSORS = {
    "model.decoder.embed_tokens.weight": "token_embd.weight",
    "model.decoder.norm.weight": "output_norm.weight",
    "model.decoder.self_conditioning.pre_norm.weight": "self_cond_pre_norm.weight",
    "model.decoder.self_conditioning.gate_proj.weight": "self_cond_gate.weight",
    "model.decoder.self_conditioning.up_proj.weight": "self_cond_up.weight",
    "model.decoder.self_conditioning.down_proj.weight": "self_cond_down.weight",
}
DECODER_LAYER = re.compile(r"^model\.decoder\.layers\.(\d+)\.(.+)$")
ENCODER_SCALAR = re.compile(r"^model\.encoder\.(?:language_model\.)?layers\.(\d+)\.layer_scalar$")
TOKEN_NORMAL, TOKEN_CONTROL, TOKEN_USER_DEFINED = 1, 3, 4


def gguf_name(hf_name: str) -> str | None:
    """The GGUF tensor name of a checkpoint tensor; None for what llama.cpp does not read."""
    if hf_name in GLOBAL_TENSORS:
        return GLOBAL_TENSORS[hf_name]
    if match := ENCODER_SCALAR.match(hf_name):
        return f"blk.{match[1]}.enc_layer_output_scale.weight"
    if (match := DECODER_LAYER.match(hf_name)) and match[2] in LAYER_TENSORS:
        return f"blk.{match[1]}.{LAYER_TENSORS[match[2]]}"
    return None  # the vision tower, encoder copies of tied weights


def export_gguf(model_dir: Path, out: Path, out_type: str = "f32") -> Path:
    """Write ``out`` from the checkpoint in ``model_dir``; the file appears only when complete."""
    import gguf  # an optional dependency of the llama.cpp engine: imported only to export

    if out_type not in TYPES:
        raise ValueError(f"unknown type {out_type!r}; use one of {', '.join(TYPES)}")
    model_dir = Path(model_dir)
    config, text = read_config(model_dir)
    weights = model_dir / "model.safetensors"
    if not weights.is_file():
        raise ModelLoadError(f"{weights} is missing: export-gguf reads a single model.safetensors")

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    writer = gguf.GGUFWriter(str(partial), ARCH)
    with safe_open(weights, "np") as tensors:
        text = {**text, **attention_shapes(tensors, text["layer_types"])}
        write_metadata(writer, model_dir, config, text, out_type)
        write_tokenizer(writer, model_dir, text)
        writer.add_tensor("rope_freqs.weight", rope_freqs(text))
        names = [n for n in tensors.keys() if gguf_name(n)]
        if not any(gguf_name(n) == "token_embd.weight" for n in names):
            raise ModelLoadError(
                f"{weights} holds no model.decoder.embed_tokens: not a DiffusionGemma checkpoint"
            )
        for name in names:
            data = tensors.get_tensor(name).astype(np.float32)
            target = gguf_name(name)
            array, kind = converted(data, target, out_type, gguf)
            writer.add_tensor(target, array, raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    partial.replace(out)
    return out


def attention_shapes(tensors, layer_types: list[str]) -> dict:
    """Head sizes and kv heads of the sliding and full-attention layers, read off the weights:
    transformers does not write ``global_head_dim`` into every config it saves, and the
    weights are what llama.cpp checks the metadata against."""
    shapes = {}
    for kind, head_key, kv_key in (
        ("sliding_attention", "head_dim", "num_key_value_heads"),
        ("full_attention", "global_head_dim", "num_global_key_value_heads"),
    ):  # fmt: skip
        if kind not in layer_types:
            continue
        layer = layer_types.index(kind)
        prefix = f"model.decoder.layers.{layer}.self_attn."
        head = tensors.get_slice(prefix + "q_norm.weight").get_shape()[0]
        shapes[head_key] = head
        shapes[kv_key] = tensors.get_slice(prefix + "k_proj.weight").get_shape()[0] // head
    return shapes


def read_config(model_dir: Path) -> tuple[dict, dict]:
    path = model_dir / "config.json"
    if not path.is_file():
        raise ModelLoadError(f"{path} is missing: export-gguf needs a DiffusionGemma checkpoint directory")
    config = json.loads(path.read_text())
    if "DiffusionGemmaForBlockDiffusion" not in config.get("architectures", []):
        raise ModelLoadError(f"{path} is not a DiffusionGemmaForBlockDiffusion checkpoint")
    return config, config.get("text_config", config)


def converted(data: np.ndarray, name: str, out_type: str, gguf):
    """(array, raw dtype or None) for one tensor in the chosen type."""
    keep_f32 = data.ndim == 1 or name == "rope_freqs.weight" or out_type == "f32"
    if keep_f32:
        return data, None
    if out_type == "q8_0" and data.shape[-1] % 32 == 0:
        kind = gguf.GGMLQuantizationType.Q8_0
        return gguf.quants.quantize(data, kind), kind
    return data.astype(np.float16), None


def rope_freqs(text: dict) -> np.ndarray:
    """Full-attention layers rotate a share of each head ("proportional" rope); ggml's neox rope
    rotates the first dims, so the unrotated ones get frequency factors of 1e30 (no rotation)."""
    head_dim = int(text.get("global_head_dim") or text["head_dim"])
    full = (text.get("rope_parameters") or {}).get("full_attention", {})
    rotated = int(head_dim * float(full.get("partial_rotary_factor", 1.0)) / 2)
    return np.array([1.0] * rotated + [1e30] * (head_dim // 2 - rotated), dtype=np.float32)


def write_metadata(writer, model_dir: Path, config: dict, text: dict, out_type: str) -> None:
    a = ARCH
    layer_types = text["layer_types"]
    sliding = [kind == "sliding_attention" for kind in layer_types]
    head_dim = int(text["head_dim"])
    global_head_dim = int(text.get("global_head_dim") or head_dim)
    kv_heads = int(text["num_key_value_heads"])
    global_kv_heads = int(text.get("num_global_key_value_heads") or kv_heads)
    ropes = text.get("rope_parameters") or {}
    partial_swa = float(ropes.get("sliding_attention", {}).get("partial_rotary_factor", 1.0))
    writer.add_name(model_dir.name)
    writer.add_file_type({"f32": 0, "f16": 1, "q8_0": 7}[out_type])
    writer.add_quantization_version(2)
    writer.add_uint32(f"{a}.block_count", int(text["num_hidden_layers"]))
    writer.add_uint32(f"{a}.context_length", int(text["max_position_embeddings"]))
    writer.add_uint32(f"{a}.embedding_length", int(text["hidden_size"]))
    writer.add_uint32(f"{a}.feed_forward_length", int(text["intermediate_size"]))
    writer.add_uint32(f"{a}.attention.head_count", int(text["num_attention_heads"]))
    writer.add_array(f"{a}.attention.head_count_kv", [kv_heads if s else global_kv_heads for s in sliding])
    writer.add_float32(f"{a}.rope.freq_base", float(ropes.get("full_attention", {}).get("rope_theta", 1e6)))
    writer.add_float32(
        f"{a}.rope.freq_base_swa", float(ropes.get("sliding_attention", {}).get("rope_theta", 1e4))
    )
    writer.add_float32(f"{a}.attention.layer_norm_rms_epsilon", float(text["rms_norm_eps"]))
    writer.add_uint32(f"{a}.expert_count", int(text["num_experts"]))
    writer.add_uint32(f"{a}.expert_used_count", int(text["top_k_experts"]))
    writer.add_uint32(f"{a}.expert_feed_forward_length", int(text["moe_intermediate_size"]))
    writer.add_uint32(f"{a}.attention.key_length", global_head_dim)
    writer.add_uint32(f"{a}.attention.value_length", global_head_dim)
    writer.add_uint32(f"{a}.attention.key_length_swa", head_dim)
    writer.add_uint32(f"{a}.attention.value_length_swa", head_dim)
    writer.add_float32(f"{a}.final_logit_softcapping", float(text.get("final_logit_softcapping") or 30.0))
    writer.add_uint32(f"{a}.attention.sliding_window", int(text["sliding_window"]))
    writer.add_uint32(f"{a}.attention.shared_kv_layers", 0)
    writer.add_uint32(f"{a}.embedding_length_per_layer_input", 0)
    writer.add_array(f"{a}.attention.sliding_window_pattern", sliding)
    writer.add_uint32(f"{a}.rope.dimension_count", global_head_dim)
    writer.add_uint32(f"{a}.rope.dimension_count_swa", int(head_dim * partial_swa))
    writer.add_bool(f"{a}.attention.causal", False)
    canvas = int(config.get("canvas_length") or 0)
    if canvas <= 0:
        raise ModelLoadError(f"{model_dir}/config.json has no positive canvas_length")
    writer.add_uint32("diffusion.canvas_length", canvas)
    generation = model_dir / "generation_config.json"
    if generation.is_file():
        gen = json.loads(generation.read_text())
        sampler = gen.get("sampler_config") or {}
        for key, name, cast in (
            ("max_denoising_steps", "diffusion.eb_max_steps", int), ("t_min", "diffusion.eb_t_min", float),
            ("t_max", "diffusion.eb_t_max", float), ("confidence_threshold", "diffusion.eb_confidence_threshold", float),
        ):  # fmt: skip
            if gen.get(key) is not None:
                (writer.add_uint32 if cast is int else writer.add_float32)(name, cast(gen[key]))
        if sampler.get("entropy_bound") is not None:
            writer.add_float32("diffusion.eb_entropy_bound", float(sampler["entropy_bound"]))


def write_tokenizer(writer, model_dir: Path, text: dict) -> None:
    """The tokenizer.json vocabulary: byte-level BPE as ``gpt2``; special tokens are control tokens."""
    path = model_dir / "tokenizer.json"
    if not path.is_file():
        raise ModelLoadError(f"{path} is missing: export-gguf writes the tokenizer into the GGUF")
    tokenizer = json.loads(path.read_text())
    model = tokenizer.get("model", {})
    if model.get("type") != "BPE":
        raise ModelLoadError(f"{path} is not a BPE tokenizer; export-gguf writes byte-level BPE only")
    size = int(text["vocab_size"])
    tokens = [f"[PAD{i}]" for i in range(size)]
    types = [TOKEN_USER_DEFINED] * size
    for token, i in model["vocab"].items():
        if i < size:
            tokens[i], types[i] = token, TOKEN_NORMAL
    special: dict[str, int] = {}
    for added in tokenizer.get("added_tokens", []):
        if added["id"] < size:
            tokens[added["id"]] = added["content"]
            types[added["id"]] = TOKEN_CONTROL if added.get("special") else TOKEN_USER_DEFINED
            special[added["content"]] = added["id"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    for key, token_id in (("bos", text.get("bos_token_id")), ("eos", text.get("eos_token_id")),
                          ("padding", text.get("pad_token_id"))):  # fmt: skip
        if isinstance(token_id, list) and token_id:  # several eos ids: the first is the tokenizer's own
            token_id = token_id[0]
        if isinstance(token_id, int):
            writer.add_uint32(f"tokenizer.ggml.{key}_token_id", token_id)
    # The runtime's own sampler starts from mask tokens; difill's filler (or <mask>) is that token.
    mask = special.get("<mask>", special.get("<|fill|>"))
    if mask is not None:
        writer.add_uint32("tokenizer.ggml.mask_token_id", mask)

"""Load a DiffusionGemma checkpoint and its tokenizer from a local directory.

Only safetensors are read (no pickle), ``trust_remote_code`` stays off, and nothing touches the
network: a hub id or a broken directory fails with a message that names the path and says how to
provide weights.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from difill.engine.api import ModelLoadError
from difill.engine.file_tokenizer import FileTokenizer
from difill.engine.sampler_config import SamplerConfig
from difill.engine.vocab import TokenIds

if TYPE_CHECKING:
    # transformers is imported where the weights load (load_model): the llama.cpp and MLX engines
    # read a checkpoint without it (load_checkpoint_meta).  Importing it builds its registry of
    # every model (0.4 s), anything under ``transformers.models`` builds it again, and
    # DiffusionGemmaConfig's module imports its validators, which import torch.distributed.tensor:
    # together about 1 s of a 2.7 s `difill fill` on the llama.cpp engine (docs/install.md).
    import torch
    from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion, PreTrainedTokenizerBase

DEFAULT_MODEL_DIR = Path(__file__).parent / "default_model"
# A tiny vision tower: DiffusionGemma always builds one, and the default is 167M parameters.
TINY_VISION_CONFIG = dict(
    model_type="gemma4_vision", hidden_size=32, intermediate_size=64, num_hidden_layers=1,
    num_attention_heads=1, num_key_value_heads=1, head_dim=32, position_embedding_size=64,
)  # fmt: skip
HOW_TO_FIX = (
    "difill needs a local directory with config.json, *.safetensors weights and tokenizer files. "
    "Reinstall difill to restore the default model, or pass --model DIR (setting `modelPath`) "
    "pointing at a downloaded DiffusionGemma checkpoint, or use a remote backend."
)


@dataclass
class LoadedModel:
    model: DiffusionGemmaForBlockDiffusion | None  # None: the weights run elsewhere (engine/native)
    tokenizer: PreTrainedTokenizerBase | FileTokenizer  # FileTokenizer: load_checkpoint_meta's
    ids: TokenIds
    path: Path
    device: torch.device | str  # torch's device; "cpu" where the weights run elsewhere (no torch)
    max_prefix_tokens: int  # the longest prefix the model was trained to read
    sampler: SamplerConfig = field(default_factory=SamplerConfig)  # from the checkpoint's generation_config
    # The ghost-text cut chosen for these weights (FillOptions.min_token_prob None); 0: none chosen.
    min_token_prob: float = 0.0
    # The languages the weights were trained on (config ``difill.languages``); (): every language.
    languages: tuple[str, ...] = ()
    # The checkpoint's config (DiffusionGemmaConfig; config.json's values, ``read_config``, when
    # the weights run elsewhere and ``model`` is None): its ``difill`` metadata is read from here.
    config: Any = None

    _token_texts: list[str] | None = None

    @property
    def dtype(self) -> torch.dtype:
        return self.model.dtype

    def token_texts(self) -> list[str]:
        """Every token id's text, decoded once per model (seconds for a 262k vocabulary)."""
        if self._token_texts is None:
            self._token_texts = [self.tokenizer.decode([i]) for i in range(self.ids.vocab_size)]
        return self._token_texts


def difill_meta(config) -> dict:
    """What difill's trainer recorded in a checkpoint's config (``difill``); {} for others."""
    return getattr(config, "difill", None) or {}


def checkpoint_drafts(config) -> str:
    """What ``contextDrafts: auto`` means for a checkpoint: its ``difill.drafts``; "show" for one
    difill trained that names none (measured on the shipped weights, docs/drafts.md: retrieval
    alone was right far more often than the model); "seed" for any other checkpoint."""
    meta = difill_meta(config)
    if isinstance(meta, dict) and meta:
        return meta["drafts"] if meta.get("drafts") in ("show", "seed", "off") else "show"
    return "seed"


def checkpoint_min_token_prob(config) -> float:
    """The ghost-text cut chosen for a checkpoint's weights (``difill.min_token_prob``); 0: none."""
    return float(difill_meta(config).get("min_token_prob", 0.0))


def checkpoint_languages(config) -> tuple[str, ...]:
    """The languages a checkpoint was trained on (``difill.languages``, named as
    text/languages.py names them); (): it names none and serves every language."""
    return tuple(str(name) for name in difill_meta(config).get("languages", ()))


def pick_device(requested: str = "auto") -> torch.device:
    import torch

    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)


# Every load of a checkpoint (this module, engine/ar_baseline.py) passes these: local files only,
# never the checkpoint's own Python code (an ``auto_map`` in its config or tokenizer config would
# otherwise make transformers ask on stdin whether to run it), and never pickle weights (a
# ``pytorch_model.bin`` next to them is ignored, not unpickled).
TOKENIZER_LOAD = dict(local_files_only=True, trust_remote_code=False)
MODEL_LOAD = dict(local_files_only=True, trust_remote_code=False, use_safetensors=True)
SAFETENSORS_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")  # what use_safetensors reads


def load_error(path: Path, err: BaseException) -> ModelLoadError:
    """A clear ModelLoadError for a checkpoint that failed to load.  A message that advises
    loading pickles (torch's "re-run with weights_only=False") is never passed on."""
    text = str(err).strip()
    first_line = text.splitlines()[0] if text else type(err).__name__
    if "weights_only" in text or "pickle" in text.lower():
        first_line = "its weights would have to be unpickled, which difill never does"
    return ModelLoadError(f"could not load the model in {path}: {first_line}. {HOW_TO_FIX}")


def _looks_like_hub_id(name: str) -> bool:
    return "/" in name and not name.startswith((".", "/", "~")) and name.count("/") == 1


def check_model_dir(path: Path, weights: bool = True) -> None:
    """Raise ModelLoadError naming exactly what is missing from ``path`` (``weights``: the
    safetensors too; the llama.cpp engine reads its weights from a GGUF)."""
    if not path.exists():
        hint = " It looks like a hub id; difill never downloads." if _looks_like_hub_id(str(path)) else ""
        raise ModelLoadError(f"model directory {path} does not exist.{hint} {HOW_TO_FIX}")
    if not path.is_dir():
        raise ModelLoadError(f"model path {path} is not a directory. {HOW_TO_FIX}")
    if not (path / "config.json").is_file():
        raise ModelLoadError(f"{path}/config.json is missing. {HOW_TO_FIX}")
    if weights and not any((path / name).is_file() for name in SAFETENSORS_WEIGHTS):
        pickles = [p.name for p in path.glob("*.bin")] + [p.name for p in path.glob("*.pt")]
        extra = f" (found {', '.join(pickles)}: pickle weights are refused)" if pickles else ""
        raise ModelLoadError(f"{path} has no model.safetensors weights{extra}. {HOW_TO_FIX}")
    if not (path / "tokenizer.json").is_file() and not (path / "tokenizer.model").is_file():
        raise ModelLoadError(f"{path} has no tokenizer (tokenizer.json). {HOW_TO_FIX}")


DTYPE_ENV = "DIFILL_DTYPE"  # every command that loads a model reads it (serve, serve-http, fill, ...)
DTYPES = {"auto": None, "float32": "float32", "fp32": "float32", "bfloat16": "bfloat16",
          "bf16": "bfloat16", "float16": "float16", "fp16": "float16"}  # fmt: skip  # torch's names


CANVAS_CACHE_ENV = "DIFILL_CANVAS_CACHE"  # the canvas cache's refresh (SamplerConfig.canvas_cache_refresh)


def canvas_cache_refresh() -> int:
    """``DIFILL_CANVAS_CACHE``: the torch engine keeps settled canvas slots' keys and values, a
    full pass every that many (engine/canvas_kv.py); unset or 0: off, the default (it changes
    some fills: docs/bench.md).  The typing replay sets it on the server it starts."""
    value = os.environ.get(CANVAS_CACHE_ENV, "").strip()
    if not value:
        return 0
    try:
        return max(0, int(value))
    except ValueError:
        raise ModelLoadError(f"{CANVAS_CACHE_ENV}={value!r} is not a whole number of passes") from None


def pick_dtype(requested: str, target: torch.device) -> torch.dtype:
    """``auto``: bf16 on CUDA, fp32 elsewhere.  bf16 on a CPU halves the memory (the 26B: ~52 GB
    instead of ~104 GB) at a speed cost where the CPU has no native bf16."""
    if requested not in DTYPES:
        raise ModelLoadError(f"unknown dtype {requested!r}; use one of {', '.join(DTYPES)}")
    import torch

    chosen = DTYPES[requested]
    if chosen is None:
        chosen = "bfloat16" if target.type == "cuda" else "float32"
    return getattr(torch, chosen)


def load_model(
    path: str | os.PathLike | None = None, device: str = "auto", dtype: str | None = None
) -> LoadedModel:
    """``dtype`` None: the ``DIFILL_DTYPE`` environment variable, else ``auto`` (see pick_dtype)."""
    import torch
    from transformers import AutoTokenizer, DiffusionGemmaForBlockDiffusion
    from transformers.utils import logging as hf_logging

    path = Path(path).expanduser() if path else DEFAULT_MODEL_DIR
    dtype = dtype or os.environ.get(DTYPE_ENV) or "auto"
    check_model_dir(path)
    hf_logging.disable_progress_bar()
    target = pick_device(device)
    if target.type == "cpu" and "OMP_NUM_THREADS" not in os.environ:
        # Half the cores: the editor keeps the rest, and small per-step ops lose more to thread
        # oversubscription on a busy machine than they gain from a second thread.
        torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2))
    torch_dtype = pick_dtype(dtype, target)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, **TOKENIZER_LOAD)
        model = DiffusionGemmaForBlockDiffusion.from_pretrained(
            path,
            **MODEL_LOAD,
            dtype=torch_dtype,
            experts_implementation="eager" if target.type == "cpu" else None,
        )
    except Exception as err:  # noqa: BLE001 - safetensors, tokenizers and json raise their own types
        raise load_error(path, err) from err
    model.to(target).eval()
    return checkpoint_settings(
        model, model.config, getattr(model, "generation_config", None), tokenizer, path, target
    )


def checkpoint_settings(model, config, generation_config, tokenizer, path: Path, target) -> LoadedModel:
    """What difill reads from a checkpoint besides its weights: token ids, the prefix it was
    trained to read, its sampler, ghost-text cut and languages."""
    text_config = config.text_config
    ids = TokenIds.from_tokenizer(tokenizer, text_config.vocab_size)
    meta = difill_meta(config)
    max_prefix = int(meta.get("max_prefix_tokens", min(text_config.max_position_embeddings // 2, 4096)))
    sampler = SamplerConfig.from_checkpoint(generation_config, bool(meta))
    sampler.canvas_cache_refresh = canvas_cache_refresh()
    min_token_prob = checkpoint_min_token_prob(config)
    languages = checkpoint_languages(config)
    return LoadedModel(
        model, tokenizer, ids, path, target, max_prefix, sampler, min_token_prob, languages, config
    )


def load_checkpoint_meta(path: str | os.PathLike | None = None) -> LoadedModel:
    """A checkpoint's tokenizer and settings without its weights (``LoadedModel.model`` None): the
    llama.cpp engine runs the weights from a GGUF."""
    path = Path(path).expanduser() if path else DEFAULT_MODEL_DIR
    check_model_dir(path, weights=False)
    try:
        tokenizer = load_tokenizer(path)
        config = read_config(path)
        generation = read_json_attributes(path / "generation_config.json")
    except Exception as err:  # noqa: BLE001 - tokenizers and json raise their own types
        raise load_error(path, err) from err
    return checkpoint_settings(None, config, generation, tokenizer, path, "cpu")


def load_tokenizer(path: Path) -> PreTrainedTokenizerBase | FileTokenizer:
    """The checkpoint's tokenizer, for an engine that runs the weights elsewhere.  difill's own is
    read without transformers (engine/file_tokenizer.py: importing transformers is 0.4 s);
    any other through AutoTokenizer."""
    tokenizer = FileTokenizer.read(path)
    if tokenizer is not None:
        return tokenizer
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, **TOKENIZER_LOAD)


# What checkpoint_settings reads from a text config besides difill's metadata.
TEXT_CONFIG_READ = ("vocab_size", "max_position_embeddings")


def read_config(path: Path) -> Any:
    """config.json as attributes (``config.text_config.vocab_size``, ``config.difill`` a dict), for
    an engine that runs the weights elsewhere: checkpoint_settings and the engines read only
    ``TEXT_CONFIG_READ`` and difill's metadata.  A config that leaves one of them to the class's
    default is read by DiffusionGemmaConfig, which knows the default."""
    values = json.loads((path / "config.json").read_text())
    text = values.get("text_config")
    if not isinstance(text, dict) or not all(key in text for key in TEXT_CONFIG_READ):
        from transformers import DiffusionGemmaConfig

        return DiffusionGemmaConfig.from_pretrained(path, local_files_only=True)
    return SimpleNamespace(**{**values, "text_config": SimpleNamespace(**text)})


def read_json_attributes(path: Path) -> SimpleNamespace | None:
    """A JSON file's top-level values as attributes, as GenerationConfig.from_pretrained gives the
    values SamplerConfig.from_checkpoint reads (its nested values stay dicts there too); None
    when there is no file."""
    return SimpleNamespace(**json.loads(path.read_text())) if path.is_file() else None


@dataclass(frozen=True)
class ModelShape:
    """The size of a DiffusionGemma built from scratch; the defaults are the shipped model's."""

    hidden_size: int = 192
    num_layers: int = 4
    num_heads: int = 4
    num_kv_heads: int = 2
    num_experts: int = 2  # MoE is mandatory in DiffusionGemma
    max_positions: int = 2048
    canvas_length: int = 48


def build_config(ids: TokenIds, shape: ModelShape = ModelShape()) -> DiffusionGemmaConfig:
    """A small DiffusionGemma for CPUs: few layers, 2 experts (MoE is mandatory), tiny vision tower.

    ``ids``: the tokenizer's (its vocabulary size and its pad, eos and bos ids).  Per layer: a dense
    MLP of 2 x hidden and one active expert of 1 x hidden.
    """
    from transformers import DiffusionGemmaConfig

    vocab_size, hidden_size, num_layers = ids.vocab_size, shape.hidden_size, shape.num_layers
    num_heads, num_kv_heads, max_positions = shape.num_heads, shape.num_kv_heads, shape.max_positions
    head_dim = hidden_size // num_heads
    intermediate_size = 2 * hidden_size
    moe_intermediate_size = hidden_size
    text_config = dict(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        head_dim=head_dim,
        global_head_dim=head_dim,
        num_global_key_value_heads=num_kv_heads,
        max_position_embeddings=max_positions,
        sliding_window=max_positions,
        layer_types=["sliding_attention"] * (num_layers - 1) + ["full_attention"],
        num_experts=shape.num_experts,
        top_k_experts=1,
        moe_intermediate_size=moe_intermediate_size,
        pad_token_id=ids.pad,
        eos_token_id=ids.eos,
        bos_token_id=ids.bos,
    )
    return DiffusionGemmaConfig(
        text_config=text_config,
        vision_config=TINY_VISION_CONFIG,
        canvas_length=shape.canvas_length,
        # No image tokens in difill's vocabulary: point them past it so they can never match.
        boi_token_id=vocab_size + 1,
        eoi_token_id=vocab_size + 2,
        image_token_id=vocab_size + 3,
    )

"""Dense causal-LM supervision: the corpus as one token stream, cut into packed windows.

DiffusionGemma's encoder is causal and shares every weight with the bidirectional decoder, so a
next-token loss on packed windows trains the whole model on every token it reads: the cheapest
signal per FLOP on a CPU (research.md section 8). Documents are laid end to end as
``<bos> text <eos>``; a window may span a document boundary, as in standard LM pretraining.

The stream is tokenized once and cached beside the corpus as ``{split}.{tokenizer hash}.u16``
(raw little-endian uint16, the vocabulary is below 65,536), so later runs start at once.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from transformers import DiffusionGemmaForBlockDiffusion, PreTrainedTokenizerBase

from difill.engine.vocab import TokenIds

TOKENIZE_BATCH = 256  # documents per call into the Rust tokenizer


def token_stream(corpus_dir: Path, split: str, tok: PreTrainedTokenizerBase, ids: TokenIds) -> np.ndarray:
    """(N,) uint16: every document of ``{split}.jsonl`` as ``<bos> ids <eos>``, end to end."""
    vocab_digest = hashlib.sha1(json.dumps(tok.get_vocab(), sort_keys=True).encode()).hexdigest()[:10]
    cached = corpus_dir / f"{split}.{vocab_digest}.u16"
    source = corpus_dir / f"{split}.jsonl"
    if cached.exists() and cached.stat().st_mtime >= source.stat().st_mtime:
        return np.fromfile(cached, dtype="<u2")
    if len(tok) > np.iinfo(np.uint16).max:
        raise ValueError(f"vocabulary of {len(tok)} does not fit the uint16 stream")
    pieces: list[np.ndarray] = []
    batch: list[str] = []

    def flush() -> None:
        for row in tok(batch, add_special_tokens=False)["input_ids"]:
            pieces.append(np.asarray([ids.bos, *row, ids.eos], dtype="<u2"))
        batch.clear()

    with open(source) as f:
        for line in f:
            batch.append(json.loads(line)["text"])
            if len(batch) == TOKENIZE_BATCH:
                flush()
    if batch:
        flush()
    stream = np.concatenate(pieces)
    tmp = cached.with_suffix(".tmp")
    stream.tofile(tmp)
    tmp.replace(cached)
    return stream


def packed_batch(
    stream: np.ndarray, batch_size: int, length: int, rng: random.Random, bos: int | None = None
) -> torch.Tensor:
    """(B, L) int64 windows at random offsets of the stream, each opened by ``bos`` when given.

    The engine puts ``<bos>`` first in every prefix, also mid-file (``encode_prefix_window``), so
    training windows start the same way: ``<bos>`` then L - 1 tokens from a random offset.
    """
    head = 0 if bos is None else 1
    starts = [rng.randrange(0, len(stream) - length) for _ in range(batch_size)]
    windows = np.stack([stream[s : s + length - head] for s in starts]).astype(np.int64)
    if head:
        windows = np.concatenate([np.full((batch_size, 1), bos, dtype=np.int64), windows], axis=1)
    return torch.from_numpy(windows)


def softcapped_logits(model: DiffusionGemmaForBlockDiffusion, hidden: torch.Tensor) -> torch.Tensor:
    """The LM head with Gemma's final logit soft-capping, as the decoder applies it."""
    cap = model.final_logit_softcapping
    logits = model.lm_head(hidden).float()
    return torch.tanh(logits / cap) * cap if cap else logits


def causal_lm_loss(
    model: DiffusionGemmaForBlockDiffusion, windows: torch.Tensor, softcap: bool = False
) -> torch.Tensor:
    """Mean next-token cross-entropy of the causal encoder over (B, L) packed windows.

    Without ``softcap`` the logits skip Gemma's tanh soft-capping. The encoder's LM head is a
    training signal only (at inference the encoder just writes the KV cache, and the decoder's
    logits keep their soft-capping), and the cap's six passes over the (B, L, V) logits were
    ~15% of a packed step on this CPU (lab/scripts/train_throughput.py --profile).
    """
    hidden = model.model.encoder(input_ids=windows, use_cache=False).last_hidden_state  # (B, L, H)
    hidden = hidden[:, :-1]
    logits = softcapped_logits(model, hidden) if softcap else model.lm_head(hidden).float()  # (B, L-1, V)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), windows[:, 1:].reshape(-1))


@torch.no_grad()
def heldout_lm_loss(
    model: DiffusionGemmaForBlockDiffusion, stream: np.ndarray, windows: int = 48, length: int = 256
) -> float:
    """The decision metric: causal-LM loss on fixed, evenly spaced held-out windows."""
    was_training = model.training
    model.eval()
    if len(stream) < windows * length:  # a tiny held-out split (tests): repeat it to fill the windows
        stream = np.resize(stream, windows * length + 1)
    step = (len(stream) - length) // windows
    batch = torch.from_numpy(
        np.stack([stream[i * step : i * step + length] for i in range(windows)]).astype(np.int64)
    )
    batch = batch.to(next(model.parameters()).device)
    losses = [causal_lm_loss(model, batch[i : i + 16], softcap=True).item() for i in range(0, windows, 16)]
    model.train(was_training)
    return float(np.mean(losses))

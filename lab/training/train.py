"""Train difill's default DiffusionGemma (and the same-size autoregressive baseline) on the CPU.

Two kinds of step (``--canvas-share`` decides the mix, and may shift linearly over the run):
* a packed causal-LM step: dense next-token loss through the causal encoder on packed windows of
  the token stream (``packed.py``), which trains every shared weight on every token;
* a canvas step: the engine's own canvas, denoised by the bidirectional decoder over the
  prefix's KV cache, with a next-token loss on the prefix as well (``diffusion_loss``).

Resumable: ``--init DIR`` starts from saved weights (the shipped model by default), and the
optimizer state, step count and cumulative CPU-hours travel with every checkpoint as safetensors
and JSON (no pickle), so compute adds up across sessions.  Weights are averaged (EMA) and the EMA
is what gets saved and evaluated. ``kill <pid>`` (SIGTERM) ends a run after its current step and
saves it, so a session can stop training on time without losing the last minutes.
"""

from __future__ import annotations

import json
import math
import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from transformers import (
    AutoTokenizer,
    DiffusionGemmaForBlockDiffusion,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from difill.engine.hf_compat import cache_kwargs, output_cache
from difill.engine.model import ModelShape, build_config
from difill.engine.vocab import TokenIds
from lab.training.batches import FILLER_WEIGHT, ar_batch, corrupt, diffusion_batch
from lab.training.checkpoint import TrainState, cpu_seconds, optimizer_and_ema, save_latest, spend
from lab.training.corpus import read_jsonl
from lab.training.packed import (
    causal_lm_loss,
    heldout_lm_loss,
    packed_batch,
    softcapped_logits,
    token_stream,
)

if TYPE_CHECKING:
    import numpy as np

PREFIX_LENGTHS = (32, 64, 128, 256)  # most examples get a short prefix: more supervision per FLOP
PREFIX_WEIGHTS = (0.3, 0.3, 0.25, 0.15)
CANVAS_LENGTHS = (32, 48, 64, 80)
MAX_PREFIX_TOKENS = max(PREFIX_LENGTHS)
# The held-out canvas loss's fixed layouts, (prefix tokens, canvas slots): one per canvas length.
HELDOUT_CANVAS_LAYOUTS = ((32, 32), (64, 48), (128, 64), (256, 80))


def canvas_loss_texts(texts: list[str]) -> list[str]:
    """The held-out documents with room for every shape (10 lines or more, as difill eval's cases)."""
    return [t for t in texts if t.count("\n") >= 10]


@dataclass
class TrainConfig:
    arch: str = "diffusion"  # "diffusion" or "ar"
    out: str = "runs/diffusion"
    corpus: str = "data/corpus"
    tokenizer: str = "data/tokenizer"
    init: str | None = None  # a saved model dir to resume from
    minutes: float = 90.0  # wall-clock cap
    cpu_hours: float | None = None  # stop after this much CPU time (the lr schedule runs over it)
    threads: int = 2
    device: str = "cpu"  # "cuda" for the GPU recipe (lab/scripts/gpu_recipe.sh)
    bf16: bool = False  # bf16 autocast: for GPUs; on this CPU bf16 is emulated and slow
    batch_size: int = 16
    lr: float = 2e-3
    warmup_steps: int = 200
    weight_decay: float = 0.01
    ema_decay: float = 0.998
    self_conditioning_rate: float = 0.5  # share of steps whose canvas sees the model's own logits
    lm_loss_weight: float = 1.0  # next-token loss on the encoder's prefix outputs
    canvas_share: float = 1.0  # share of canvas steps at the start; the rest are packed causal-LM steps
    canvas_share_end: float | None = None  # share at the end (linear in progress); None: constant
    draft_share: float = 0.0  # share of one-hole canvas examples whose hole starts from a draft
    lm_length: int = 256  # packed window length of a causal-LM step
    min_lr_ratio: float = 0.1  # cosine decay to this share of lr over --cpu-hours (GPU: over --minutes)
    save_every_minutes: float = 10.0
    seed: int = 0
    hidden_size: int = 192
    num_layers: int = 4


def build_ar_model(vocab_size: int, hidden: int, layers: int, ids: TokenIds) -> LlamaForCausalLM:
    """A Llama of the same active size as the diffusion model (dense MLP = its MLP + one expert)."""
    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=hidden, intermediate_size=3 * hidden, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, head_dim=hidden // 4, max_position_embeddings=2048,
        tie_word_embeddings=True, pad_token_id=ids.pad, eos_token_id=ids.eos, bos_token_id=ids.bos,
    )  # fmt: skip
    return LlamaForCausalLM(config)


def diffusion_loss(
    model: DiffusionGemmaForBlockDiffusion, batch, ids: TokenIds, cfg: TrainConfig, gen: torch.Generator
) -> tuple[torch.Tensor, dict]:
    """The canvas step's loss: next-token loss on the prefix, denoising loss on the corrupted slots.

    The LM head runs only where a loss is taken (real prefix positions, corrupted hole slots), not
    over every (B, L, V) position: the head and its soft-cap were the largest share of a step
    (MODEL.md, Throughput).  The prefix's next-token logits skip the soft-cap, as the packed
    steps' do (packed.py ``causal_lm_loss``); the decoder's keep it, as the engine sees them.
    """
    vocab = model.config.text_config.vocab_size
    # 1. Encoder: causal pass over the (left-padded) prefix writes the KV cache; next-token loss.
    enc = model.model.encoder(input_ids=batch.prefix, attention_mask=batch.prefix_mask, use_cache=True)
    has_target = batch.prefix_mask[:, 1:].bool()  # (B, P-1): position i predicts real token i+1
    if has_target.any():
        lm_hidden = enc.last_hidden_state[:, :-1][has_target]  # (N, H)
        lm_loss = F.cross_entropy(model.lm_head(lm_hidden).float(), batch.prefix[:, 1:][has_target])
    else:  # every prefix is a lone bos: nothing to predict
        lm_loss = enc.last_hidden_state.sum() * 0.0

    # 2. Decoder: corrupted canvas, bidirectional over prefix cache + canvas.
    noisy, corrupted = corrupt(batch.canvas, batch.clamp_mask, vocab, gen)
    if batch.seeded is not None:
        # Draft-seeded rows start as the engine's seeded rows do (the draft, then filler, in every
        # hole slot) and every hole slot carries the loss: keep the right tokens, mend the rest.
        noisy = torch.where(batch.seeded, batch.seed, noisy)
        corrupted = torch.where(batch.seeded.any(-1, keepdim=True), batch.seeded, corrupted)
    canvas_mask = torch.ones_like(batch.clamp_mask, dtype=torch.long)
    decoder_mask = torch.cat([batch.prefix_mask, canvas_mask], dim=1)  # (B, P + C)
    cache = output_cache(enc)
    self_conditioning = None
    if random.random() < cfg.self_conditioning_rate:
        with torch.no_grad():
            first = model.model(
                **cache_kwargs(cache), decoder_input_ids=noisy, decoder_attention_mask=decoder_mask
            )
            # Clamped slots condition on their own token (one-hot); hole slots on the first pass's logits.
            self_conditioning = torch.full((*noisy.shape, vocab), -1e4, device=noisy.device).scatter_(
                -1, noisy.unsqueeze(-1), 0.0
            )  # (B, C, V)
            hole = ~batch.clamp_mask
            self_conditioning[hole] = softcapped_logits(model, first.last_hidden_state[hole])
    out = model.model(
        **cache_kwargs(cache),
        decoder_input_ids=noisy,
        decoder_attention_mask=decoder_mask,
        self_conditioning_logits=self_conditioning,
    )
    weights = corrupted.float() * torch.where(batch.canvas == ids.filler[0], FILLER_WEIGHT, 1.0)  # (B, C)
    logits = softcapped_logits(model, out.last_hidden_state[corrupted])  # (N, V): corrupted slots only
    token_loss = F.cross_entropy(logits, batch.canvas[corrupted], reduction="none")  # (N,)
    diff_loss = (token_loss * weights[corrupted]).sum() / weights.sum().clamp_min(1.0)
    loss = diff_loss + cfg.lm_loss_weight * lm_loss
    supervised = int(corrupted.sum()) + int(batch.prefix_mask[:, 1:].sum())
    info = {"diff_loss": diff_loss.item(), "lm_loss": lm_loss.item(), "supervised": supervised}
    if batch.seeded is not None:  # the seeded rows' own figures, to watch them learn apart
        info.update(_draft_figures(batch, noisy, corrupted, logits, token_loss, weights))
    return loss, info


@torch.no_grad()
def _draft_figures(batch, noisy, corrupted, logits, token_loss, weights) -> dict[str, float]:
    """Seeded slots' loss, and how often the argmax keeps a right draft token or mends a wrong one."""
    on_seeded = batch.seeded[corrupted]  # (N,)
    seeded_weights = weights[corrupted][on_seeded]  # (S,)
    target = batch.canvas[corrupted][on_seeded]  # (S,)
    right = noisy[corrupted][on_seeded] == target  # (S,) the draft already holds the answer
    hit = logits[on_seeded].argmax(-1) == target  # (S,)
    figures = {"draft_loss": ((token_loss[on_seeded] * seeded_weights).sum() / seeded_weights.sum()).item()}
    if right.any():
        figures["draft_kept"] = hit[right].float().mean().item()
    if (~right).any():
        figures["draft_mended"] = hit[~right].float().mean().item()
    return figures


@torch.no_grad()
def heldout_canvas_loss(
    model: DiffusionGemmaForBlockDiffusion,
    texts: list[str],
    tok,
    ids: TokenIds,
    rows: int = 32,
    seed: int = 0,
    draft_share: float = 0.0,
) -> float:
    """The canvas objective (the task the engine serves) on fixed held-out examples and fixed noise.

    The held-out LM loss measures only the causal encoder; this is the decoder's own loss, with the
    same examples, noise rates and noise tokens for every checkpoint that shares the tokenizer, so
    two checkpoints compare directly.  No self-conditioning: the first pass of the engine's loop.
    With ``draft_share`` the one-hole examples are draft-seeded (``heldout_draft_figures``).
    """
    return _heldout_canvas(model, texts, tok, ids, rows, seed, draft_share)["diff_loss"]


@torch.no_grad()
def heldout_draft_figures(
    model: DiffusionGemmaForBlockDiffusion,
    texts: list[str],
    tok,
    ids: TokenIds,
    rows: int = 32,
    seed: int = 0,
) -> dict[str, float]:
    """The draft-seeded objective on fixed held-out examples: every one-hole example seeded, the
    seeded slots' loss and the share of right draft tokens kept and wrong ones mended (argmax)."""
    figures = _heldout_canvas(model, texts, tok, ids, rows, seed, draft_share=1.0)
    return {k: v for k, v in figures.items() if k.startswith("draft_")}


def _heldout_canvas(model, texts, tok, ids, rows, seed, draft_share) -> dict[str, float]:
    """Mean over ``HELDOUT_CANVAS_LAYOUTS`` of each figure ``diffusion_loss`` reports."""
    texts = canvas_loss_texts(texts)
    if not texts:
        raise ValueError("no held-out document has 10 lines or more")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    rng = random.Random(seed)
    gen = torch.Generator(device=device).manual_seed(seed)
    cfg = TrainConfig(self_conditioning_rate=0.0)
    seen: dict[str, list[float]] = {}
    for layout in HELDOUT_CANVAS_LAYOUTS:
        batch = diffusion_batch(texts, tok, ids, rows, layout, rng, draft_share)
        _, info = diffusion_loss(model, batch.to(device), ids, cfg, gen)
        for key, value in info.items():
            seen.setdefault(key, []).append(value)
    model.train(was_training)
    return {key: sum(values) / len(values) for key, values in seen.items()}


def ar_loss(model: LlamaForCausalLM, batch) -> tuple[torch.Tensor, dict]:
    labels = batch.ids.masked_fill(batch.mask == 0, -100)
    out = model(input_ids=batch.ids, attention_mask=batch.mask, labels=labels)
    return out.loss, {"ar_loss": out.loss.item(), "supervised": int(batch.mask[:, 1:].sum())}


def lr_at(step: int, progress: float, cfg: TrainConfig) -> float:
    """Linear warm-up over this run's first steps, then cosine decay over its CPU budget."""
    warm = min(1.0, (step + 1) / cfg.warmup_steps)
    if cfg.cpu_hours is None and cfg.device == "cpu":
        return cfg.lr * warm
    cosine = 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
    return cfg.lr * warm * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * cosine)


def canvas_share_at(progress: float, cfg: TrainConfig) -> float:
    end = cfg.canvas_share if cfg.canvas_share_end is None else cfg.canvas_share_end
    return cfg.canvas_share + (end - cfg.canvas_share) * min(1.0, progress)


def train(cfg: TrainConfig) -> TrainState:
    if not 0.0 <= cfg.draft_share <= 1.0:
        raise ValueError(f"draft_share must be between 0 and 1, got {cfg.draft_share}")
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    device = torch.device(cfg.device)
    gen = torch.Generator(device=device).manual_seed(cfg.seed)
    init = Path(cfg.init) if cfg.init else None
    tok = AutoTokenizer.from_pretrained(init if init else cfg.tokenizer, local_files_only=True)
    ids0 = TokenIds.from_tokenizer(tok, len(tok))  # the tokenizer's ids (the model's vocab may be larger)
    corpus = _Corpus.read(cfg, tok, ids0)
    model, state, ids = _model_and_state(cfg, tok, ids0, init, device)
    opt, ema = optimizer_and_ema((cfg.lr, cfg.weight_decay), model, state, init, device)
    run = _Run(cfg, model, opt, ema, state, tok, ids, corpus, rng, gen, device)
    _loop(run, Path(cfg.out))
    return state


@dataclass
class _Corpus:
    """The run's text: the training documents, their packed token stream (diffusion runs: the
    causal-LM steps' windows) and the held-out split that every save is scored on."""

    texts: list[str]
    stream: np.ndarray | None
    heldout_stream: np.ndarray | None
    heldout_texts: list[str]

    @classmethod
    def read(cls, cfg: TrainConfig, tok: PreTrainedTokenizerBase, ids0: TokenIds) -> _Corpus:
        corpus = Path(cfg.corpus)
        texts = [d["text"] for d in read_jsonl(corpus / "train.jsonl")]
        stream = token_stream(corpus, "train", tok, ids0) if cfg.arch == "diffusion" else None
        heldout_stream = token_stream(corpus, "heldout", tok, ids0) if stream is not None else None
        heldout_texts = (
            [d["text"] for d in read_jsonl(corpus / "heldout.jsonl")] if stream is not None else []
        )
        return cls(texts, stream, heldout_stream, heldout_texts)


@dataclass
class _Run:
    """One training run's working set: what a step reads and updates, and what a save writes."""

    cfg: TrainConfig
    model: PreTrainedModel
    opt: torch.optim.Optimizer
    ema: dict[str, torch.Tensor]  # the averaged weights: what gets saved and evaluated
    state: TrainState
    tok: PreTrainedTokenizerBase
    ids: TokenIds  # over the model's vocab
    corpus: _Corpus
    rng: random.Random  # every batch's draws
    gen: torch.Generator  # the canvas noise
    device: torch.device


def _model_and_state(
    cfg: TrainConfig, tok: PreTrainedTokenizerBase, ids0: TokenIds, init: Path | None, device: torch.device
) -> tuple[PreTrainedModel, TrainState, TokenIds]:
    """The model to train (``init``'s weights, or a new one of ``cfg``'s shape) in train mode on
    ``device``, its counters (``init``'s, or zero), and its TokenIds over the model's vocab."""
    state = TrainState()
    if init and (init / "training_state.json").exists():
        state = TrainState(**json.loads((init / "training_state.json").read_text()))
    if cfg.arch == "diffusion":
        if init:
            model = DiffusionGemmaForBlockDiffusion.from_pretrained(init, dtype=torch.float32)
        else:
            config = build_config(ids0, ModelShape(hidden_size=cfg.hidden_size, num_layers=cfg.num_layers))
            config.difill = {
                # The corpus is Python (corpus.py): the server shows this model's text in no other
                # language (server/model_request.py model_declines).
                "languages": ["python"],
                "max_prefix_tokens": MAX_PREFIX_TOKENS,
                "trained_canvas_lengths": list(CANVAS_LENGTHS),
            }
            model = DiffusionGemmaForBlockDiffusion(config)
        model.config._experts_implementation = "eager"
        model.config.text_config._experts_implementation = "eager"
        vocab_size = model.config.text_config.vocab_size
    else:
        model = (LlamaForCausalLM.from_pretrained(init, dtype=torch.float32) if init
                 else build_ar_model(len(tok), cfg.hidden_size, cfg.num_layers, ids0))  # fmt: skip
        vocab_size = model.config.vocab_size
    ids = TokenIds.from_tokenizer(tok, vocab_size)
    model.to(device)
    model.train()
    return model, state, ids


def _loop(run: _Run, out: Path) -> None:
    """Steps until the wall-clock cap, the CPU budget or a SIGTERM / SIGINT; a log record every 20
    steps, a save every ``save_every_minutes`` and one at the end."""
    cfg, state = run.cfg, run.state
    log_path = out / "train_log.jsonl"
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    last_save = start
    cpu_start = run_cpu_start = cpu_seconds()
    window = _Window()
    deadline = start + cfg.minutes * 60
    budget_s = cfg.cpu_hours * 3600 if cfg.cpu_hours is not None else None
    run_step = 0
    stop_requested = []  # SIGTERM / SIGINT end the run after the current step, with a save
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stop_requested.append(signum))
    while time.time() < deadline and not stop_requested:
        if budget_s:  # CPU runs spend CPU-hours; the schedule follows them, pauses and all
            progress = (cpu_seconds() - run_cpu_start) / budget_s
        else:  # GPU runs spend wall time; CPU runs without a budget keep a constant lr
            progress = (time.time() - start) / (cfg.minutes * 60) if run.device.type == "cuda" else 0.0
        if progress >= 1.0:
            break
        for group in run.opt.param_groups:
            group["lr"] = lr_at(run_step, progress, cfg)
        run_step += 1
        info, tokens, lm_step = _step(run, progress)
        window.add(info["supervised"], tokens, lm_step)
        if state.step % 20 == 0:
            _append_log(log_path, window.record(run, info, start, cpu_start))
            window = _Window()
        if time.time() - last_save > cfg.save_every_minutes * 60:
            _save_run(run, out, cpu_start, last_save)
            cpu_start = cpu_seconds()
            last_save = time.time()
    _save_run(run, out, cpu_start, last_save)


def _step(run: _Run, progress: float) -> tuple[dict, int, bool]:
    """One optimizer step, the EMA's update and the counters'; returns the step's figures, its
    tokens through the model and whether it was a packed causal-LM step."""
    loss, info, tokens, lm_step = _loss(run, progress)
    state = run.state
    if not math.isfinite(loss.item()):
        raise RuntimeError(f"loss is {loss.item()} at step {state.step}")
    run.opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(run.model.parameters(), 1.0)
    run.opt.step()
    with torch.no_grad():
        decay_now = min(run.cfg.ema_decay, (1 + state.step) / (10 + state.step))
        for k, v in run.model.state_dict().items():
            if k in run.ema:
                run.ema[k].mul_(decay_now).add_(v.float(), alpha=1 - decay_now)
    state.step += 1
    state.tokens += tokens
    state.target_tokens += info["supervised"]
    return info, tokens, lm_step


def _loss(run: _Run, progress: float) -> tuple[torch.Tensor, dict, int, bool]:
    """One batch's loss: a packed causal-LM step or a canvas step (the baseline: an AR step), as
    (loss, figures, tokens through the model, whether it was a causal-LM step).  The draws from
    ``run.rng`` come in one order (layout, then kind, then batch) so that a seed replays a run."""
    cfg, rng, ids, device = run.cfg, run.rng, run.ids, run.device
    prefix_length = rng.choices(PREFIX_LENGTHS, PREFIX_WEIGHTS)[0]
    canvas_length = rng.choice(CANVAS_LENGTHS)
    lm_step = cfg.arch == "diffusion" and rng.random() >= canvas_share_at(progress, cfg)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.bf16):
        if lm_step:
            windows = packed_batch(run.corpus.stream, cfg.batch_size, cfg.lm_length, rng, ids.bos).to(device)
            loss = causal_lm_loss(run.model, windows)
            info = {"packed_lm_loss": loss.item(), "supervised": windows.numel() - cfg.batch_size}
            tokens = windows.numel()
        elif cfg.arch == "diffusion":
            layout = (prefix_length, canvas_length)
            texts, batch_size = run.corpus.texts, cfg.batch_size
            batch = diffusion_batch(texts, run.tok, ids, batch_size, layout, rng, draft_share=cfg.draft_share)
            loss, info = diffusion_loss(run.model, batch.to(device), ids, cfg, run.gen)
            tokens = batch.prefix.numel() + batch.canvas.numel()
        else:
            batch = ar_batch(
                run.corpus.texts, run.tok, ids, cfg.batch_size, prefix_length, canvas_length, rng
            )
            loss, info = ar_loss(run.model, batch.to(device))
            tokens = batch.ids.numel()
    return loss, info, tokens, lm_step


@dataclass
class _Window:
    """The steps since the last log record: their throughput and their share of causal-LM steps."""

    supervised: int = 0
    tokens: int = 0
    steps: int = 0
    lm_steps: int = 0
    since: float = field(default_factory=time.time)

    def add(self, supervised: int, tokens: int, lm_step: bool) -> None:
        self.supervised += supervised
        self.tokens += tokens
        self.steps += 1
        self.lm_steps += int(lm_step)

    def record(self, run: _Run, info: dict, start: float, cpu_start: float) -> dict:
        """The log record after the window's last step (``info``: that step's figures)."""
        dt = time.time() - self.since
        return {
            "step": run.state.step, "elapsed_min": round((time.time() - start) / 60, 2),
            **{k: round(v, 4) for k, v in info.items() if k != "supervised"},
            "target_tok_s": round(self.supervised / dt), "tok_s": round(self.tokens / dt),
            "lm_step_share": round(self.lm_steps / self.steps, 2),
            "lr": run.opt.param_groups[0]["lr"],
            "cpu_hours": round(run.state.cpu_hours + (cpu_seconds() - cpu_start) / 3600, 4),
        }  # fmt: skip


def _save_run(run: _Run, out: Path, cpu_start: float, wall_start: float) -> None:
    """Log the EMA's held-out losses, add the time since the last save to the budget, save ``out/latest``."""
    _log_heldout(run, cpu_start, out / "train_log.jsonl")
    spend(run.model, run.state, cpu_start, wall_start)
    save_latest(run.model, run.ema, run.opt, run.state, run.tok, out)


def _log_heldout(run: _Run, cpu_start: float, log_path: Path) -> None:
    """Held-out LM and canvas losses of the EMA weights (what ships), against cumulative CPU-hours."""
    model, state, corpus, tok, ids = run.model, run.state, run.corpus, run.tok, run.ids
    if corpus.heldout_stream is None:
        return
    live = {k: v.detach().clone() for k, v in model.state_dict().items()}
    model.load_state_dict(run.ema, strict=False)
    record = {
        "step": state.step,
        "heldout_lm_loss": round(heldout_lm_loss(model, corpus.heldout_stream), 4),
    }
    if canvas_loss_texts(corpus.heldout_texts):
        record["heldout_canvas_loss"] = round(heldout_canvas_loss(model, corpus.heldout_texts, tok, ids), 4)
        drafts = heldout_draft_figures(model, corpus.heldout_texts, tok, ids)
        record.update({f"heldout_{k}": round(v, 4) for k, v in drafts.items()})
    model.load_state_dict(live)
    record["cpu_hours"] = round(state.cpu_hours + (cpu_seconds() - cpu_start) / 3600, 4)
    _append_log(log_path, record)


def _append_log(log_path: Path, record: dict) -> None:
    with open(log_path, "a") as f:
        f.write(json.dumps(record) + "\n")

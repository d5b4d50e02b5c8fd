"""The trainer's batches match the engine's canvas, and a training step runs."""

from __future__ import annotations

import json
import random

import pytest
import torch
import torch.nn.functional as F
from transformers import DiffusionGemmaForBlockDiffusion

from lab.training.batches import ar_batch, corrupt, diffusion_batch, example_segments
from lab.training.corpus import BENCHMARK_NAMES, is_heldout
from lab.training.examples import EVAL_SHAPES, SHAPES, sample_eval_example, sample_example
from lab.training.train import TrainConfig, diffusion_loss, heldout_canvas_loss

SOURCE = "\n".join(
    [
        "import os",
        "",
        "",
        "def main(argv):",
        "    path = os.path.join(argv[0], 'data')",
        "    if not os.path.exists(path):",
        "        raise SystemExit(1)",
        "    with open(path) as f:",
        "        return f.read()",
        "",
        "",
        "class Box:",
        "    def __init__(self, width, height):",
        "        self.width = width",
        "        self.height = height",
        "",
        "    def area(self):",
        "        return self.width * self.height",
        "",
    ]
)


def test_every_shape_rebuilds_the_document():
    rng = random.Random(0)
    for shape in SHAPES:
        made = 0
        for _ in range(50):
            ex = sample_example(SOURCE, rng, shape)
            if ex is None:
                continue
            made += 1
            if shape == "continuation":  # the file ends after the middle: no suffix at all
                assert ex.suffix == "" and SOURCE.startswith(ex.document)
            else:
                assert ex.document == SOURCE, shape
            assert all(ex.middles), shape
        assert made, f"no {shape} example"


def test_whole_line_at_column_zero_ends_with_a_newline():
    rng = random.Random(1)
    seen = 0
    for _ in range(100):
        ex = sample_example(SOURCE, rng, "whole_line")
        if ex and ex.prefix.endswith("\n") and not ex.suffix.startswith("\n"):
            assert ex.middles[0].endswith("\n")
            seen += 1
    assert seen


def test_eval_shapes_rebuild_the_document():
    rng = random.Random(2)
    for shape in EVAL_SHAPES:
        made = 0
        for _ in range(20):
            ex = sample_eval_example(SOURCE, rng, shape)
            if ex is None:
                continue
            made += 1
            assert ex.document == SOURCE, shape
        assert made, f"no {shape} example"  # else the loop checked nothing


def test_batch_canvas_is_middle_then_filler_then_clamped_suffix(loaded):
    tok, ids = loaded.tokenizer, loaded.ids
    rng = random.Random(3)
    batch = diffusion_batch([SOURCE], tok, ids, batch_size=8, layout=(32, 32), rng=rng)
    assert batch.canvas.shape == (8, 32) and batch.prefix.shape[0] == 8
    for row in range(8):
        holes = (~batch.clamp_mask[row]).nonzero().flatten().tolist()
        assert holes, "every row has a hole"
        # No banned special token inside a hole target.
        assert not torch.isin(batch.canvas[row][holes], torch.tensor(ids.banned_in_hole)).any()


def test_example_segments_size_holes_to_their_middles(loaded):
    rng = random.Random(4)
    ex = sample_example(SOURCE, rng, "rest_of_line")
    segments, middles, _ = example_segments(ex, loaded.tokenizer, 64, rng)
    assert isinstance(segments[0], int) and segments[0] >= len(middles[0])


def test_corruption_never_touches_clamped_slots():
    canvas = torch.arange(20).view(2, 10)
    clamp = torch.zeros(2, 10, dtype=torch.bool)
    clamp[:, 6:] = True
    noisy, corrupted = corrupt(canvas, clamp, vocab_size=1000, generator=torch.Generator().manual_seed(0))
    assert torch.equal(noisy[clamp], canvas[clamp])
    assert not corrupted[clamp].any() and corrupted.any(dim=1).all()


def test_a_training_step_lowers_the_loss_on_a_repeated_batch(tiny_model_dir, loaded):
    model = DiffusionGemmaForBlockDiffusion.from_pretrained(tiny_model_dir)
    model.config._experts_implementation = "eager"
    model.train()
    rng = random.Random(5)
    batch = diffusion_batch([SOURCE], loaded.tokenizer, loaded.ids, 4, (32, 32), rng)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    cfg = TrainConfig(self_conditioning_rate=0.0)
    losses = []
    for _ in range(8):
        loss, info = diffusion_loss(model, batch, loaded.ids, cfg, torch.Generator().manual_seed(0))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        assert info["supervised"] > 0
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("self_conditioning_rate", [0.0, 1.0])
def test_the_canvas_loss_equals_the_full_logits_loss_it_shortcuts(
    tiny_model_dir, loaded, self_conditioning_rate
):
    """diffusion_loss runs the LM head only where a loss is taken; the result is the full-head loss."""
    from difill.engine.hf_compat import cache_kwargs, output_cache
    from lab.training.batches import FILLER_WEIGHT

    model = DiffusionGemmaForBlockDiffusion.from_pretrained(tiny_model_dir)
    model.config._experts_implementation = "eager"
    ids, vocab = loaded.ids, model.config.text_config.vocab_size
    batch = diffusion_batch([SOURCE], loaded.tokenizer, ids, 4, (32, 32), random.Random(3))
    cfg = TrainConfig(self_conditioning_rate=self_conditioning_rate)
    with torch.no_grad():
        _, info = diffusion_loss(model, batch, ids, cfg, torch.Generator().manual_seed(7))

        # The reference: every position through the head, the loss masked afterwards.
        enc = model.model.encoder(input_ids=batch.prefix, attention_mask=batch.prefix_mask, use_cache=True)
        lm_logits = model.lm_head(enc.last_hidden_state).float()[:, :-1]
        targets = batch.prefix[:, 1:].masked_fill(batch.prefix_mask[:, 1:] == 0, -100)
        lm_ref = F.cross_entropy(lm_logits.reshape(-1, vocab), targets.reshape(-1), ignore_index=-100)
        noisy, corrupted = corrupt(batch.canvas, batch.clamp_mask, vocab, torch.Generator().manual_seed(7))
        mask = torch.cat([batch.prefix_mask, torch.ones_like(batch.clamp_mask, dtype=torch.long)], dim=1)
        cache = output_cache(enc)
        conditioning = None
        if self_conditioning_rate:
            first = model(**cache_kwargs(cache), decoder_input_ids=noisy, decoder_attention_mask=mask).logits
            one_hot = torch.full_like(first, -1e4).scatter_(-1, noisy.unsqueeze(-1), 0.0)
            conditioning = torch.where(batch.clamp_mask.unsqueeze(-1), one_hot, first)
        logits = model(**cache_kwargs(cache), decoder_input_ids=noisy, decoder_attention_mask=mask,
                       self_conditioning_logits=conditioning).logits  # fmt: skip
        weights = corrupted.float() * torch.where(batch.canvas == ids.filler[0], FILLER_WEIGHT, 1.0)
        token_loss = F.cross_entropy(logits.reshape(-1, vocab), batch.canvas.reshape(-1), reduction="none")
        diff_ref = (token_loss * weights.reshape(-1)).sum() / weights.sum()
    assert info["lm_loss"] == pytest.approx(lm_ref.item(), rel=1e-5)
    assert info["diff_loss"] == pytest.approx(diff_ref.item(), rel=1e-5)


def test_heldout_canvas_loss_is_fixed_and_falls_when_the_canvas_objective_is_learned(tiny_model_dir, loaded):
    model = DiffusionGemmaForBlockDiffusion.from_pretrained(tiny_model_dir)
    model.config._experts_implementation = "eager"
    held = [SOURCE]
    before = heldout_canvas_loss(model, held, loaded.tokenizer, loaded.ids, rows=4)
    # Same examples and noise every call, whatever the global random state did in between.
    random.random()
    assert heldout_canvas_loss(model, held, loaded.tokenizer, loaded.ids, rows=4) == before
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    cfg = TrainConfig(self_conditioning_rate=0.0)
    rng, gen = random.Random(1), torch.Generator().manual_seed(1)
    for _ in range(10):
        batch = diffusion_batch(held, loaded.tokenizer, loaded.ids, 4, (32, 32), rng)
        loss, _ = diffusion_loss(model, batch, loaded.ids, cfg, gen)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert model.training, "the held-out pass gives the model back in the mode it found it"
    assert heldout_canvas_loss(model, held, loaded.tokenizer, loaded.ids, rows=4) < before


def test_ar_batch_is_psm_ordered(loaded):
    batch = ar_batch([SOURCE], loaded.tokenizer, loaded.ids, 2, 32, 32, random.Random(6))
    vocab = loaded.tokenizer.get_vocab()
    for row in batch.ids.tolist():
        p, s, m = (
            row.index(vocab["<|fim_prefix|>"]),
            row.index(vocab["<|fim_suffix|>"]),
            row.index(vocab["<|fim_middle|>"]),
        )
        assert p < s < m


def test_heldout_split_is_deterministic_and_benchmarks_are_excluded():
    assert is_heldout("python-stdlib/json/decoder.py") == is_heldout("python-stdlib/json/decoder.py")
    share = sum(is_heldout(f"pkg/mod_{i}.py") for i in range(2000)) / 2000
    assert 0.01 < share < 0.06
    assert BENCHMARK_NAMES.search("datasets/human_eval/data.py")
    assert BENCHMARK_NAMES.search("mbpp/tasks.py")


def test_token_stream_packs_documents_and_a_packed_lm_step_learns(tmp_path, tiny_model_dir, loaded):
    from lab.training.packed import causal_lm_loss, heldout_lm_loss, packed_batch, token_stream

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    docs = [SOURCE, SOURCE.replace("Box", "Crate")]
    (corpus / "train.jsonl").write_text(
        "".join(json.dumps({"path": f"d{i}", "text": t}) + "\n" for i, t in enumerate(docs))
    )
    stream = token_stream(corpus, "train", loaded.tokenizer, loaded.ids)
    ids = loaded.ids
    assert stream[0] == ids.bos and stream[-1] == ids.eos and int((stream == ids.bos).sum()) == 2
    assert loaded.tokenizer.decode(stream[1 : list(stream).index(ids.eos)].tolist()) == SOURCE
    assert list(corpus.glob("train.*.u16")), "the stream is cached beside the corpus"
    assert (token_stream(corpus, "train", loaded.tokenizer, loaded.ids) == stream).all()

    model = DiffusionGemmaForBlockDiffusion.from_pretrained(tiny_model_dir)
    model.config._experts_implementation = "eager"
    model.train()
    rng = random.Random(0)
    windows = packed_batch(stream, 4, 48, rng)
    assert windows.shape == (4, 48)
    opened = packed_batch(stream, 4, 48, rng, bos=ids.bos)
    assert opened.shape == (4, 48) and (opened[:, 0] == ids.bos).all()  # as the engine's prefixes start
    before = heldout_lm_loss(model, stream, windows=4, length=48)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(10):
        loss = causal_lm_loss(model, packed_batch(stream, 4, 48, rng))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert heldout_lm_loss(model, stream, windows=4, length=48) < before


def test_sigterm_ends_a_run_with_a_save(tmp_path, tiny_model_dir, loaded):
    """A session stops training with `kill <pid>`: the run saves its last steps and exits 0."""
    import os
    import signal
    import subprocess
    import sys
    import time

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    line = json.dumps({"path": "a.py", "text": SOURCE}) + "\n"
    (corpus / "train.jsonl").write_text(line * 4)
    (corpus / "heldout.jsonl").write_text(line)
    out = tmp_path / "run"
    code = (
        "from lab.training.train import TrainConfig, train\n"
        f"train(TrainConfig(out={str(out)!r}, corpus={str(corpus)!r}, init={str(tiny_model_dir)!r}, "
        "minutes=5, threads=1, batch_size=2, canvas_share=0.5, lm_length=32))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    log = out / "train_log.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (log.exists() and log.read_text().count('"step"') >= 1):
        time.sleep(0.5)
    assert log.exists(), "the run never logged a step"
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    state = json.loads((out / "latest" / "training_state.json").read_text())
    assert state["step"] >= 20 and state["cpu_hours"] > 0
    held = [json.loads(r) for r in log.read_text().splitlines() if "heldout_lm_loss" in r]
    assert held and "heldout_canvas_loss" in held[-1], "the final save logs both held-out losses"


def test_draft_seeded_rows_start_from_the_draft_and_target_the_true_middle(loaded, monkeypatch):
    """A seeded row's input is the engine's seeded canvas (draft, then filler, in the hole); its
    targets are the true middle, and every hole slot is seeded."""
    from difill.engine.tokens import draft_tokens, encode
    from lab.training import batches

    tok, ids = loaded.tokenizer, loaded.ids
    drafts = []

    def fixed_draft(ex, middle, donor, tok_, ids_, rng):
        draft = draft_tokens(tok, ids, "wrong_name(1)")
        drafts.append((ex, draft))
        return draft

    monkeypatch.setattr(batches, "training_draft", fixed_draft)
    batch = diffusion_batch([SOURCE], tok, ids, 8, (32, 32), random.Random(7), draft_share=1.0)
    seeded_rows = batch.seeded.any(-1).nonzero().flatten().tolist()
    assert len(seeded_rows) == len(drafts) > 0
    for row, (ex, draft) in zip(seeded_rows, drafts, strict=True):
        hole = (~batch.clamp_mask[row]).nonzero().flatten()
        assert torch.equal(batch.seeded[row], ~batch.clamp_mask[row])  # every hole slot, nothing else
        start, size = int(hole[0]), len(hole)
        seed = batch.seed[row, start : start + size].tolist()
        assert seed == (draft + [ids.filler[0]] * size)[:size]
        middle = encode(tok, ex.middles[0])
        assert batch.canvas[row, start : start + len(middle)].tolist() == middle
        assert torch.equal(batch.seed[row][batch.clamp_mask[row]], batch.canvas[row][batch.clamp_mask[row]])


def test_draft_seeded_batches_mix_exact_retrieved_and_spoiled_drafts(loaded):
    tok, ids = loaded.tokenizer, loaded.ids
    batch = diffusion_batch([SOURCE], tok, ids, 64, (64, 48), random.Random(8), draft_share=1.0)
    rows = batch.seeded.any(-1)
    assert rows.float().mean() > 0.5  # every one-hole example (most shapes) is seeded
    same = [
        torch.equal(batch.seed[r][batch.seeded[r]], batch.canvas[r][batch.seeded[r]])
        for r in range(64)
        if rows[r]
    ]
    assert any(same) and not all(same)
    banned = torch.tensor(ids.banned_in_hole)
    assert not torch.isin(batch.seed[batch.seeded], banned).any()


def test_prompt_lookup_drafts_come_from_the_training_document():
    from lab.training.drafts import retrieved_draft
    from lab.training.examples import InfillExample

    prefix = "total = compute(width, height)\nprint(total)\ntotal = compute("
    ex = InfillExample(prefix, ["width, height)"], [], "\nprint(total)\n", "rest_of_line")
    assert retrieved_draft(ex, random.Random(0)) == "width, height)"


def test_a_spoiled_middle_differs_and_holds_no_special_token(loaded):
    from lab.training.drafts import spoiled_middle

    rng = random.Random(9)
    middle = list(range(100, 130))
    spoiled = [spoiled_middle(middle, [5, 6, 7, 8], loaded.ids, rng) for _ in range(50)]
    assert all(s != middle for s in spoiled)
    banned = set(loaded.ids.banned_in_hole) | set(loaded.ids.filler)
    assert not any(banned & set(s) for s in spoiled)


def test_the_loss_of_a_draft_seeded_row_covers_every_hole_slot(tiny_model_dir, loaded):
    model = DiffusionGemmaForBlockDiffusion.from_pretrained(tiny_model_dir)
    model.config._experts_implementation = "eager"
    batch = diffusion_batch(
        [SOURCE], loaded.tokenizer, loaded.ids, 8, (32, 32), random.Random(10), draft_share=1.0
    )
    cfg = TrainConfig(self_conditioning_rate=0.0)
    plain = batch.seeded.any(-1).logical_not()
    _, info = diffusion_loss(model, batch, loaded.ids, cfg, torch.Generator().manual_seed(0))
    prefix_targets = int(batch.prefix_mask[:, 1:].sum())
    seeded_slots = int(batch.seeded.sum())
    # Seeded rows: all their hole slots; plain rows: at least one corrupted slot each.
    assert info["supervised"] - prefix_targets >= seeded_slots + int(plain.sum())
    assert info["draft_loss"] > 0


def test_heldout_draft_figures_are_fixed_and_say_what_was_kept_and_mended(tiny_model_dir, loaded):
    from lab.training.train import heldout_draft_figures

    model = DiffusionGemmaForBlockDiffusion.from_pretrained(tiny_model_dir)
    model.config._experts_implementation = "eager"
    held = [SOURCE] * 3
    figures = heldout_draft_figures(model, held, loaded.tokenizer, loaded.ids, rows=4)
    assert set(figures) == {"draft_loss", "draft_kept", "draft_mended"}
    assert 0.0 <= figures["draft_kept"] <= 1.0 and 0.0 <= figures["draft_mended"] <= 1.0
    assert heldout_draft_figures(model, held, loaded.tokenizer, loaded.ids, rows=4) == figures

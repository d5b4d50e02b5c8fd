"""Issue 61, the spike: a project's adaptation corpus holds out exactly the files of the fresh
cursor's cases (drawn as lab/fresh_cursor.py draws them), and trains on every other Python file."""

from __future__ import annotations

import json

from lab import adapt
from lab import fresh_cursor as fc
from tests.lab.test_fresh_cursor import APP, repository


def test_the_case_files_are_held_out_of_the_training_text(tmp_path):
    git_dir, commit = repository(tmp_path / "repo")
    out = tmp_path / "corpus"
    assert adapt.main(["corpus", "--repo", f"demo={git_dir}@{commit}", "--out", str(out)]) == 0
    project = fc.export("demo", git_dir, commit, tmp_path / "drawn")
    held = {case.path for case in fc.draw_cases(project, 40, 3, 0)}
    assert held == {"pkg/app.py", "pkg/other.go"}
    train = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    heldout = [json.loads(line) for line in (out / "heldout.jsonl").read_text().splitlines()]
    assert [d["path"] for d in heldout] == ["pkg/app.py"]  # the Python ones (the model's language)
    assert [d["path"] for d in train] == ["tests/test_app.py"]  # tests are the project's text too
    assert all(APP not in d["text"] for d in train)
    assert json.loads((out / "manifest.json").read_text())["held_out"] == sorted(held)


def test_the_secrets_policy_holds_for_the_training_text(tmp_path):
    # Nothing the secrets policy denies reaches training: a denied file is not read, and a key in
    # a file that is read is redacted, as where text leaves for a model.
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials.py").write_text("SECRET = 1\n")
    key = "AKIA" + "Q" * 16
    (tmp_path / "app.py").write_text(f"KEY = '{key}'\nprint(KEY)\n")
    train, heldout = adapt.split_project(tmp_path, held=set())
    assert [d["path"] for d in train] == ["app.py"] and heldout == []
    assert key not in train[0]["text"] and "print(KEY)" in train[0]["text"]


def test_train_takes_the_short_run_knobs(monkeypatch):
    """A short adaptation run saves its weight average and warms up over its own few steps:
    `difill train --ema-decay --warmup-steps` reach the trainer (the default 0.998 over a few
    hundred steps would save weights still mostly the shipped ones)."""
    from difill.cli import build_parser
    from lab import commands
    from lab.training import train

    seen = []
    monkeypatch.setattr(train, "train", lambda cfg: seen.append(cfg) or train.TrainState())
    args = build_parser().parse_args(
        ["train", "--init", "shipped", "--ema-decay", "0.99", "--warmup-steps", "20"]
    )
    assert commands.train_model(args) == 0
    assert (seen[0].ema_decay, seen[0].warmup_steps) == (0.99, 20)
    defaults = build_parser().parse_args(["train"])
    assert (defaults.ema_decay, defaults.warmup_steps) == (0.998, 200)  # the pretraining recipe's


def test_loss_reports_each_models_held_out_losses_on_the_case_files(tmp_path, tiny_model_dir, capsys):
    git_dir, commit = repository(tmp_path / "repo")
    out = tmp_path / "corpus"
    adapt.main(["corpus", "--repo", f"demo={git_dir}@{commit}", "--out", str(out)])
    capsys.readouterr()
    model = str(tiny_model_dir)
    assert adapt.main(["loss", "--corpus", str(out), "--model", model, "--model", model]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [row["model"] for row in rows] == [model, model]
    assert rows[0] == rows[1]  # fixed windows, examples and noise: the same weights score the same
    assert 0 < rows[0]["heldout_lm_loss"] < 20 and 0 < rows[0]["heldout_canvas_loss"] < 20

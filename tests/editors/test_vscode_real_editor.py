"""VS Code for real: editors/vscode/scripts/real-editor-test.sh (code-server in Chromium driven by
playwright-core) from pytest. Opt-in with DIFILL_REAL_EDITOR=1: its first run installs Chromium,
Node 24 and code-server (~5 min, ~1.2 GB), which CI does not do by default."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "editors" / "vscode" / "scripts" / "real-editor-test.sh"


@pytest.mark.slow
def test_vsix_in_code_server_shows_ghost_text_reviews_edits_and_accepts_next_edits(tmp_path):
    """...and (issue 63) a name half typed over another is never offered as a next edit, and Tab
    pressed as the hints say takes ghost text first and never corrupts the code; (issue 66) after
    kill -9 of the server, the status item says restarting and ghost text comes back unasked."""
    if os.environ.get("DIFILL_REAL_EDITOR") != "1":
        pytest.skip("opt-in: set DIFILL_REAL_EDITOR=1 (installs code-server + Chromium on first run)")
    env = dict(os.environ)
    env.setdefault("DIFILL_SCREENSHOT_DIR", str(tmp_path))
    proc = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # The measured figures, for `pytest -s` (editors/README.md records them).
    print(
        "\n".join(
            out
            for out in proc.stdout.splitlines()
            if re.search(r"ghost text shown:|Ctrl\+Right|Esc hid|code action:|loading|re-ask|recovery:", out)
        )
    )
    for line in (
        "ghost text shown",
        "Ctrl+Right accepted the next word",
        "Tab accepted",
        "the diff is shown",
        "Esc rejected the proposal: the document is unchanged",
        "Accept applied exactly the proposal",
        "one Undo took the accepted edit back",
        "a proposal on a changed document was refused, nothing applied",
        "code action: Edit selection with instruction... asked for the instruction, then proposed",
        'loading status: the status bar said "difill loading',
        "typed while loading: the status bar still said",
        "re-ask on ready: ghost text shown",
        # Issue 35: rename a parameter, accept the follow-up with Tab.
        "next edit shown as a diff",
        "Tab jumped to the next edit",
        "Tab accepted the next edit: the rename applied at the next use",
        "the follow-up was offered, and Esc dismissed it: the document is unchanged",
        # Issue 63: `req` typed over `requirement`, then Tab as the hints say.
        "typed `req` over `requirement`: no next edit offered while typing",
        "as the hints said: the code is not corrupted",
        # Issue 66: kill -9 of the server; the status says so, ghost text comes back unasked.
        'recovery: the status item said "difill restarting"',
        "recovery: ghost text back in the same editor",
    ):
        assert line in proc.stdout, line
    if "(ghost text shown)" in proc.stdout:  # the tiny random model's ghost text came
        assert "the first Tab took the ghost text" in proc.stdout
    # The Quick Fix menu's "Rewrite selection" to the first draft on screen: a deadline (issue 40;
    # Neovim's was 4 s), not a benchmark.
    drafts = [
        int(ms) for ms in re.findall(r"code action: first draft (\d+) ms after the menu choice", proc.stdout)
    ]
    assert len(drafts) == 3, proc.stdout[-4000:]
    assert max(drafts) <= 1000, drafts
    shots = Path(env["DIFILL_SCREENSHOT_DIR"])
    for name in (
        "vscode-ghost-text.png",
        "vscode-edit.png",
        "vscode-proposal-diff.png",
        "vscode-proposal-accepted.png",
        "vscode-ready-reask.png",
        "vscode-next-edit.png",
        "vscode-typo-typed.png",
        "vscode-typo-after-tabs.png",
        "vscode-recovered.png",
    ):
        assert (shots / name).exists(), name

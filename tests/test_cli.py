"""`difill` as a user runs it: positions as editors show them, JSON output, clear errors, help for every flag."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from difill.server.fill_command import parse_location, split_at


def test_location_is_path_line_col():
    assert parse_location("a/b.py:3:7") == (parse_location("a/b.py")[0], 3, 7)
    assert parse_location("b.py")[1:] == (None, None)


def test_split_at_uses_one_based_line_and_column():
    prefix, suffix = split_at("ab\ncd\n", 2, 2)
    assert (prefix, suffix) == ("ab\nc", "d\n")


def test_split_at_end_of_line_and_start_of_file():
    assert split_at("ab\ncd\n", 1, 3) == ("ab", "\ncd\n")
    assert split_at("ab\n", 1, 1) == ("", "ab\n")


def test_split_at_counts_characters_not_bytes():
    assert split_at("한국어 = 1\n", 1, 4) == ("한국어", " = 1\n")


def test_position_outside_the_file_is_a_clear_error():
    with pytest.raises(SystemExit, match="line 9"):
        split_at("a\n", 9, 1)
    with pytest.raises(SystemExit, match="column 5"):
        split_at("ab\n", 1, 5)


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "difill", *args], capture_output=True, text=True, timeout=120
    )


def test_fill_prints_json_with_text_steps_and_ms(tiny_model_dir, tmp_path):
    source = tmp_path / "x.py"
    source.write_text("def f(a, b):\n    return \n")
    done = run_cli("fill", f"{source}:2:12", "--model", str(tiny_model_dir), "--json", "--steps", "3")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert {"text", "steps", "ms"} <= out.keys() and 1 <= out["steps"] <= 3


def test_fill_holes_prints_the_whole_file(tiny_model_dir, tmp_path):
    source = tmp_path / "h.py"
    source.write_text("x = <|hole|>\ny = <|hole|>\n")
    done = run_cli("fill", str(source), "--holes", "--model", str(tiny_model_dir), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert len(out["middles"]) == 2 and "<|hole|>" not in out["text"]


def test_missing_model_says_how_to_fix_it(tmp_path):
    source = tmp_path / "x.py"
    source.write_text("x = 1\n")
    done = run_cli("fill", f"{source}:1:5", "--model", str(tmp_path / "no-model"))
    assert done.returncode != 0
    assert "does not exist" in done.stderr and "--model" in done.stderr


def test_fill_holes_without_a_marker_says_so(tmp_path):
    source = tmp_path / "plain.py"
    source.write_text("x = 1\n")
    done = run_cli("fill", str(source), "--holes", "--model", str(tmp_path / "never-loaded"))
    assert done.returncode != 0 and "no hole marker" in done.stderr and "<|hole|>" in done.stderr
    assert done.stdout == ""


def test_fill_prints_what_the_server_would_show(tiny_model_dir, tmp_path):
    """Mid-line, the server's filters keep a suggestion on one line; the JSON keeps the model's raw text."""
    source = tmp_path / "y.py"
    source.write_text("def f(a, b):\n    return a + b\n")
    done = run_cli("fill", f"{source}:2:12", "--model", str(tiny_model_dir), "--json", "--steps", "4")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "\n" not in out["text"] and "model_text" in out and out["stats"]["decoder_forwards"] >= 1


def test_a_file_that_is_not_utf8_is_a_clear_error(tmp_path):
    source = tmp_path / "latin1.py"
    source.write_bytes("name = 'café'\n".encode("latin-1"))
    done = run_cli("fill", f"{source}:1:5", "--model", str(tmp_path / "never-loaded"))
    assert done.returncode != 0 and "not UTF-8" in done.stderr


def test_importing_the_cli_and_a_remote_fill_loads_neither_torch_nor_the_lsp_types():
    """``difill fill --remote`` must start fast: torch, transformers and lsprotocol take seconds."""
    code = (
        "import sys\n"
        "import difill.cli, difill.server.suggestion_path\n"
        "from difill.engine.backends import BackendSpec, make_backend\n"
        "make_backend(BackendSpec(remote='http://127.0.0.1:9'))\n"
        "print(sorted(m for m in ('torch', 'transformers', 'lsprotocol', 'pygls') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_every_command_and_flag_has_help():
    from difill.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, p in [("difill", parser), *commands.choices.items()]:
        for action in p._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    # A command's one-line help in `difill -h` lives in its choice action, not in its own parser.
    helps = {choice.dest: choice.help for choice in commands._choices_actions}
    missing += [f"difill {name}" for name in commands.choices if not (helps.get(name) or "").strip()]
    assert not missing, f"no help text: {', '.join(missing)}"


# Every command's arguments, in the order `-h` lists them: the command table in cli.py is data, and
# an entry lost or moved there would otherwise pass every other test.
OPTIONS = {
    "serve": "--model --device --engine --gguf --llamacpp-worker --llamacpp-threads --llamacpp-gpu-layers "
    "--tcp --host --port --allow-remote --log-file --log-level",
    "fill": "location --model --device --engine --gguf --llamacpp-worker --llamacpp-threads "
    "--llamacpp-gpu-layers --json --raw --holes --typing --marker --max-tokens --steps --remote --remote-canvas",
    "serve-http": "--model --device --host --port --max-concurrent --batch-window-ms --header-timeout "
    "--body-timeout --tls-cert --tls-key --log-level",
    "build-native": "--source --cuda --metal --portable --jobs --no-patches",
    "export-gguf": "model_dir out --type",
    "corpus": "--out --cache",
    "tokenizer": "--corpus --out --vocab-size",
    "train": "--arch --out --corpus --tokenizer --init --minutes --cpu-hours --threads --seed --lr --warmup-steps --ema-decay "
    "--canvas-share --canvas-share-end --draft-share --hidden-size --num-layers --save-every-minutes "
    "--batch-size --device --bf16",
    "ship": "source --corpus --min-token-prob",
    "eval": "--model --ar-model --no-ar --corpus --cases --seed --typing-files --typing-lines "
    "--workspace-cases --workspace-typing-files --workspace-packages --cache --json --revise "
    "--min-token-prob --context-drafts --snippet-tokens --filler --record --next-edit --next-edit-cases "
    "--next-edit-rows",
    "bench": "--model --ar-model --quick --json --typing --typing-repos --server-python --plot --engines "
    "--engine --gguf --profile --editor --team",
}


def test_every_command_keeps_its_arguments_in_order():
    from difill.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = {
        name: " ".join(
            (action.option_strings[0] if action.option_strings else action.dest)
            for action in p._actions
            if not isinstance(action, argparse._HelpAction)
        )
        for name, p in commands.choices.items()
    }
    assert found == OPTIONS


def test_split_at_counts_lines_as_editors_do():
    # A form feed or U+2028 inside a line is not a line break for LSP or an editor.
    text = "a = 1\x0c  # page\nb = 2\u2028c\nd = 3\n"
    prefix, suffix = split_at(text, 3, 1)
    assert suffix == "d = 3\n"


def test_version_is_written_once_and_everyone_reads_it():
    from importlib.metadata import version

    import difill

    done = run_cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"difill {version('difill')}"
    assert difill.__version__ == version("difill")


def test_the_terminal_view_marks_the_fill_in_its_line_and_names_the_model():
    from difill.server.fill_command import GREEN, PLAIN, terminal_view

    text = "import os\n\ndef f(a):\n    return \n"
    view = terminal_view(
        text, text.index("return ") + 7, "a + 1", "x.py:4:12", "the shipped model on torch", None
    )
    header, *lines = view.splitlines()
    assert header == "x.py:4:12: filled by the shipped model on torch"
    assert lines == ["    3 | def f(a):", f"    4 |     return {GREEN}a + 1{PLAIN}"]
    two = terminal_view("x = (\n", 5, "1,\n    2)", "y.py:1:6", "m", None).splitlines()[1:]
    assert two == [f"    1 | x = ({GREEN}1,", f"    2 | {GREEN}    2){PLAIN}{PLAIN}"]
    empty = terminal_view(text, 0, "", "x.py:1:1", "m", "the file is excluded")
    assert empty.startswith("x.py:1:1: nothing to fill: the file is excluded")


def test_fill_on_a_terminal_shows_the_line_and_piped_prints_the_bare_text(tiny_model_dir, tmp_path):
    import os
    import pty

    source = tmp_path / "t.py"
    source.write_text("def f(a, b):\n    return a + b\n")
    args = [
        sys.executable,
        "-m",
        "difill",
        "fill",
        f"{source}:2:12",
        "--model",
        str(tiny_model_dir),
        "--steps",
        "3",
    ]
    main, terminal = pty.openpty()
    done = subprocess.run(args, stdout=terminal, stderr=subprocess.PIPE, timeout=120)
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the pty's other end is closed: all is read
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert done.returncode == 0, done.stderr
    shown = shown.decode().replace("\r\n", "\n")
    assert f"{source}:2:12: " in shown and str(tiny_model_dir) in shown and "    2 |     return" in shown
    piped = run_cli(*args[3:])  # as a script reads it (``--raw`` asks for the same on a terminal)
    assert piped.returncode == 0 and "|" not in piped.stdout and "\x1b" not in piped.stdout
    assert piped.stdout.strip() and piped.stdout.strip() in shown  # the same fill, bare


@pytest.mark.parametrize("argv, fast", [(["fill", "x.py:1:1"], True), (["eval"], False), ([], False)])
def test_a_fill_ends_without_the_interpreters_teardown(argv, fast, monkeypatch):
    """`difill fill` leaves with os._exit once it has answered: the teardown after torch was 0.3 s
    of a 1.6 s fill (docs/install.md).  Other commands keep it (the lab's write files)."""
    from difill import cli

    class Exited(Exception):
        pass

    def leave(code: int) -> None:
        raise Exited(code)

    monkeypatch.setattr(sys, "argv", ["difill", *argv])
    monkeypatch.setattr(cli, "main", lambda given: 3)
    monkeypatch.setattr(cli.os, "_exit", leave)
    with pytest.raises(Exited if fast else SystemExit) as ended:
        cli.run()
    assert ended.value.args[0] == 3 if fast else ended.value.code == 3


def test_a_reader_that_leaves_early_gets_no_traceback():
    # `difill fill ... | head`: the pipe closes before difill writes; it says nothing on stderr
    # (before: a BrokenPipeError traceback from print_shown).
    demo = Path(__file__).resolve().parents[1] / "examples" / "demo.py"
    child = subprocess.Popen(
        [sys.executable, "-m", "difill", "fill", f"{demo}:28:21", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    child.stdout.close()  # long before the fill is printed
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 1 and b"Traceback" not in stderr and b"BrokenPipe" not in stderr, stderr

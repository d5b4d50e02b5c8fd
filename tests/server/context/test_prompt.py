"""Snippets in the prompt: comment syntax, budget, stable order, and the prefix cache's view of
typing (the snippet block stays byte-identical and its tokens stay the prompt's first tokens)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer

from difill.server.context.found import Snippet
from difill.server.context.index import WorkspaceIndex
from difill.server.context.prompt import approximate_tokens, snippet_block

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

SHIPPED_TOKENIZER = (
    Path(__file__).parents[3] / "src" / "difill" / "engine" / "default_model" / "tokenizer.json"
)

UTIL = '''def load_config(path):
    """Read the configuration file."""
    return open(path).read()


class ConfigStore:
    """Keeps settings by name."""

    def put(self, key, value):
        self.values[key] = value
'''
OTHER = """import json

def save_config(store, path):
    with open(path, "w") as handle:
        json.dump(store.values, handle)
"""
MAIN_ABOVE = """from pkg.util import ConfigStore, load_config
from pkg.io import save_config

store = ConfigStore()
config = load_config("settings.toml")
"""
MAIN_BELOW = "\nsave_config(store, 'out.json')\n"


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/util.py").write_text(UTIL)
    (tmp_path / "pkg/io.py").write_text(OTHER)
    index = WorkspaceIndex()
    index.start()
    index.add_folder(str(tmp_path))
    assert index.wait_idle(30)
    index.set_open("file:///elsewhere/notes.py", "python", "store.put('config', load_config(path))\n")
    yield tmp_path, index
    index.stop()


def test_the_snippet_block_stays_identical_while_typing_a_line(workspace):
    root, index = workspace
    uri = (root / "pkg/main.py").as_uri()
    line = "store.put('config', config)"
    tokenizer = Tokenizer.from_file(str(SHIPPED_TOKENIZER))
    blocks, prompts = [], []
    for typed in range(len(line) + 1):
        prefix = MAIN_ABOVE + line[:typed]
        text = prefix + MAIN_BELOW
        index.set_open(uri, "python", text)  # the live text changes with each keystroke
        index.note_edit(uri, 5)
        retrieval = index.retrieve(uri, text, len(prefix), "python")
        blocks.append(snippet_block(retrieval.snippets, "python", 160))
        prompts.append(prefix)

    assert blocks[0] and "# Path: pkg/util.py" in blocks[0] and "# Path: pkg/io.py" in blocks[0]
    assert all(block == blocks[0] for block in blocks)
    block_tokens = tokenizer.encode(blocks[0], add_special_tokens=False).ids
    previous: list[int] | None = None
    for block, prefix in zip(blocks, prompts, strict=True):
        # As the engine reads them (engine/tokens.py): the block's tokens, then the prefix's.
        ids = (
            tokenizer.encode(block, add_special_tokens=False).ids
            + tokenizer.encode(prefix, add_special_tokens=False).ids
        )
        # The prefix cache keeps the longest common token prefix: the whole block, then the typed text.
        assert ids[: len(block_tokens)] == block_tokens
        if previous is not None:
            common = next(
                (i for i, (a, b) in enumerate(zip(previous, ids, strict=False)) if a != b), len(previous)
            )
            assert common >= len(block_tokens)
        previous = ids


def test_a_new_line_may_change_the_block_but_the_order_is_by_path(workspace):
    root, index = workspace
    uri = (root / "pkg/main.py").as_uri()
    text = MAIN_ABOVE + "\n" + MAIN_BELOW
    snippets = index.retrieve(uri, text, len(MAIN_ABOVE), "python").snippets
    block = snippet_block(snippets, "python", 1000)
    paths = [line.removeprefix("# Path: ") for line in block.split("\n") if line.startswith("# Path: ")]
    assert paths == sorted(paths) and len(paths) >= 2
    # Snippets of different files in another priority order, all fitting: the same block.
    one_per_file = list({s.path: s for s in snippets}.values())
    assert len(one_per_file) >= 2
    assert snippet_block(list(reversed(one_per_file)), "python", 1000) == snippet_block(
        one_per_file, "python", 1000
    )


def test_budget_priority_and_comment_syntax():
    first = Snippet("b/first.py", 0, "alpha = 1\nbeta = 2", "definition", 1.0)
    second = Snippet("a/second.py", 3, "gamma = 3\n" * 20, "similar", 0.2)
    block = snippet_block([first, second], "python", 40)
    assert approximate_tokens(block) <= 40
    # The first in priority is whole; the second is cut to the lines that fit; the output is by path.
    assert block.startswith("# Path: a/second.py\n# gamma = 3\n")
    assert block.endswith("# Path: b/first.py\n# alpha = 1\n# beta = 2\n")
    assert snippet_block([first], "typescript", 100) == "// Path: b/first.py\n// alpha = 1\n// beta = 2\n"
    assert snippet_block([first], "lua", 100).startswith("-- Path: b/first.py\n")
    assert snippet_block([first], "plaintext", 100) == ""  # no comment syntax known: no snippets
    assert snippet_block([first], "python", 0) == ""
    assert snippet_block([first], "python", 3) == ""  # not even the path line fits
    # Every line stays a comment: a path with a newline cannot end the comment early.
    odd = Snippet("evil\nimport os.py", 0, "x = 1", "similar", 0.5)
    assert snippet_block([odd], "python", 100) == "# Path: evil?import os.py\n# x = 1\n"
    counted = snippet_block([first], "python", 3, count_tokens=lambda text: 1)  # the model's tokenizer
    assert counted == "# Path: b/first.py\n# alpha = 1\n# beta = 2\n"


def test_overlapping_lines_of_one_file_are_written_once():
    definition = Snippet("pkg/util.py", 4, "class Store:\n    def put(self, key): ...", "definition", 1.0)
    window = Snippet(
        "pkg/util.py", 0, "import os\n\n\n\nclass Store:\n    def put(self, key):", "similar", 0.4
    )
    apart = Snippet("pkg/util.py", 40, "def later():\n    pass", "similar", 0.3)
    block = snippet_block([definition, window, apart], "python", 1000)
    assert block.count("class Store:") == 1 and "import os" not in block and "def later():" in block

"""Issue 36, part 2: symbol candidates - after ``module.`` the names that module defines, at a
typed word the document's imported names - through the index and through the LSP server."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import inline_params, open_document, running_server

from difill.server.context import symbols
from difill.server.context.index import WorkspaceIndex
from difill.server.draft_policy import drafts_at, is_sure

ERRORS = '''"""Errors."""

__all__ = ["RetryError", "TryAgain"]


class RetryError(Exception):
    pass


class TryAgain(Exception):
    pass


def _private_helper():
    pass


MAX_ATTEMPTS = 5
'''
CORE = """from pkg import errors
from pkg.errors import TryAgain


def run(fn):
    try:
        return fn()
    except TryAgain:
        raise errors.RetryError(fn)
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def workspace(tmp_path):
    write(tmp_path / "ws/pkg/__init__.py", "")
    write(tmp_path / "ws/pkg/errors.py", ERRORS)
    write(tmp_path / "ws/pkg/core.py", CORE)
    index = WorkspaceIndex()
    index.start()
    index.add_folder(str(tmp_path / "ws"))
    assert index.wait_idle(30)
    yield tmp_path / "ws", index
    index.stop()


def drafts(index: WorkspaceIndex, root: Path, text: str, name: str = "pkg/new.py") -> list[tuple[str, str]]:
    retrieval = index.retrieve((root / name).as_uri(), text, len(text), "python")
    return [(d.text, d.kind) for d in retrieval.drafts]


def test_imports_and_queries_are_read():
    imports = symbols.imports_of(
        "import os.path as p, json\nfrom . import errors as e\nfrom pkg.x import (a,\n  b as c)\n"
    )
    assert imports.modules == {"p": "os.path", "json": "json"} and imports.names == {
        "e": (".", "errors"), "a": ("pkg.x", "a"), "c": ("pkg.x", "b"),
    }  # fmt: skip
    assert symbols.symbol_query("    raise errors.Re") == symbols.SymbolQuery("errors", "Re", "raise")
    assert symbols.symbol_query("x = mod.") == symbols.SymbolQuery("mod", "", "=")
    assert symbols.symbol_query("x = 1.") is None and symbols.symbol_query("value = a") is None
    assert symbols.module_paths("..util", "pkg/sub/x.py") == ["/pkg/util.py", "/pkg/util/__init__.py"]
    assert symbols.top_level_names(ERRORS) == [
        "__all__",
        "RetryError",
        "TryAgain",
        "_private_helper",
        "MAX_ATTEMPTS",
    ]


def test_after_module_dot_the_modules_names_ranked_by_use_in_the_same_context(workspace):
    root, index = workspace
    head = "from pkg import errors\n\n\ndef other(fn):\n"
    # "raise errors." is followed by RetryError in core.py: first; then the module's order.
    assert drafts(index, root, head + "    raise errors.") == [
        ("RetryError", "symbol"), ("TryAgain", "symbol"), ("MAX_ATTEMPTS", "symbol"),
    ]  # fmt: skip
    assert drafts(index, root, head + "    limit = errors.MA") == [("X_ATTEMPTS", "symbol")]
    assert drafts(index, root, head + "    errors._p") == [
        ("rivate_helper", "symbol")
    ]  # typed "_": private too
    # A relative import, and a module the workspace does not have.
    assert drafts(index, root, "from . import errors\nx = errors.Tr") == [("yAgain", "symbol")]
    assert drafts(index, root, "import json\nx = json.lo") == []


def test_a_typed_word_gets_the_imported_names_it_starts(workspace):
    root, index = workspace
    text = "from pkg.errors import TryAgain, RetryError\n\n\ndef f():\n    raise Re"
    assert drafts(index, root, text) == [("tryError", "symbol")]
    assert drafts(index, root, text[:-1]) == []  # one character: no list yet
    found = drafts_at(
        text,
        len(text),
        index_drafts=index.retrieve((root / "pkg/new.py").as_uri(), text, len(text), "python").drafts,
    )
    assert found and is_sure(found[0]) and found[0].text == "tryError"


def test_a_huge_module_gives_its_first_names_within_the_cap(tmp_path):
    huge = "".join(f"def name_{i}():\n    pass\n" for i in range(100_000))
    names = symbols.top_level_names(huge)
    assert len(names) == symbols.MAX_MODULE_NAMES and names[0] == "name_0"


async def test_symbol_candidates_are_ghost_text_through_the_server(tiny_model_dir, tmp_path):
    root = tmp_path / "ws"
    write(root / "pkg/__init__.py", "")
    write(root / "pkg/errors.py", ERRORS)
    write(root / "pkg/core.py", CORE)
    options = {"workspaceIndex": True, "contextDrafts": "show", "minTokenProb": 1.0}
    async with running_server(tiny_model_dir, init_options=options, root_uri=root.as_uri()) as client:
        uri = (root / "pkg/new.py").as_uri()
        open_document(client, uri, "from pkg import errors\n\n\ndef other(fn):\n    raise errors.")
        for _ in range(100):  # the index builds in the background; the server answers meanwhile
            result = await client.text_document_inline_completion_async(
                inline_params(uri, 4, 17, invoked=False)
            )
            if result.items:
                break
        # The module's name with what followed it in core.py ("raise errors.RetryError(fn)").
        assert [item.insert_text for item in result.items][:1] == ["RetryError(fn)"]

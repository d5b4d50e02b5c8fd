"""Every language through the LSP: the real ``difill serve`` with the tiny random DiffusionGemma
(a checkpoint that names no languages, so it serves all), and the shipped model, which names
Python only.

The tiny model writes random text, so these tests check what the language decides (the shape
the server logged for the request, and what an item of that shape may hold), not the text.
"""

from __future__ import annotations

import re

import pytest
from lsp_helpers import inline_params, open_document, running_server

from difill.text.languages import LANGUAGES

ASYNC = pytest.mark.asyncio(loop_scope="session")
CURSOR = "█"
# language -> (VS Code id, Neovim filetype, a document with a cursor on an empty block body,
# a document with a cursor in a comment of that language's own syntax)
CASES = {
    "python": ("python", "python", "def f(x):\n    █\n", "x = 1  # the █\n"),
    "javascript": ("javascript", "javascript", "function f(x) {\n  █\n}\n", "let x = 1; // the █\n"),
    "typescript": ("typescript", "typescript", "function f(x: number) {\n  █\n}\n", "let x = 1; // the █\n"),
    "typescriptreact": ("typescriptreact", "typescriptreact", "function App() {\n  █\n}\n", "// the █\n"),
    "go": ("go", "go", "func f(x int) {\n\t█\n}\n", "x := 1 // the █\n"),
    "rust": ("rust", "rust", "fn f(x: i32) {\n    █\n}\n", "let x = 1; // the █\n"),
    "java": ("java", "java", "class A {\n    void f() {\n        █\n    }\n}\n", "int x = 1; // the █\n"),
    "kotlin": ("kotlin", "kotlin", "fun f(x: Int) {\n    █\n}\n", "val x = 1 // the █\n"),
    "c": ("c", "c", "int f(int x) {\n    █\n}\n", "int x = 1; /* the █ */\n"),
    "cpp": ("cpp", "cpp", "int f(int x) {\n    █\n}\n", "int x = 1; // the █\n"),
    "csharp": ("csharp", "cs", "class A {\n    void F() {\n        █\n    }\n}\n", "int x = 1; // the █\n"),
    "ruby": ("ruby", "ruby", "items.each do |item|\n  █\nend\n", "x = 1 # the █\n"),
    "php": ("php", "php", "<?php\nfunction f($x) {\n    █\n}\n", "<?php\n$x = 1; # the █\n"),
    "lua": ("lua", "lua", "local function f(x)\n  █\nend\n", "local x = 1 -- the █\n"),
    "shellscript": ("shellscript", "sh", "if true; then\n  █\nfi\n", "x=1 # the █\n"),
}


def test_every_language_has_an_lsp_case():
    assert set(CASES) == {spec.name for spec in LANGUAGES}


def _position(marked: str) -> tuple[str, int, int]:
    before = marked[: marked.index(CURSOR)]
    return marked.replace(CURSOR, ""), before.count("\n"), len(before) - (before.rfind("\n") + 1)


async def _shape_of_request(client, uri: str, language_id: str, marked: str) -> tuple[str, list[str]]:
    """The shape the server logged for one invoked request, and the items' texts.  The suggestion
    cache is keyed by the text around the cursor and C and C++ share documents: each document gets
    its own count of trailing blank lines, so every request reaches the model."""
    text, line, column = _position(marked)
    text += "\n" * (sorted(CASES).index(uri.split("/")[-2]) + 1)
    logged = len(re.findall(r"shape (\w+)", client.log_file.read_text(encoding="utf-8")))
    open_document(client, uri, text, language_id)
    result = await client.text_document_inline_completion_async(inline_params(uri, line, column))
    shapes = re.findall(r"shape (\w+)", client.log_file.read_text(encoding="utf-8"))
    assert len(shapes) == logged + 1, "the request did not reach the model"
    return shapes[-1], [item.insert_text for item in result.items]


@ASYNC
@pytest.mark.parametrize("language", sorted(CASES))
async def test_a_fill_goes_through_its_languages_shape(client, language):
    vscode_id, vim_filetype, block_doc, comment_doc = CASES[language]
    language_id = vim_filetype if client.profile == "neovim" else vscode_id
    base = f"file:///tmp/{client.profile}/lang/{language}"

    shape, texts = await _shape_of_request(client, f"{base}/block", language_id, block_doc)
    assert shape == "block", f"{language}: an empty body of {block_doc!r} is a block"
    body_indent = len(block_doc.split(CURSOR)[0].rsplit("\n", 1)[1])
    for text in texts:  # the filters kept every later line inside the block (its closer aside)
        for later in text.split("\n")[1:]:
            assert (
                not later.strip()
                or len(later) - len(later.lstrip(" \t")) >= body_indent
                or re.match(r"\s*(\}|end\b|fi\b)", later)
            ), f"{language}: {text!r} leaves the block"

    shape, texts = await _shape_of_request(client, f"{base}/comment", language_id, comment_doc)
    assert shape == "short", f"{language}: {comment_doc!r} puts the cursor in a comment"
    assert all("\n" not in text for text in texts)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("language_id", "marked"),
    [
        (
            "go",
            "package main\n\nfunc sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += █\n\t}\n}\n",
        ),
        ("typescript", "const users: User[] = [];\nconst u = users.find((u) => u.█);\n"),
    ],
)
def test_the_shipped_model_shows_no_text_outside_python(language_id, marked, shipped_model):
    """The shipped model names Python only (config difill.languages): in Go and TypeScript the
    server's suggestion path (server/suggestion_path.py, as the LSP features and `difill fill` use it)
    shows nothing (no workspace drafts exist yet) and says why; Python still reaches the model."""
    text, line, column = _position(marked)
    offset = len("".join(text.splitlines(keepends=True)[:line])) + column
    uri = f"file:///tmp/shipped/main.{'go' if language_id == 'go' else 'ts'}"
    for invoked in (False, True):
        shown = shipped_model.suggest(text, offset, uri, language_id, invoked=invoked)
        assert shown.text == "" and shown.result.candidates == []
        assert shown.declined is not None and "trained on python only" in shown.declined
    python = shipped_model.suggest("def add(a, b):\n    return a + \n", 27, "file:///tmp/a.py", "python")
    assert python.declined is None and python.forwards > 0  # the model ran


@pytest.fixture(scope="module")
def shipped_model():
    from difill.engine.infill import InfillEngine
    from difill.engine.model import DEFAULT_MODEL_DIR, load_model
    from difill.server.suggestion_path import ServedModel

    return ServedModel(InfillEngine(load_model(DEFAULT_MODEL_DIR, device="cpu")))


GO_LOOP = "package main\n\nfunc sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += "
TS_REPEAT = "const a = users.find((u) => u.id === 1);\nconst b = users.find((u) => u."


async def test_through_the_lsp_the_shipped_model_shows_go_and_typescript_only_workspace_drafts():
    """The real server on the shipped model: a Go cursor with nothing to copy gets no ghost text
    (never the model's noise); a TypeScript cursor whose text occurred earlier gets that draft."""
    async with running_server(None) as client:  # no --model: the shipped one, Python only
        go = "file:///tmp/shipped-lsp/main.go"
        open_document(client, go, GO_LOOP, language="go")
        lines = GO_LOOP.split("\n")
        for invoked in (False, True):
            answer = await client.text_document_inline_completion_async(
                inline_params(go, len(lines) - 1, len(lines[-1]), invoked=invoked)
            )
            assert not answer.items
        ts = "file:///tmp/shipped-lsp/users.ts"
        open_document(client, ts, TS_REPEAT, language="typescript")
        lines = TS_REPEAT.split("\n")
        answer = await client.text_document_inline_completion_async(
            inline_params(ts, len(lines) - 1, len(lines[-1]), invoked=False)
        )
        assert [item.insert_text for item in answer.items] == ["id === 1);"]

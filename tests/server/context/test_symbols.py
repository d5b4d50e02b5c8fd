"""Issue 36, part 2: symbol candidates - after ``module.`` the names that module defines, at a
typed word the document's imported names - through the index and through the LSP server."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from lsp_helpers import change_text, inline_params, open_document, running_server
from workspace_files import indexed, write

from difill.server.context import jedi_names, symbol_usage, symbols
from difill.server.context.index import IndexLimits, WorkspaceIndex
from difill.server.context.policy import ContextPolicy
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


@pytest.fixture(autouse=True)
def jedi_never_slow(monkeypatch):
    """Whether jedi is asked at a typed word depends on how long its last completions took
    (JediNames.slow): on a loaded machine that is anything; here it is asked (a test sets less)."""
    monkeypatch.setattr(jedi_names, "SLOW_S", 3600.0)


@pytest.fixture
def workspace(tmp_path):
    write(tmp_path / "ws/pkg/__init__.py", "")
    write(tmp_path / "ws/pkg/errors.py", ERRORS)
    write(tmp_path / "ws/pkg/core.py", CORE)
    with indexed(tmp_path / "ws") as index:
        yield tmp_path / "ws", index


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


def test_after_module_dot_the_modules_names_ranked_by_use_in_the_same_context(workspace, monkeypatch):
    monkeypatch.setattr(jedi_names, "DEADLINE_S", 60.0)  # jedi's answer, not its deadline, decides
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
    # A relative import, and a module the workspace does not have: jedi names the standard library's.
    assert drafts(index, root, "from . import errors\nx = errors.Tr") == [("yAgain", "symbol")]
    assert drafts(index, root, "import json\nx = json.lo") == [("ad", "symbol"), ("ads", "symbol")]


def test_a_typed_word_gets_the_imported_names_it_starts(workspace):
    root, index = workspace
    text = "from pkg.errors import TryAgain, RetryError\n\n\ndef f():\n    raise Re"
    # The imported name first; jedi's builtins the document never uses after it.
    assert typed(index, root, text)[:2] == [("tryError", "symbol"), ("cursionError", "symbol")]
    assert drafts(index, root, text[:-1]) == []  # one character: no list yet
    found = drafts_at(
        text,
        len(text),
        index_drafts=index.retrieve((root / "pkg/new.py").as_uri(), text, len(text), "python").drafts,
    )
    assert found and is_sure(found[0]) and found[0].text == "tryError"


def test_nothing_typed_where_a_value_is_bound_gets_the_imported_name_that_echoes_it(workspace):
    root, index = workspace
    head = "from pkg.errors import RetryError, TryAgain\n\n\n"
    assert drafts(index, root, head + "retry_error = ") == [("RetryError", "symbol")]
    assert drafts(index, root, head + "def run(fn, again: ") == [("TryAgain", "symbol")]  # a parameter
    assert drafts(index, root, head + "f(retry_error=") == [("RetryError", "symbol")]
    # No imported name echoes the word, nothing is bound, or a header's own colon: nothing.
    for text in ("value = ", "raise ", "if again:", "else:", "try_again\n"):
        assert drafts(index, root, head + text) == [], text


def typed(index: WorkspaceIndex, root: Path, text: str) -> list[tuple[str, str]]:
    """The drafts at the end of ``text``, where a word is being typed, once jedi's list (asked at
    the word's first character, never waited for at the next) has come."""
    word = symbols.WORD_AT_CURSOR.search(text)
    first = text[: word.start() + 1]
    drafts(index, root, first)  # the word's first character: jedi starts
    lookup = index._retriever._symbols.jedi
    deadline = time.monotonic() + 60
    while lookup._running:  # jedi's one thread, done
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return drafts(index, root, text)


def test_a_typed_word_gets_jedis_names_where_it_starts(workspace):
    """Issue 46: jedi at a typed word: locals, parameters, globals and builtins, and a keyword
    argument's ``name=`` in a call; a name the document uses before one it never does."""
    root, index = workspace
    head = "def fetch(url, timeout=3, retries=2):\n    return url\n\n\ndef main(limit):\n    total = limit\n"
    assert typed(index, root, head + "    return to")[0] == ("tal", "symbol")  # a local
    assert typed(index, root, head + "    return li")[0] == ("mit", "symbol")  # a parameter
    assert ("meout=", "symbol") in typed(index, root, head + "    fetch(total, ti")  # a keyword argument
    used = head + "    fetch(total, timeout=limit)\n    fetch(total, re"
    assert typed(index, root, used)[0] == ("tries=", "symbol")
    # ``StopIteration`` is a builtin the document never names; ``StrictMode`` it defines and uses.
    strict = "class StrictMode:\n    pass\n\n\nmode = StrictMode()\nother = St"
    assert typed(index, root, strict)[0] == ("rictMode", "symbol")


def test_a_words_first_character_starts_jedi_and_no_keystroke_waits_for_it(workspace, monkeypatch):
    """Asked once per word, never waited for: the first character starts jedi on the text
    without the word, and a later keystroke reads its list (the same one: no new ask)."""
    monkeypatch.setattr(jedi_names, "DEADLINE_S", 60.0)  # a typed word must not wait even so
    root, index = workspace
    head = "def main(limit):\n    total = limit\n    return "
    lookup = index._retriever._symbols.jedi
    lookup.warm()
    deadline = time.monotonic() + 60
    while lookup._running:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    started = time.perf_counter()
    assert drafts(index, root, head + "l") == []  # the word's first character: asked, not waited for
    assert drafts(index, root, head + "li") in ([], [("mit", "symbol")])  # not waited for either
    assert time.perf_counter() - started < 30.0  # a wait, so wall time: 60 s had it waited (DEADLINE_S here)
    assert typed(index, root, head + "li")[0] == ("mit", "symbol")
    asked = len(lookup._cache)
    assert drafts(index, root, head + "lim")[0] == ("it", "symbol")  # the same list: read, not asked
    assert len(lookup._cache) == asked and not lookup._running


def test_a_huge_module_gives_its_first_names_within_the_cap(tmp_path):
    huge = "".join(f"def name_{i}():\n    pass\n" for i in range(symbols.MAX_SCANNED_NAMES + 10))
    names = symbols.top_level_names(huge)
    assert len(names) == symbols.MAX_SCANNED_NAMES and names[0] == "name_0"


def test_a_module_of_100k_definitions_ranks_the_nearest_names_within_the_cap(tmp_path):
    """100k definitions: nothing typed, its first names; a typed prefix reaches names past the
    first MAX_MODULE_NAMES (the first that continue it, in the module's order); in bounded time."""
    import time

    write(tmp_path / "ws/pkg/__init__.py", "")
    write(tmp_path / "ws/pkg/gen.py", "".join(f"def name_{i}():\n    pass\n" for i in range(100_000)))
    with indexed(
        tmp_path / "ws", WorkspaceIndex(IndexLimits(max_file_bytes=8 * 1024 * 1024)), timeout=60
    ) as index:
        root = tmp_path / "ws"
        # Nothing tells the names apart: the first MAX_UNDECIDED, for the model to order.
        assert drafts(index, root, "from pkg import gen\nx = gen.") == [
            (f"name_{i}", "symbol") for i in range(symbols.MAX_UNDECIDED)
        ]
        drafts(index, root, "from pkg import gen\nx = gen.name_9999")  # the names are read once
        started = time.thread_time()  # this thread's CPU: other processes on the cores do not count
        assert drafts(index, root, "from pkg import gen\nx = gen.name_9999")[:3] == [
            ("0", "symbol"), ("1", "symbol"), ("2", "symbol"),
        ]  # fmt: skip
        assert time.thread_time() - started < 2.0  # ~0.03 s (0.08 s with the names read again)


def test_circular_and_star_imports(tmp_path):
    """The index's rules do not follow imports: two modules that import each other give each
    other's names.  A star import binds no name for them; jedi follows it (issue 46: jedi at a
    typed word), and a name the star import brings is offered once the document uses it."""
    root = tmp_path / "ws"
    write(root / "pkg/a.py", "from pkg import b\n\ndef from_a():\n    return b.from_b()\n")
    write(root / "pkg/b.py", "from pkg import a\n\ndef from_b():\n    return a.from_a()\n")
    write(root / "pkg/errors.py", ERRORS)
    with indexed(root) as index:
        assert drafts(index, root, "from pkg import a\nx = a.fr") == [("om_a", "symbol")]
        assert drafts(index, root, "from pkg import b\nx = b.fr") == [("om_b", "symbol")]
        star = "from pkg.errors import *\n\ntry:\n    pass\nexcept RetryError:\n    raise Re"
        assert typed(index, root, star)[0] == ("tryError", "symbol")
        # Unused, it is one of the builtins' names the evidence cannot tell apart (the model orders them).
        assert ("tryError", "symbol") in typed(index, root, "from pkg.errors import *\nraise Re")
    assert symbols.imports_of("from pkg.errors import *\n").names == {}


def test_no_candidates_from_outside_the_workspace_or_a_secret_file(tmp_path):
    """A module that resolves above the workspace folder, or to a file the secrets policy denies
    (built in, or contextExclude), is never indexed: no candidates from it."""
    root = tmp_path / "ws"
    write(tmp_path / "outside.py", "def leaked():\n    pass\n")
    write(root / "pkg/__init__.py", "")
    write(root / "pkg/secret/__init__.py", "")
    write(root / "pkg/secret/keys.py", "def api_key():\n    pass\n")
    write(root / "pkg/ok.py", "def fine():\n    pass\n")
    with indexed(root, WorkspaceIndex(policy=ContextPolicy(("secret/",)))) as index:
        assert drafts(index, root, "from pkg import ok\nok.f") == [("ine", "symbol")]
        assert drafts(index, root, "from ... import outside\noutside.le") == []
        assert drafts(index, root, "from pkg.secret import keys\nkeys.ap") == []
        assert drafts(index, root, "import outside\noutside.le", name="new.py") == []


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


async def test_names_from_a_src_layout_and_the_standard_library_are_ghost_text_through_the_server(
    tiny_model_dir, tmp_path
):
    # Issue 46: a src layout whose __init__.py only re-exports, and a standard-library module:
    # the index resolves neither to names; jedi does, once its first completion has loaded it
    # (meanwhile the server answers without it, typed as an editor types: a character at a time).
    root = tmp_path / "proj"
    write(root / "src/shapes/__init__.py", "from shapes.core import make_widget, Widget\n")
    write(
        root / "src/shapes/core.py", "class Widget:\n    pass\n\n\ndef make_widget():\n    return Widget()\n"
    )
    options = {"workspaceIndex": True, "contextDrafts": "show", "minTokenProb": 1.0}
    async with running_server(tiny_model_dir, init_options=options, root_uri=root.as_uri()) as client:
        shown = {}
        for name, head, typed in (("app.py", "import shapes\n\nw = shapes.", "make_wi"),
                                  ("paths.py", "import os\n\np = os.path.", "expandu")):  # fmt: skip
            uri, line = (root / name).as_uri(), head.count("\n")
            open_document(client, uri, head)
            column = len(head.rsplit("\n", 1)[-1])
            for version, char in enumerate(typed, start=2):
                change_text(client, uri, version, line, column, column, char)
                column += 1
                result = await client.text_document_inline_completion_async(
                    inline_params(uri, line, column, invoked=False)
                )
                await asyncio.sleep(0.5)  # a slow typist: jedi loads meanwhile
            shown[name] = [item.insert_text for item in result.items][:1]
        assert shown["app.py"][0].startswith("dget")  # "dget, Widget": a draft of __init__'s line
        assert shown["paths.py"] == ["ser"]


def test_ranking_evidence_echo_and_enclosing_call():
    """The word a value is bound to picks the name that echoes it; the call open at the cursor
    is read past nested brackets."""
    query = symbols.SymbolQuery("defaults", "", "=")
    names = ["LOGURU_FORMAT", "LOGURU_LEVEL", "LOGURU_COLORIZE"]
    assert symbols.rank(query, names, [], word="level").names[0] == "LOGURU_LEVEL"
    assert symbols.rank(query, names, [], word="x").names[0] == "LOGURU_FORMAT"  # too short to echo
    assert symbol_usage.echoed_word("        colorize=") == "colorize"
    assert symbol_usage.echoed_word("    timeout: int = ") == "timeout"
    assert symbol_usage.echoed_word("    return ") == ""
    assert symbol_usage.enclosing_call("elif isinstance(element, (a.Or, ") == "isinstance"
    assert symbol_usage.enclosing_call("x = pp.Word(") == "Word"
    assert symbol_usage.enclosing_call("x = [1, 2](") == ""


def test_a_function_named_after_what_it_calls_picks_that_name():
    """``def _cmd_upgrade_all(args): return commands.`` - a wrapper named after its callee, the
    enclosing function read from the lines above (its signature line too), past nested blocks."""
    query = symbols.SymbolQuery("commands", "", "return")
    names = ["install", "upgrade", "upgrade_all", "all"]
    body = "def _cmd_upgrade_all(args):\n    if args.verbose:\n        log(1)\n\n        return commands."
    assert symbols.rank(query, names, [], before_cursor=body).names[0] == "upgrade_all"
    assert symbols.rank(query, names, [], before_cursor="return commands.").names[0] == "install"
    assert symbol_usage.enclosing_function(body) == "_cmd_upgrade_all"
    assert symbol_usage.enclosing_function("async def fetch_all(\n    x) -> commands.") == "fetch_all"  # its signature
    assert symbol_usage.enclosing_function("def run() -> Result[commands.") == "run"
    assert symbol_usage.enclosing_function("def a():\n    pass\n\nx = commands.") == ""  # module level
    assert symbol_usage.enclosing_function("class A:\n    x = commands.") == ""
    method = "class A:\n    def upgrade(self):\n        return self."
    assert symbol_usage.enclosing_function(method) == "upgrade"
    assert not symbol_usage.named_after("all", "_cmd_upgrade_all")  # too short to tell
    assert symbol_usage.named_after("UpgradeAll", "_cmd_upgrade_all")


def test_the_workspace_use_of_a_module_ranks_its_names(tmp_path):
    """A file that imports the module under another alias and uses one name inside the same call
    ranks it first; the file being edited is left out of that count (its indexed copy is an
    older version of the text at hand)."""
    root = tmp_path / "ws"
    write(root / "pkg/__init__.py", "")
    write(
        root / "pkg/kinds.py",
        "class Alpha:\n    pass\n\n\nclass Beta:\n    pass\n\n\nclass Gamma:\n    pass\n",
    )
    write(
        root / "pkg/user.py", "from pkg import kinds as k\n\n\ndef f(x):\n    return isinstance(x, k.Gamma)\n"
    )
    with indexed(root) as index:
        text = "from pkg import kinds\n\n\ndef g(y):\n    if isinstance(y, kinds."
        assert drafts(index, root, text)[0] == ("Gamma", "symbol")
        assert drafts(index, root, text, name="pkg/user.py")[0] == ("Alpha", "symbol")


def test_a_lookup_that_names_no_candidate_stays_after_them_as_shown():
    """The text pipeline ranks drafts by syntax errors: a lookup that carries a comma must not
    go before the right bare name in a block of keyword arguments."""
    from difill.server.context.drafts import Draft
    from difill.server.draft_policy import drafts_result
    from difill.text.context import build_context
    from difill.text.pipeline import shown_texts
    from difill.text.syntax import parser_for

    text = "from pkg import defaults\n\nconfigure(\n    level=defaults.\n    colorize=True,\n)\n"
    offset = text.index("defaults.\n") + len("defaults.")
    names = [Draft("LOGURU_LEVEL", "pkg/defaults.py", kind="symbol")]
    source = ("other.py", "configure(\n    level=defaults.LOGURU_SERIALIZE,\n)\n")
    found = drafts_at(text, offset, [source], names, "python")
    assert [d.text.split("\n")[0] for d in found][:2] == ["LOGURU_LEVEL", "LOGURU_SERIALIZE,"]
    tree = parser_for("python").parse(text.encode())
    ctx = build_context(text, offset, "python", 1024, 32, tree)
    assert shown_texts(drafts_result(found).candidates, ctx)[0] == "LOGURU_LEVEL"


LEVELS = "def qzxv_alpha():\n    pass\n\n\ndef debug():\n    pass\n\n\ndef info():\n    pass\n"
AT_LEVELS = "from pkg import levels\n\n\ndef run():\n    levels."


def test_names_the_evidence_cannot_tell_apart_are_undecided():
    query = symbols.SymbolQuery("defaults", "", "=")
    names = ["LOGURU_FORMAT", "LOGURU_LEVEL", "LOGURU_COLORIZE"]
    assert symbols.rank(query, names, []).undecided == 3
    used = symbols.rank(query, names, ["print(defaults.LOGURU_LEVEL)"])  # used, but not after "="
    assert used.names[0] == "LOGURU_LEVEL" and used.undecided == 3  # use counts order, not decide
    echoed = symbols.rank(query, names, [], word="level")
    assert echoed.names[0] == "LOGURU_LEVEL" and echoed.undecided == 1
    in_context = symbols.rank(query, names, ["y = defaults.LOGURU_COLORIZE"])
    assert in_context.names[0] == "LOGURU_COLORIZE" and in_context.undecided == 1


class WithoutNameScores:
    """The shipped engine as a backend that cannot score names (as a remote one)."""

    def __init__(self, engine) -> None:
        self.engine, self.loaded = engine, engine.loaded

    def about(self):
        from dataclasses import replace

        return replace(self.engine.about(), scores_names=False)

    def fill(self, *args, **kwargs):
        return self.engine.fill(*args, **kwargs)

    def fill_holes(self, *args, **kwargs):
        return self.engine.fill_holes(*args, **kwargs)

    def rewrite(self, *args, **kwargs):
        return self.engine.rewrite(*args, **kwargs)


def test_the_model_orders_the_names_the_workspace_cannot_tell_apart(tmp_path):
    """Nothing in the workspace uses ``levels``: the module's order would put ``qzxv_alpha``
    first; the shipped model's score of each name at ``levels.`` puts a logging level first.
    A backend that cannot score names keeps the workspace's order."""
    from difill.engine.api import NameScorer
    from difill.engine.infill import InfillEngine
    from difill.engine.model import DEFAULT_MODEL_DIR, load_model
    from difill.server.config import Settings
    from difill.server.suggestion_path import ServedModel

    root = tmp_path / "ws"
    write(root / "pkg/__init__.py", "")
    write(root / "pkg/levels.py", LEVELS)
    with indexed(root) as index:
        uri = (root / "pkg/run.py").as_uri()
        text = AT_LEVELS + "('starting')\n"
        offset = len(AT_LEVELS)
        retrieval = index.retrieve(uri, text, offset, "python")
        assert [d.text for d in retrieval.drafts if d.undecided] == ["qzxv_alpha", "debug", "info"]
        engine = InfillEngine(load_model(DEFAULT_MODEL_DIR, device="cpu"))
        assert isinstance(engine, NameScorer) and not isinstance(WithoutNameScores(engine), NameScorer)
        # The show gate open: this is the ordering's test (with nothing typed after ``levels.`` the
        # gate holds back any one of three undecided names: tests/server/test_show_gate.py).
        gate_open = Settings(min_show_probability=0.0)
        scored = ServedModel(engine, gate_open).suggest(text, offset, uri, retrieval=retrieval)
        assert scored.text in ("debug", "info")
        unscored = ServedModel(WithoutNameScores(engine), gate_open).suggest(text, offset, uri, retrieval=retrieval)
        assert unscored.text == "qzxv_alpha"


async def test_the_model_orders_undecided_names_through_the_server(tmp_path):
    from difill.engine.model import DEFAULT_MODEL_DIR

    root = tmp_path / "ws"
    write(root / "pkg/__init__.py", "")
    write(root / "pkg/levels.py", LEVELS)
    options = {"workspaceIndex": True, "contextDrafts": "show", "minShowProbability": 0}  # the ordering's test
    async with running_server(DEFAULT_MODEL_DIR, init_options=options, root_uri=root.as_uri()) as client:
        uri = (root / "pkg/run.py").as_uri()
        # The `.` typed before `('starting')`: a cursor that only moved there would get nothing (issue 66).
        open_document(client, uri, AT_LEVELS[:-1] + "('starting')\n")
        change_text(client, uri, 2, 4, 10, 10, ".")
        for _ in range(100):  # the index builds in the background; the server answers meanwhile
            result = await client.text_document_inline_completion_async(
                inline_params(uri, 4, 11, invoked=False)
            )
            if result.items and result.items[0].insert_text in ("qzxv_alpha", "debug", "info"):
                break
        assert result.items[0].insert_text in ("debug", "info")


def test_a_document_jedi_is_slow_on_gets_no_jedi_names_at_a_typed_word(workspace, monkeypatch):
    """jedi's pure-Python work shares the interpreter with the request path: a document whose
    last two completions each took over SLOW_S (every one, here) is not asked at a typed word;
    ``x.`` still asks (and so measures again)."""
    root, index = workspace
    head = "import os\n\n\ndef main(limit):\n    total = limit\n"
    assert typed(index, root, head + "    return li")[0] == ("mit", "symbol")  # fast enough: asked
    monkeypatch.setattr(jedi_names, "SLOW_S", 0.0)
    monkeypatch.setattr(jedi_names, "DEADLINE_S", 60.0)
    for attribute in ("    os.pa", "    os.ge"):  # two completions of this document, each "slow"
        assert drafts(index, root, head + attribute) != []
    assert typed(index, root, head + "    return li") == []  # not asked: no local, no builtin
    monkeypatch.setattr(jedi_names, "SLOW_S", 60.0)
    assert typed(index, root, head + "    return li")[0] == ("mit", "symbol")

"""Issue 48's size and layering targets, checked on the source (no module is run).

* No module under src/difill or lab/ exceeds 500 lines (docs/style.md: ~300, split at ~500).
* No function or method runs past 60 lines, its decorators and docstring included (a nested
  function counts in its own right, and in the lines of the one around it): a reader holds it
  whole, on one screen.
* No function or method takes more than 7 parameters, ``self``/``cls`` of a method not counted,
  keyword-only ones, ``*args`` and ``**kwargs`` counted: more is a bundle waiting for a name (a
  small dataclass, or a pair the callers already hold).
* No import runs upward through ``cli -> server -> engine -> text``, and nothing in the package
  imports ``lab/`` (it sits beside src/ and is not installed); imports under ``if TYPE_CHECKING:`` and in
  function bodies count too.  tests/test_imports.py holds the finer rules (no pygls in the
  engine, no torch in text/, no circles, no feature importing server.py).
* No feature package (``server/features/*``) imports another.
* One model request (issue 65): ``model_declines`` is called in server/model_request.py alone, so
  every feature's "does the model decline" is that module's one check.

``EXCEPTIONS`` would name a module or function let off, each with its reason; there is none.
``LONG_FUNCTIONS`` names the functions let off the length limit, each with its reason, and each
must still be too long: one that was split leaves the table.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from test_imports import SRC, imports, sources

pytestmark = pytest.mark.unit

MAX_LINES = 500
MAX_PARAMETERS = 7
MAX_FUNCTION_LINES = 60
# "module" or "module:function" -> why it is let off (keep this empty: fix the code instead).
EXCEPTIONS: dict[str, str] = {}
# "module:function" (a method as Class.method) -> why it may run past MAX_FUNCTION_LINES.
LONG_FUNCTIONS: dict[str, str] = {
}
# The layers, bottom up: a module may import its own layer and those below.  The lab sits beside
# them, outside the package; only the lab itself imports it.
LAYERS = ("difill.text", "difill.engine", "difill.server", "difill.cli")


def layer(module: str) -> int | None:
    """The rank of ``module`` in ``LAYERS``; None for the lab, the package root and __main__."""
    for rank, prefix in enumerate(LAYERS):
        if module == prefix or module.startswith(prefix + "."):
            return rank
    return None


def parameter_counts(source: str) -> list[tuple[str, int, int]]:
    """(qualified name, line, parameters) of every function in ``source`` (methods lose their
    first parameter, ``self`` or ``cls``, unless they are static methods)."""
    found: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, owner: str, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                args = child.args
                count = len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)
                count += (args.vararg is not None) + (args.kwarg is not None)
                static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in child.decorator_list)
                if in_class and not static and (args.posonlyargs or args.args):
                    count -= 1  # self or cls
                name = f"{owner}{child.name}"
                found.append((name, child.lineno, count))
                visit(child, name + ".", in_class=False)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{owner}{child.name}.", in_class=True)
            else:
                visit(child, owner, in_class)

    visit(ast.parse(source), "", in_class=False)
    return found


def function_lengths(source: str) -> list[tuple[str, int, int]]:
    """(qualified name, line, lines) of every function in ``source``, nested ones too: its lines
    run from its first decorator to its last line, docstring and nested functions included."""
    found: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{owner}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    found.append((name, child.lineno, child.end_lineno - first + 1))
                visit(child, name + ".")
            else:
                visit(child, owner)

    visit(ast.parse(source), "")
    return found


def kept_sources() -> dict[str, Path]:
    """The modules the size rules hold: the package and the lab, not lab/scripts/ (one-off
    measurement scripts, each kept as the record of the figure a doc cites, and run as written)."""
    return {name: path for name, path in sources().items() if not name.startswith("lab.scripts.")}


def test_no_module_exceeds_500_lines():
    long = {
        name: lines
        for name, path in kept_sources().items()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
        and name not in EXCEPTIONS
    }
    assert not long, f"split these modules (lines): {long}"


def test_no_function_takes_more_than_7_parameters():
    wide = [
        f"{name}:{function} (line {line}): {count}"
        for name, path in kept_sources().items()
        for function, line, count in parameter_counts(path.read_text(encoding="utf-8"))
        if count > MAX_PARAMETERS and f"{name}:{function}" not in EXCEPTIONS
    ]
    assert not wide, "bundle the parameters of: " + "; ".join(wide)


def test_no_function_runs_past_60_lines():
    long = [
        f"{name}:{function} (line {line}): {lines}"
        for name, path in kept_sources().items()
        for function, line, lines in function_lengths(path.read_text(encoding="utf-8"))
        if lines > MAX_FUNCTION_LINES and f"{name}:{function}" not in LONG_FUNCTIONS
    ]
    assert not long, "split these functions by what their parts do (lines): " + "; ".join(long)


def test_every_long_function_let_off_is_still_long():
    # A let-off that outlived its reason would let the function grow back unseen.
    lengths = {
        f"{name}:{function}": lines
        for name, path in sources().items()
        for function, _, lines in function_lengths(path.read_text(encoding="utf-8"))
    }
    short = [key for key in LONG_FUNCTIONS if lengths.get(key, 0) <= MAX_FUNCTION_LINES]
    assert not short, "take these out of LONG_FUNCTIONS: " + ", ".join(short)


def test_no_import_runs_upward_and_the_package_never_imports_the_lab():
    known = frozenset(sources())
    wrong = []
    for name, path in sources().items():
        rank = layer(name)
        if rank is None:
            continue  # the lab imports what it measures; difill/__main__.py runs the CLI
        for target in imports(path, with_type_checking=True, known=known) & known:
            target_rank = layer(target)
            if target == "lab" or target.startswith("lab."):
                wrong.append(f"{name} -> {target} (the lab is not installed)")
            elif target_rank is not None and target_rank > rank:
                wrong.append(f"{name} -> {target} (upward)")
    assert not wrong, "; ".join(sorted(wrong))


FEATURES = "difill.server.features."


def feature_of(module: str) -> str | None:
    """The feature package ``module`` belongs to (``edits``, ``next_edit``, ``suggestions``)."""
    return module[len(FEATURES) :].split(".")[0] if module.startswith(FEATURES) else None


def test_feature_packages_import_nothing_from_each_other():
    # What two features share (spans of a change, an LSP range as JSON, the model request) lives
    # below them, in text/ or server/; a feature importing another is a concept in the wrong home.
    known = frozenset(sources())
    crossing = sorted(
        f"{name} -> {target}"
        for name, path in sources().items()
        if (own := feature_of(name))
        for target in imports(path, with_type_checking=True, known=known) & known
        if (other := feature_of(target)) and other != own
    )
    assert not crossing, "; ".join(crossing)
    assert {feature_of(name) for name in sources()} >= {"edits", "next_edit", "suggestions"}


def calls_of(source: str, name: str) -> int:
    """How many calls of a function named ``name`` (``name(...)`` or ``x.name(...)``) ``source`` has."""
    return sum(
        1
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) == name or getattr(node.func, "attr", None) == name)
    )


def test_one_decline_check_for_every_feature():
    # The features build their model work through model_request (plan_for, model_work); a
    # feature with its own check would drift from the others (issue 65: there were three).
    callers = {
        name: count
        for name, path in sources().items()
        if (count := calls_of(path.read_text(encoding="utf-8"), "model_declines"))
    }
    assert callers == {"difill.server.model_request": 1}


def test_every_exception_still_names_something():
    # A let-off that outlived its reason would hide the next one.
    for key in EXCEPTIONS:
        module = key.split(":")[0]
        assert module in sources(), key


def test_the_checks_find_what_they_look_for():
    # The checks pass on empty answers: each must see a violation when there is one.
    source = (
        "def wide(a, b, c, d, e, f, g, *, h): ...\n"
        "class K:\n"
        "    def method(self, a, b, c, d, e, f, g): ...\n"
        "    @staticmethod\n"
        "    def static(a, b, c, d, e, f, g, h): ...\n"
        "    def star(self, *args, **kwargs): ...\n"
    )
    counts = {name: count for name, _, count in parameter_counts(source)}
    assert counts == {"wide": 8, "K.method": 7, "K.static": 8, "K.star": 2}
    tall = "    @property\n    @staticmethod\n    def tall():\n        def inner():\n            pass\n        return 1\n"
    lengths = {name: lines for name, _, lines in function_lengths(source + tall)}
    assert lengths == {"wide": 1, "K.method": 1, "K.static": 2, "K.star": 1, "K.tall": 6, "K.tall.inner": 2}
    assert (layer("difill.text.pipeline"), layer("difill.engine.api"), layer("difill.cli")) == (0, 1, 3)
    assert layer("lab.bench") is None and layer("difill.textual") is None
    assert (SRC / "difill" / "engine" / "sampler.py").is_file()  # the sources are where we look
    assert calls_of("x.model_declines(a)\nmodel_declines(b)\nmodel_declines\n", "model_declines") == 2

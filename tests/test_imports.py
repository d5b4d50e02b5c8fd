"""The import structure the README's layout promises, checked on the source (no module is run).

Imports run one way: ``cli -> server -> engine -> text``, with ``lab`` beside them.

* Nothing imports ``difill.cli``: it sits above every package it dispatches to.
* ``server/`` never imports ``lab/``.
* ``engine/`` never imports ``server/`` or ``lab/``, nor pygls or lsprotocol.
* ``text/`` (the text rules and language facts) imports no torch, no transformers, no LSP
  library, and nothing of difill outside ``text/`` (it is the bottom layer: text/pipeline.py
  names the fields of a middle it reads as a Protocol, not the engine's ``Candidate``).
* No import circles: module A importing B while B (directly or through others) imports A, at any
  depth and in function bodies too; and none either once the imports under ``if TYPE_CHECKING:``
  are counted (they never run, but a type checker and a reader follow them: a module that names
  ``DifillServer`` for a type depends on server.py as much as one that imports it).
* No feature imports ``server.py``, not even for a type: features take a ``RequestContext``
  (server/request_context.py), so server.py can import every feature.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
LAB = ROOT / "lab"  # beside the package, not installed


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC if path.is_relative_to(SRC) else ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path, with_type_checking: bool, known: frozenset[str] = frozenset()) -> set[str]:
    """Every module ``path`` imports.  ``from a import b`` is a.b when that is one of the ``known``
    modules (a submodule: importing it needs its package anyway), else a."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not with_type_checking:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in known else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def sources() -> dict[str, Path]:
    """The package's modules and the lab's."""
    return {module_name(p): p for p in sorted([*(SRC / "difill").rglob("*.py"), *LAB.rglob("*.py")])}


def is_lab(module: str) -> bool:
    return module == "lab" or module.startswith("lab.")


def graph(with_type_checking: bool) -> dict[str, set[str]]:
    modules = sources()
    known = frozenset(modules)
    return {name: imports(path, with_type_checking, known) & known for name, path in modules.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return found


def test_engine_imports_neither_the_server_nor_the_lab_nor_pygls():
    for name, path in sources().items():
        if name.startswith("difill.engine"):
            wrong = {
                m
                for m in imports(path, with_type_checking=True)
                if m.startswith(("difill.server", "pygls", "lsprotocol")) or is_lab(m)
            }
            assert not wrong, f"{name} imports {sorted(wrong)}"


def test_nothing_imports_the_cli():
    for name, path in sources().items():
        if name not in ("difill.cli", "difill.__main__"):
            assert "difill.cli" not in imports(path, with_type_checking=True), name


def test_the_server_never_imports_the_lab():
    for name, path in sources().items():
        if name.startswith("difill.server"):
            wrong = {m for m in imports(path, with_type_checking=True) if is_lab(m)}
            assert not wrong, f"{name} imports {sorted(wrong)}"


def test_every_package_is_found():
    # setuptools finds packages (pyproject.toml): a folder of modules without __init__.py would be
    # left out of the wheel while an editable install still imports it.
    for folder in (SRC / "difill").rglob("*"):
        if folder.is_dir() and any(folder.glob("*.py")):
            assert (folder / "__init__.py").is_file(), folder


def test_text_imports_no_torch_no_lsp_and_nothing_above_it():
    for name, path in sources().items():
        if name.startswith("difill.text"):
            found = imports(path, with_type_checking=True)
            wrong = {
                m
                for m in found
                if m.split(".")[0] in ("torch", "transformers", "pygls", "lsprotocol", "numpy")
                or (m.startswith("difill.") and not m.startswith("difill.text"))
            }
            assert not wrong, f"{name} imports {sorted(wrong)}"


@pytest.mark.parametrize(
    "with_type_checking",
    [
        pytest.param(False, id="at_run_time"),
        # Transport modules take pygls' LanguageServer or a Protocol of their own, not DifillServer.
        pytest.param(True, id="even_at_type_checking_time"),
    ],
)
def test_there_are_no_import_circles(with_type_checking):
    assert cycles(graph(with_type_checking=with_type_checking)) == []


def test_no_feature_imports_the_server_module_even_for_a_type():
    for name, path in sources().items():
        if name.startswith("difill.server.features"):
            assert "difill.server.server" not in imports(path, with_type_checking=True), name


def test_the_cli_names_the_modules_of_its_commands():
    # Each command's work is imported inside its handler (lazily), but by an import statement; the
    # lab's commands name their module and function, which the lab must have (issue 65 item 7).
    edges = graph(with_type_checking=False)["difill.cli"]
    for module in ("server.serve_http", "server.server", "server.fill_command"):
        assert f"difill.{module}" in edges, module
    calls = [
        node
        for node in ast.walk(ast.parse((SRC / "difill" / "cli.py").read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "lab_command"
    ]
    named = {tuple(arg.value for arg in call.args) for call in calls}
    assert {command for command, _, _ in named} == {"corpus", "tokenizer", "train", "ship", "eval", "bench"}
    for _, module, function in named:
        tree = ast.parse((LAB / f"{module}.py").read_text())
        assert function in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}, (module, function)


def test_the_package_imports_nothing_of_the_lab():
    # The wheel leaves the lab out (pyproject: packages under src/ only), so no module of it may
    # import the lab, not even under TYPE_CHECKING: the CLI finds it in a clone by name.
    for name, path in sources().items():
        if not is_lab(name):
            wrong = {m for m in imports(path, with_type_checking=True) if is_lab(m)}
            assert not wrong, f"{name} imports {sorted(wrong)}"


def test_the_circle_finder_finds_a_circle():
    # The checks above pass on an empty answer: the finder itself must see a circle when there is one.
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]
    edges = graph(with_type_checking=False)
    assert "difill.server.request_context" in edges["difill.server.features.suggestions.completion"]
    assert "lab.bench_server" in edges["lab.bench"]
    # ... and the type-checking graph holds the imports under `if TYPE_CHECKING:` too
    typed = graph(with_type_checking=True)
    assert "difill.server.config" not in edges["difill.server.request_context"]
    assert "difill.server.config" in typed["difill.server.request_context"]

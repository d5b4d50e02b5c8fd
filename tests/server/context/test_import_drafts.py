"""Import drafts: a typed ``from`` line completed with the names the document uses unbound that a
workspace module defines (server/context/imports.py), and their way through the index and the
draft order to ghost text."""

from __future__ import annotations

import pytest

from difill.server.context.drafts import Draft
from difill.server.context.imports import (
    between_imports,
    free_names,
    import_completion,
    import_targets,
    module_forms,
    typed_import,
)
from difill.server.context.index import WorkspaceIndex
from difill.server.draft_policy import drafts_at, is_sure

pytestmark = pytest.mark.unit  # torch-free, no server: `pytest -m unit` (tests/conftest.py)

DOCUMENT = '''"""A helper_unused in a docstring is prose."""
from .base import Thing
import os.path
from pkg.other import (
    first,
    second as renamed,
)


def run(value, *, scale=2):
    total = helper_one(value) + RATE  # helper_in_comment
    for item, count in os.path.split(value):
        total += item.attribute + count
    return Widget(total, Thing, name=value, other=first(renamed), sep=os.sep, text="helper_quoted")
'''


def test_free_names_are_the_used_unbound_ones_in_order_of_first_use():
    assert free_names(DOCUMENT) == ("helper_one", "RATE", "Widget")
    # A module path on an import line is not a use; an attribute, a keyword argument, a builtin
    # and a name bound by a walrus, a lambda or a with ... as are not free either.
    text = "from celery.utils import x\nimport tensorflow\ny = (n := len(x))\nf = lambda k: k + n\n"
    assert free_names(text + "with open(y) as fh:\n    fh.read(size=n, z=zed)\n") == ("zed",)


def test_names_listed_in_all_are_uses():
    """A package's ``__init__.py`` re-exports: its ``__all__`` names what it must import."""
    text = (
        'from .a import bound\n\n__all__ = (\n    "exported",  # why\n    "bound",\n)\n__all__ += ["more"]\n'
    )
    assert free_names(text + 'labels = ["a_string"]\n') == ("exported", "more")


def test_an_f_string_uses_the_names_in_its_fields():
    text = 'x = f"at {datetime_repr(when)} {{braces}} {Colors.END:>8}" + "{plain}" + rf"{raw_name}"\n'
    assert free_names(text + 'y = call("{in_call}") + rb"bytes"\n') == (
        "datetime_repr",
        "when",
        "Colors",
        "raw_name",
        "call",
    )


def test_a_quoted_annotation_uses_its_names():
    """Code under ``if TYPE_CHECKING:`` imports names that only quoted annotations use."""
    text = (
        'def f(job: "Job", other: "list[Dependency] | None" = None) -> "Result":\n    d = {"key": "value"}\n'
    )
    assert free_names(text + '    x: "Quoted" = "not_a_type"\n') == ("Job", "Dependency", "Result", "Quoted")


def test_module_forms_relative_first_then_each_tail_of_the_path():
    assert module_forms("pkg/sub/util.py", "pkg/sub/main.py") == [".util", "pkg.sub.util", "sub.util", "util"]
    assert module_forms("pkg/util.py", "pkg/sub/main.py") == ["..util", "pkg.util", "util"]
    assert module_forms("pkg/sub/__init__.py", "pkg/sub/main.py") == [".", "pkg.sub", "sub"]
    assert module_forms("src/pkg/util.py", None) == ["src.pkg.util", "pkg.util", "util"]


TARGETS = import_targets(
    {"pkg/sub/util.py": ["helper_one", "RATE", "helper_two"], "pkg/widgets.py": ["Widget", "log"],
     "pkg/logs.py": ["log"]},
    "pkg/sub/main.py",
    "from .base import Thing\n",  # the document imports relatively
    common={"log"},  # defined in many modules: it picks none, but a typed module lists it
)  # fmt: skip
FREE = ["helper_one", "RATE", "Widget", "log", "helper_two"]


@pytest.mark.parametrize(
    ("line", "completion"),
    [
        # The module that defines the most free names, relative as the document writes them, with
        # the names in isort's and ruff's order (constants, classes, the rest).
        ("from ", ".util import RATE, helper_one, helper_two"),
        ("from .", "util import RATE, helper_one, helper_two"),
        ("from .u", "til import RATE, helper_one, helper_two"),
        ("from ..w", "idgets import Widget, log"),
        ("from ..l", None),  # its only name is a common one
        ("from ..logs import ", "log"),
        ("from pkg.sub", ".util import RATE, helper_one, helper_two"),
        ("from .util", " import RATE, helper_one, helper_two"),
        ("from .util ", "import RATE, helper_one, helper_two"),
        ("from .util im", "port RATE, helper_one, helper_two"),
        ("from .util import ", "RATE, helper_one, helper_two"),
        ("from .util import RATE, ", "helper_one, helper_two"),  # the ones not listed yet
        ("from .util import RATE, helper_", "one, helper_two"),
        # The name being typed, then the names that sort after it (a sorted line goes on with them).
        ("from .util import R", "ATE, helper_one, helper_two"),
        ("from .util import helper_t", "wo"),
        ("from", " .util import RATE, helper_one, helper_two"),  # no space typed yet
        ("fromage", None),
        ("    from .util import RATE", None),  # the name is written: nothing more starts with it
        ("from .nowhere import ", None),
        ("from .x", None),
        ("from .util import", " RATE, helper_one, helper_two"),
        ("from .util imx", None),
        ("import ", None),  # only ``from`` lines
        ("x = 1", None),
    ],
)
def test_import_completion(line, completion):
    typed = typed_import(line)
    assert (typed and import_completion(typed, TARGETS, FREE)) == completion


def test_a_new_line_among_the_imports_gets_a_whole_import_line():
    text = "import os\n\nx = 1\n"
    assert between_imports(text, 10, 11)  # the empty line after "import os"
    assert not between_imports("x = 1\n\ny = 2\n", 6, 7)
    typed = typed_import("", among_imports=True)
    assert typed is not None and typed.fresh
    assert import_completion(typed, TARGETS, FREE) == "from .util import RATE, helper_one, helper_two"
    assert typed_import("") is None  # an empty line elsewhere drafts no import


UTIL = "RATE = 3\n\n\ndef helper_one(x):\n    return x\n\n\nclass Box:\n    def method(self):\n        pass\n"
MAIN = "from pkg.other import Box\n\n\ndef run(v):\n    return helper_one(v) * RATE + method(v)\n"


def test_the_index_drafts_the_import_line_from_the_workspace(tmp_path):
    for name, text in {
        "pkg/util.py": UTIL,
        "pkg/main.py": MAIN,
        "pkg/other.py": "class Box:\n    pass\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    # A name defined at the top of more than three modules says nothing about which one.
    for i in range(4):
        (tmp_path / f"pkg/common_{i}.py").write_text("log = 1\n")
    index = WorkspaceIndex()
    index.start()
    try:
        index.add_folder(str(tmp_path))
        assert index.wait_idle(60)
        uri = (tmp_path / "pkg/main.py").as_uri()
        text = "from pkg.u\n" + MAIN + "log(1)\n"
        retrieval = index.retrieve(uri, text, len("from pkg.u"), "python")
        # "method" is defined only inside a class: not importable; "log" is everywhere.
        assert retrieval.drafts == [Draft("til import RATE, helper_one", "import", 0, "import")]
        # A module typed whole lists a common name it defines; one only typed in part is never
        # picked by it.
        text = "from pkg.common_1 import \n" + MAIN + "log(1)\n"
        assert [
            d.text for d in index.retrieve(uri, text, len("from pkg.common_1 import "), "python").drafts
        ] == ["log"]
        text = "from pkg.common_\n" + MAIN + "log(1)\n"
        assert index.retrieve(uri, text, len("from pkg.common_"), "python").drafts == []
        assert retrieval.drafts[0].kind == "import"
        assert index.retrieve(uri, text, len("from pkg.u"), "javascript").drafts == []
        text = "import os\n\n" + MAIN
        fresh = index.retrieve(uri, text, len("import os\n"), "python").drafts
        assert [(d.text, d.kind) for d in fresh] == [("from pkg.util import RATE, helper_one", "new-import")]
    finally:
        index.stop()


def test_draft_order_import_drafts_first_then_the_longest_matches():
    typed = Draft("til import RATE", "import", 2, "import")
    new = Draft("from pkg.util import RATE", "import", 0, "new-import")
    # The document repeats an 8-token run: its continuation is a long match.
    text = "import a.b.c as d\nx = 1\nimport a.b.c as d\n"
    found = drafts_at(text, len(text), index_drafts=[typed])
    assert found[0] == typed and found[1].text.startswith("x = 1")
    assert drafts_at(text, len(text), index_drafts=[new])[0] == new
    assert all(is_sure(d) for d in (typed, new, found[1]))
    assert not is_sure(Draft("y", "current", 1))

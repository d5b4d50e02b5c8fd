"""Issue 46: the symbol eval's case rules for the kinds jedi at a typed word answers: a bare name
an IDE knows at the cursor (``word, 2 typed``) and a keyword argument's name in a call
(``argument, 2 typed``).  The rules read the code, never the server under test."""

from __future__ import annotations

from lab import symbol_eval

HELPERS = "def fetch(url, timeout=3):\n    return url\n"
APP = (
    "from pkg.helpers import fetch\n\n\n"
    "def main(limit):\n"
    "    total = limit + 1\n"  # ``total`` is new here; ``limit`` is a parameter used before
    "    result = fetch(str(total), timeout=limit)\n"  # ``str`` built in; ``timeout=`` a keyword argument
    "    return total\n"  # ``total`` used before this line
)


def cases() -> dict[str, list[symbol_eval.SymbolCase]]:
    packages = {"pkg": [("pkg/pkg/helpers.py", HELPERS), ("pkg/pkg/app.py", APP)]}
    return symbol_eval.symbol_cases(packages, per_kind=100, seed=0)


def test_a_known_name_is_a_word_case_with_two_characters_typed():
    found = [(c.symbol, c.expected) for c in cases()["word, 2 typed"]]
    # ``limit`` (a parameter) twice after its definition and ``total`` twice after its first
    # assignment; not ``total`` where it is first assigned, not ``str`` (under 4 characters),
    # not the ``def`` lines' names.
    assert sorted(found) == [("mit", "mit + 1"), ("mit", "mit)"), ("tal", "tal"), ("tal", "tal), timeout=limit)")]


def test_a_keyword_argument_is_an_argument_case_and_not_a_word_case():
    """A call's keyword argument; a ``def``'s default (``timeout=3``) is none."""
    arguments = cases()["argument, 2 typed"]
    assert [(c.symbol, c.expected) for c in arguments] == [("meout", "meout=limit)")]
    assert all(c.text[c.offset - 2 : c.offset] == "ti" for c in arguments)


def test_the_imported_name_stays_the_imported_kind():
    found = cases()
    assert [c.symbol for c in found["imported, 2 typed"]] == ["tch"]  # ``fetch(`` from the helpers
    assert not any(c.symbol == "tch" for c in found["word, 2 typed"])

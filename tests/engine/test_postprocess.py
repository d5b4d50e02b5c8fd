from __future__ import annotations

from difill.engine.postprocess import fit_middle, to_document_line_endings, trim_suffix_overlap


def test_closing_bracket_the_suffix_already_has_is_dropped():
    assert trim_suffix_overlap("foo(x))", ")\n") == "foo(x)"


def test_balanced_closing_bracket_is_kept():
    # `f(g(x)` + `)`: the middle closes its own bracket; the suffix closes f's.
    assert trim_suffix_overlap("g(x)", ")") == "g(x)"


def test_several_duplicated_closers_are_dropped():
    assert trim_suffix_overlap("a])", "])") == "a"


def test_lines_repeating_the_suffix_start_are_dropped():
    middle = "    x = 1\n    return x\n"
    assert trim_suffix_overlap(middle, "    return x\n") == "    x = 1\n"


def test_middle_at_line_start_becomes_a_whole_line():
    assert fit_middle("x = 1", "def f():\n", "    return 2\n") == "x = 1\n"


def test_middle_at_end_of_document_gets_no_forced_newline():
    assert fit_middle("x = 1", "def f():\n", "") == "x = 1"


def test_single_line_cuts_at_the_first_newline():
    assert fit_middle("a)\nb = 2", "f(", "", single_line=True) == "a)"


def test_whitespace_only_middle_is_empty():
    assert fit_middle("  \n ", "x = ", "") == ""


def test_crlf_documents_get_crlf_middles():
    assert to_document_line_endings("a\nb\n", crlf=True) == "a\r\nb\r\n"
    assert to_document_line_endings("a\nb\n", crlf=False) == "a\nb\n"

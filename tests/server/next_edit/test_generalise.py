"""Issue 63: next edits generalised from one example on the syntax tree (generalise.py,
statements.py, strings.py, gate.py through tree_places): each class of edit the issue names, in
Python, Go, TypeScript and JavaScript, and what is no place for it."""

from __future__ import annotations

import pytest

from difill.server.features.next_edit.tree_places import tree_places

pytestmark = pytest.mark.unit


def offered(language: str, before: str, old: str, new: str) -> list[str]:
    """The edit ``old`` -> ``new`` made once in ``before``; the lines each place offered for it
    would read (its first line), best first."""
    assert before.count(old) >= 1
    after = before.replace(old, new, 1)
    cursor = after.index(new) + len(new)
    out = []
    for place in tree_places(before, after, cursor, language):
        edited = after[: place.start] + place.text + after[place.end :]
        first = place.start + len(place.text) - len(place.text.lstrip("\n"))
        out.append(edited.split("\n")[edited.count("\n", 0, first)].strip())
    return out


PY_NAMES = (
    "def label(i, j, k):\n    a = MONTH_NAMES[i]\n    b = DAY_NAMES[j]\n    c = row[k]\n    return a, b, c\n"
)
GO_NAMES = "package a\n\nfunc label(i, j int) (string, string) {\n\treturn MonthNames[i], DayNames[j]\n}\n"
JS_NAMES = "function label(i, j, k) {\n  const a = MONTH_NAMES[i];\n  const b = DAY_NAMES[j];\n  const c = row[k];\n  return [a, b, c];\n}\n"


@pytest.mark.parametrize(
    ("language", "before", "old", "new", "expected"),
    [
        ("python", PY_NAMES, "MONTH_NAMES[i]", "const.MONTH_NAMES[i]", ["b = const.DAY_NAMES[j]"]),
        (
            "go",
            GO_NAMES,
            "MonthNames[i]",
            "names.MonthNames[i]",
            ["return names.MonthNames[i], names.DayNames[j]"],
        ),
        ("typescript", JS_NAMES, "MONTH_NAMES[i]", "C.MONTH_NAMES[i]", ["const b = C.DAY_NAMES[j];"]),
        ("javascript", JS_NAMES, "MONTH_NAMES[i]", "C.MONTH_NAMES[i]", ["const b = C.DAY_NAMES[j];"]),
    ],
)
def test_a_qualifier_goes_to_other_names_of_the_same_kind(language, before, old, new, expected):
    assert offered(language, before, old, new) == expected  # never ``row[k]``: another kind of name


PY_RECEIVER = "class Q:\n    def match(self, s):\n        if cls._PATTERN.match(s):\n            return cls._TABLE[s]\n        return other._TABLE\n"
GO_RECEIVER = (
    "package a\n\nfunc (s *Q) Match(x string) bool {\n\treturn c.pattern.MatchString(x) && c.table[x]\n}\n"
)
JS_RECEIVER = "class Q {\n  match(s) {\n    return Q.PATTERN.test(s) && Q.TABLE.has(s);\n  }\n}\n"


@pytest.mark.parametrize(
    ("language", "before", "old", "new", "expected"),
    [
        ("python", PY_RECEIVER, "cls._PATTERN", "self._PATTERN", ["return self._TABLE[s]"]),
        ("go", GO_RECEIVER, "c.pattern", "s.pattern", ["return s.pattern.MatchString(x) && s.table[x]"]),
        (
            "typescript",
            JS_RECEIVER,
            "Q.PATTERN",
            "this.PATTERN",
            ["return this.PATTERN.test(s) && this.TABLE.has(s);"],
        ),
        (
            "javascript",
            JS_RECEIVER,
            "Q.PATTERN",
            "this.PATTERN",
            ["return this.PATTERN.test(s) && this.TABLE.has(s);"],
        ),
    ],
)
def test_a_receiver_changed_goes_to_its_other_attributes(language, before, old, new, expected):
    assert offered(language, before, old, new) == expected  # never ``other._TABLE``


@pytest.mark.parametrize(
    ("language", "before", "old", "new", "expected"),
    [
        ("python", "a = str(total / 100)\nb = str(total / 1000)\n", "str(total / 100)", "str(int(total / 100))",
         ["b = str(int(total / 1000))"]),
        ("go", "package a\n\nvar a = fmt.Sprint(total / 100)\nvar b = fmt.Sprint(total / 1000)\n",
         "fmt.Sprint(total / 100)", "fmt.Sprint(int(total / 100))", ["var b = fmt.Sprint(int(total / 1000))"]),
        ("typescript", "const a = String(total / 100);\nconst b = String(total / 1000);\n", "String(total / 100)",
         "String(Math.round(total / 100))", ["const b = String(Math.round(total / 1000));"]),
        ("javascript", "const a = String(total / 100);\nconst b = String(total / 1000);\n", "String(total / 100)",
         "String(Math.round(total / 100))", ["const b = String(Math.round(total / 1000));"]),
    ],
)  # fmt: skip
def test_a_wrap_goes_to_the_next_line_with_another_constant(language, before, old, new, expected):
    assert offered(language, before, old, new) == expected


@pytest.mark.parametrize(
    ("language", "before", "old", "new", "expected"),
    [
        ("python", "def f(limit, size):\n    a = limit or default_limit()\n    b = size or DEFAULT_SIZE\n",
         "limit or default_limit()", "limit if limit is not None else default_limit()",
         ["b = size if size is not None else DEFAULT_SIZE"]),
        ("go", 'package a\n\nfunc f() {\n\ta := errors.New(fmt.Sprintf("bad %d", n))\n\tb := errors.New(fmt.Sprintf("no %s", name))\n}\n',
         'errors.New(fmt.Sprintf("bad %d", n))', 'fmt.Errorf("bad %d", n)', ['b := fmt.Errorf("no %s", name)']),
        ("typescript", "function f(limit, size) {\n  const a = limit || defaultLimit();\n  const b = size || DEFAULT_SIZE;\n}\n",
         "limit || defaultLimit()", "limit ?? defaultLimit()", ["const b = size ?? DEFAULT_SIZE;"]),
        ("javascript", "function f(limit, size) {\n  const a = limit || defaultLimit();\n  const b = size || DEFAULT_SIZE;\n}\n",
         "limit || defaultLimit()", "limit !== undefined ? limit : defaultLimit()",
         ["const b = size !== undefined ? size : DEFAULT_SIZE;"]),
    ],
)  # fmt: skip
def test_a_rewrite_with_a_variable_part(language, before, old, new, expected):
    assert offered(language, before, old, new) == expected


GO_ERRORF = (
    "package a\n\nfunc read(h, t, b, s string) error {\n"
    '\tif h == "" {\n\t\treturn fmt.Errorf("bad header %q", h)\n\t}\n'
    '\tif t == "" {\n\t\treturn fmt.Errorf("bad trailer %q", t)\n\t}\n'
    '\tif b == "" {\n\t\treturn fmt.Errorf("bad body %q", b)\n\t}\n'
    '\tlog.Printf("bad sum %q", s)\n\treturn fmt.Errorf("bad sum %q", s)\n}\n'
)


@pytest.mark.parametrize(
    ("language", "before", "old", "new", "expected"),
    [
        ("go", GO_ERRORF, 'fmt.Errorf("bad header %q", h)', 'fmt.Errorf("bad header %q: %w", h, err)',
         ['return fmt.Errorf("bad trailer %q: %w", t, err)', 'return fmt.Errorf("bad body %q: %w", b, err)',
          'return fmt.Errorf("bad sum %q: %w", s, err)']),
        ("go", GO_ERRORF.replace('%q", ', '%q: %w", ').replace(", h)", ", h, err)").replace(", t)", ", t, err)"),
         'fmt.Errorf("bad header %q: %w", h, err)', 'fmt.Errorf("bad header %q", h)',
         ['return fmt.Errorf("bad trailer %q", t)']),
        ("python", "def f(a, b):\n    log.error('no %s', a)\n    log.error('bad %s', b)\n", "log.error('no %s', a)",
         "log.error('no %s', a, exc_info=True)", ["log.error('bad %s', b, exc_info=True)"]),
        ("typescript", "function f(a, b) {\n  logger.warn('no', a);\n  logger.warn('bad', b);\n}\n",
         "logger.warn('no', a)", "logger.warn('no', a, err)", ["logger.warn('bad', b, err);"]),
        ("javascript", "function f(a, b) {\n  logger.warn('no', a);\n  logger.warn('bad', b);\n}\n",
         "logger.warn('no', a)", "logger.warn('no', a, err)", ["logger.warn('bad', b, err);"]),
    ],
)  # fmt: skip
def test_an_argument_added_or_removed_goes_to_the_similar_calls(language, before, old, new, expected):
    """One of four ``fmt.Errorf`` calls: the others, never ``log.Printf``."""
    assert offered(language, before, old, new) == expected


PY_SIBLINGS = (
    "class A:\n    def grow(self, n):\n        self.check(n)\n        return n * 2\n\n"
    "    def shrink(self, n):\n        self.check(n)\n        return n // 2\n\n"
    "    def other(self, n):\n        return n\n"
)
GO_SIBLINGS = (
    "package a\n\nfunc (s *S) Grow(n int) int {\n\ts.mu.Lock()\n\tdefer s.mu.Unlock()\n\treturn n * 2\n}\n\n"
    "func (s *S) Shrink(n int) int {\n\ts.mu.Lock()\n\tdefer s.mu.Unlock()\n\treturn n / 2\n}\n"
)
JS_SIBLINGS = (
    "class A {\n  grow(n) {\n    this.check(n);\n    return n * 2;\n  }\n\n"
    "  shrink(n) {\n    this.check(n);\n    return n / 2;\n  }\n}\n"
)


@pytest.mark.parametrize(
    ("language", "before", "old", "new", "expected"),
    [
        ("python", PY_SIBLINGS, "self.check(n)\n        return n * 2", "self.check(n)\n        self.log(n)\n        return n * 2",
         ["self.log(n)"]),
        ("go", GO_SIBLINGS, "\ts.mu.Lock()\n\tdefer s.mu.Unlock()\n\treturn n * 2", "\tdefer s.mu.Unlock()\n\treturn n * 2",
         ["defer s.mu.Unlock()"]),
        ("typescript", JS_SIBLINGS, "this.check(n);\n    return n * 2;", "this.check(n);\n    this.log(n);\n    return n * 2;",
         ["this.log(n);"]),
        ("javascript", JS_SIBLINGS, "    this.check(n);\n    return n * 2;", "    return n * 2;", ["return n / 2;"]),
    ],
)  # fmt: skip
def test_a_statement_added_or_removed_goes_to_the_sibling_functions(language, before, old, new, expected):
    assert offered(language, before, old, new) == expected


def test_a_statement_added_lands_in_the_sibling_as_it_would_be_typed():
    after = PY_SIBLINGS.replace(
        "self.check(n)\n        return n * 2", "self.check(n)\n        self.log(n)\n        return n * 2"
    )
    [place] = tree_places(PY_SIBLINGS, after, after.index("self.log(n)") + 11, "python")
    assert after[: place.start] + place.text + after[place.end :] == after.replace(
        "self.check(n)\n        return n // 2", "self.check(n)\n        self.log(n)\n        return n // 2"
    )  # ``other`` has no ``self.check(n)`` to stand after: no place


@pytest.mark.parametrize(
    ("language", "before", "old", "new", "expected"),
    [
        ("python", "def f():\n    '''Grow it.'''\n\n\ndef g():\n    '''Shrink it.'''\n", "'''Grow it.'''", '"""Grow it."""',
         ['"""Shrink it."""']),
        ("python", "a = ('x %s', 1)\nb = ('y %s', 2)\n", "('x %s', 1)", "('x %s!', 1)", ["b = ('y %s!', 2)"]),
        ("javascript", "import a from 'a';\nimport b from 'b';\n", "'a'", '"a"', ['import b from "b";']),
        ("typescript", "import a from 'a';\nimport b from 'b';\n", "'a'", '"a"', ['import b from "b";']),
        ("go", 'package a\n\nvar a = fmt.Sprintf("x %d", 1)\nvar b = fmt.Sprintf("y %d", 2)\n', '"x %d", 1', '"x %d\\n", 1',
         ['var b = fmt.Sprintf("y %d\\n", 2)']),
    ],
)  # fmt: skip
def test_strings_when_the_edit_is_in_one(language, before, old, new, expected):
    assert offered(language, before, old, new) == expected


@pytest.mark.parametrize(
    ("before", "old", "new"),
    [
        ("v = ['hypothesis==3.4', 'coverage==4.2']\n", "3.4", "3.5"),  # a version bumped: content, not form
        ("def f():\n    '''Grow.'''\n\ndef g():\n    '''Shrink.'''\n", "Grow.", "Grow.\n    :param x: the size"),
        ("a = str(total / 100)\nb = str(count / 1000)\nc = str(n / 10)\nd = str(m / 5)\ne = str(k / 2)\n",
         "str(total / 100)", "str(int(total / 100))"),  # loose (no name shared) and not few: no place
        ("a = f(x)\nb = f(y)\n", "f(x)", "f(x,)"),  # half typed: waits for an argument
        ("a = f(x)\nb = f(y)\n", "f(x)", "f(x, g("),  # parses worse: never generalised
        ("a = f(x)\nb = f(y)\n", "f(x)", "f(x)  # note"),  # a comment alone
        ("def f():\n    g()\n\ndef h():\n    g()\n", "    g()\n", "    g()\n    valid\n"),  # a word on its own line
    ],
)  # fmt: skip
def test_no_place(before, old, new):
    assert offered("python", before, old, new) == []


def test_the_edits_own_function_first_then_the_nearest_places():
    before = (
        "class Q:\n    def match(self, s):\n        a = cls._PATTERN\n" + "        pass\n" * 12 + "        b = cls._TABLE\n\n"
        "    def other(self):\n        return cls._OTHER\n"
    )
    after = before.replace("cls._PATTERN", "self._PATTERN")
    rows = [after.count("\n", 0, p.start) for p in tree_places(before, after, after.index("self._PATTERN"), "python")]
    assert rows == [15, 18]  # ``b`` in match() first, then other()'s, three lines farther

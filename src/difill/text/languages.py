"""Every language difill knows by name: its grammar, how editors name it, and the syntax facts the
shapes and filters need (comments, quotes, how a block ends, what an empty body looks like).

This is the one home of language facts: ``language_of`` maps an editor's language id (or else the
file's extension) to a language here; text/syntax.py loads its grammar; text/ reads the
rest.  A language missing here still gets suggestions, shaped by text rules alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class BlockStyle(Enum):
    INDENT = "indent"  # the body is the more indented lines (Python)
    BRACES = "braces"  # ``{`` ... ``}``
    END = "end"  # a keyword line opens it and ``end`` (or ``fi``/``done``) closes it


@dataclass(frozen=True)
class LanguageSpec:
    name: str  # difill's id: the LSP language id VS Code uses
    grammar_module: str  # the PyPI grammar wheel's module (pinned in pyproject.toml)
    grammar_function: str  # its function that returns the grammar
    editor_ids: tuple[str, ...]  # other ids editors send (Neovim sends its filetype)
    extensions: tuple[str, ...]
    line_comment: tuple[str, ...]  # what starts a line comment
    block_style: BlockStyle
    stub_bodies: tuple[str, ...]  # a body that is only one of these counts as empty
    quotes: str = "\"'"  # characters that open a string on one line
    backquote_strings: bool = False  # ``...`` is a string (JS template literal, Go raw string)
    lifetimes: bool = False  # ``'a`` (Rust lifetime, label) is not an open quote
    # The language's own indentation convention, when it has one its tools enforce (gofmt: tabs);
    # "" when it has none: a document without indented lines keeps the model's own indentation.
    indent: str = ""
    # A line (stripped) that opens a block matches ``block_open``; one that closes it, ``block_close``.
    block_open: str = r"\{$"
    block_close: str = r"^[)\]}]"


# A stub ending in "(" matches any line that starts with it: ``throw new Error("later");``.
JS_STUBS = ("throw new Error(", "return;")

LANGUAGES: tuple[LanguageSpec, ...] = (
    LanguageSpec("python", "tree_sitter_python", "language", (), (".py", ".pyi"), ("#",), BlockStyle.INDENT,
                 ("pass", "...", "raise NotImplementedError", "raise NotImplementedError("), indent="    ",
                 block_open=r"[:{]$", block_close=""),
    LanguageSpec("javascript", "tree_sitter_javascript", "language", ("javascriptreact",),
                 (".js", ".mjs", ".cjs", ".jsx"), ("//",), BlockStyle.BRACES, JS_STUBS, "\"'",
                 backquote_strings=True),
    LanguageSpec("typescript", "tree_sitter_typescript", "language_typescript", (), (".ts", ".mts", ".cts"),
                 ("//",), BlockStyle.BRACES, JS_STUBS, backquote_strings=True),
    LanguageSpec("typescriptreact", "tree_sitter_typescript", "language_tsx", (), (".tsx",), ("//",),
                 BlockStyle.BRACES, JS_STUBS, backquote_strings=True),
    LanguageSpec("go", "tree_sitter_go", "language", (), (".go",), ("//",), BlockStyle.BRACES,
                 ("panic(", "return"), quotes="\"'", backquote_strings=True, indent="\t"),
    LanguageSpec("rust", "tree_sitter_rust", "language", (), (".rs",), ("//",), BlockStyle.BRACES,
                 ("todo!()", "unimplemented!()", "todo!();", "unimplemented!();"), quotes='"', lifetimes=True,
                 indent="    "),
    LanguageSpec("java", "tree_sitter_java", "language", (), (".java",), ("//",), BlockStyle.BRACES,
                 ("throw new UnsupportedOperationException(", "return;")),
    LanguageSpec("kotlin", "tree_sitter_kotlin", "language", (), (".kt", ".kts"), ("//",), BlockStyle.BRACES,
                 ("TODO(",)),
    LanguageSpec("c", "tree_sitter_c", "language", (), (".c", ".h"), ("//",), BlockStyle.BRACES, ("return;",)),
    LanguageSpec("cpp", "tree_sitter_cpp", "language", (), (".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"),
                 ("//",), BlockStyle.BRACES, ("return;",)),
    LanguageSpec("csharp", "tree_sitter_c_sharp", "language", ("cs", "c_sharp"), (".cs",), ("//",),
                 BlockStyle.BRACES, ("throw new NotImplementedException(", "return;")),
    LanguageSpec("ruby", "tree_sitter_ruby", "language", (), (".rb", ".rake", ".gemspec"), ("#",), BlockStyle.END,
                 ("raise NotImplementedError", "raise NotImplementedError(", "nil"),
                 block_open=r"^(def|class|module|if|unless|while|until|for|case|begin)\b|\b(do|then)(\s*\|[^|]*\|)?$|\{(\s*\|[^|]*\|)?$",
                 block_close=r"^(end\b|\})"),
    LanguageSpec("php", "tree_sitter_php", "language_php", (), (".php",), ("//", "#"), BlockStyle.BRACES,
                 ("throw new Exception(", "return;")),
    LanguageSpec("lua", "tree_sitter_lua", "language", (), (".lua",), ("--",), BlockStyle.END, ("return",),
                 block_open=r"\bfunction\b.*\)$|\b(then|do|else|repeat)$|\{$", block_close=r"^(end\b|until\b|\})"),
    LanguageSpec("shellscript", "tree_sitter_bash", "language", ("sh", "bash", "zsh"), (".sh", ".bash"), ("#",),
                 BlockStyle.END, (":", "true"), block_open=r"\b(then|do|else)$|\{$",
                 block_close=r"^((done|fi|esac)\b|\})"),
)  # fmt: skip

BY_NAME: dict[str, LanguageSpec] = {spec.name: spec for spec in LANGUAGES}
BY_EDITOR_ID: dict[str, LanguageSpec] = {i: s for s in LANGUAGES for i in (s.name, *s.editor_ids)}
BY_EXTENSION: dict[str, LanguageSpec] = {ext: s for s in LANGUAGES for ext in s.extensions}


# Prose languages difill knows by name without a grammar (spec_of is None: text rules shape them):
# a "#" line there is a heading, not a comment, and an apostrophe opens no string.  Editor ids
# (VS Code's and Neovim's), then extensions.
PROSE_LANGUAGES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "markdown": (("markdown",), (".md", ".markdown")),
}
PROSE_BY_ID = {i: name for name, (ids, _) in PROSE_LANGUAGES.items() for i in ids}
PROSE_BY_EXTENSION = {ext: name for name, (_, exts) in PROSE_LANGUAGES.items() for ext in exts}


def language_of(language_id: str | None, path: str = "") -> str | None:
    """difill's language for a document: its editor language id, or else its file extension;
    a prose language by name (``PROSE_LANGUAGES``); None for another language difill has no
    grammar for (text rules shape its suggestions)."""
    spec = BY_EDITOR_ID.get(language_id or "")
    if spec is not None:
        return spec.name
    return PROSE_BY_ID.get(language_id or "") or language_for_path(path)


def language_for_path(path: str) -> str | None:
    """The language of a file by its extension (a path or a URI)."""
    dot = path.rfind(".")
    extension = path[dot:].lower() if dot > path.rfind("/") else ""
    spec = BY_EXTENSION.get(extension)
    return spec.name if spec is not None else PROSE_BY_EXTENSION.get(extension)


def is_prose(language: str | None) -> bool:
    """Is ``language`` (as ``language_of`` names it) prose: no comments, no strings?"""
    return language in PROSE_LANGUAGES


# Languages whose code continues each other's: a TypeScript file's drafts may come from JavaScript.
FAMILIES = {"typescript": "javascript", "typescriptreact": "javascript"}


def family_of(language: str | None) -> str | None:
    """The family of a language named as ``language_of`` names it (itself for most)."""
    return FAMILIES.get(language or "", language)


def spec_of(language: str | None) -> LanguageSpec | None:
    """The facts of a language named as ``language_of`` names it (None: unknown)."""
    return BY_NAME.get(language or "")


# The line comment of languages difill has no grammar for, by the id editors send: the snippet
# block and an edit's instruction are written as comments, and need nothing else.  A language in
# neither table gets no snippet block (text that is not a comment there would read as code).
OTHER_LINE_COMMENTS = {
    **dict.fromkeys(
        ["perl", "r", "yaml", "toml", "makefile", "dockerfile", "julia", "elixir", "nim", "coffeescript",
         "powershell", "cmake"], "#"),
    **dict.fromkeys(
        ["swift", "scala", "dart", "groovy", "objective-c", "zig", "jsonc", "proto",
         "solidity"], "//"),
    **dict.fromkeys(["sql", "haskell", "ada", "elm"], "--"),
    **dict.fromkeys(["clojure", "lisp", "scheme"], ";;"),
}  # fmt: skip


def line_comment(language_id: str | None, path: str = "") -> str | None:
    """What starts a line comment in a document (its editor language id, or else its path's
    extension); None when difill does not know.  The one comment-syntax table: the specs above,
    then ``OTHER_LINE_COMMENTS``."""
    spec = spec_of(language_of(language_id, path))
    if spec is not None:
        return spec.line_comment[0]
    return OTHER_LINE_COMMENTS.get(language_id or "")


DEFAULT_STUBS = ("pass", "...")


def is_stub(line: str, language: str | None) -> bool:
    """Is ``line`` (one body line) a placeholder body: ``pass``, ``todo!()``, ``throw new Error(...)``?"""
    body = line.strip()
    spec = spec_of(language)
    for stub in spec.stub_bodies if spec is not None else DEFAULT_STUBS:
        if body == stub or (stub.endswith("(") and body.startswith(stub)):
            return True
    return body == "..."

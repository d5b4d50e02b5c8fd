"""Issue 63 through the real server: an edit typed as an editor sends it (ranged didChanges, a
word or a symbol at a time), then ``textDocument/copilotInlineEdit`` offers the same edit
generalised on the syntax tree at the other places it fits, and nothing while it is half made."""

from __future__ import annotations

from lsp_helpers import _plain, open_document, running_server, send_raw_request
from lsprotocol import types

from lab.bench_server import position_of
from lab.next_edit_eval import keystrokes

METHOD = "textDocument/copilotInlineEdit"


class Typist:
    """One document, edited as an editor sends it, asked for next edits as a client asks."""

    def __init__(self, client, uri: str, text: str, language: str) -> None:
        self.client, self.uri, self.text, self.version = client, uri, text, 1
        open_document(client, uri, text, language)

    def change(self, start: int, end: int, new: str) -> int:
        rng = types.Range(start=position_of(self.text, start), end=position_of(self.text, end))
        self.version += 1
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
            content_changes=[types.TextDocumentContentChangePartial(range=rng, text=new)],
        ))  # fmt: skip
        self.text = self.text[:start] + new + self.text[end:]
        return start + len(new)

    async def type(self, old: str, new: str) -> dict[str, list[dict]]:
        """``old`` (its first occurrence) retyped as ``new``, asking after each step as a client
        does after its debounce; the edits answered, by what the line read then."""
        at = self.text.index(old)
        answers = {}
        for step in keystrokes(self.text, (at, at + len(old), new)):
            cursor = self.change(*step)
            line = self.text[self.text.rfind("\n", 0, cursor) + 1 : self.text.find("\n", cursor)]
            answers[line.strip()] = await self.ask(cursor)
        self.cursor = cursor
        return answers

    async def ask(self, cursor: int) -> list[dict]:
        position = position_of(self.text, cursor)
        params = {
            "textDocument": {"uri": self.uri, "version": self.version},
            "position": {"line": position.line, "character": position.character},
            "context": {"triggerKind": 2},
        }
        answer = await send_raw_request(self.client, METHOD, params, f"ne-{self.uri}-{self.version}")
        return _plain(answer)["edits"]

    def applied(self, edit: dict) -> str:
        """The document with ``edit`` applied (what Tab does), sent as the client sends it."""
        rng = edit["range"]
        lines = self.text.split("\n")
        low = sum(len(x) + 1 for x in lines[: rng["start"]["line"]]) + rng["start"]["character"]
        high = sum(len(x) + 1 for x in lines[: rng["end"]["line"]]) + rng["end"]["character"]
        self.change(low, high, edit["text"])
        return self.text


NAMES = (
    "import const\n\n\ndef label(i, j, k):\n"
    "    a = MONTH_NAMES[i]\n    b = DAY_NAMES[j]\n    c = row[k]\n    return a, b, c\n"
)


async def test_a_qualifier_typed_is_offered_for_a_name_of_the_same_kind(tiny_model_dir):
    async with running_server(tiny_model_dir) as client:
        doc = Typist(client, "file:///tmp/next_edit/names.py", NAMES, "python")
        answers = await doc.type("MONTH_NAMES[i]", "const.MONTH_NAMES[i]")
        assert answers["a = const."] == [] and answers["a = const.MONTH_NAMES["] == []  # half made
        edits = answers["a = const.MONTH_NAMES[i]"]
        assert [e["range"]["start"]["line"] for e in edits] == [5]
        assert "    b = const.DAY_NAMES[j]\n" in doc.applied(edits[0])  # never ``row[k]``


ERRORF = (
    "package a\n\nimport \"fmt\"\n\nfunc read(h, t, b string, err error) error {\n"
    '\tif h == "" {\n\t\treturn fmt.Errorf("bad header %q", h)\n\t}\n'
    '\tif t == "" {\n\t\treturn fmt.Errorf("bad trailer %q", t)\n\t}\n'
    '\tif b == "" {\n\t\treturn fmt.Errorf("bad body %q", b)\n\t}\n'
    '\tfmt.Printf("bad sum %q", b)\n\treturn nil\n}\n'
)


async def test_an_argument_added_to_one_errorf_goes_to_the_others_one_tab_at_a_time(tiny_model_dir):
    async with running_server(tiny_model_dir) as client:
        doc = Typist(client, "file:///tmp/next_edit/errors.go", ERRORF, "go")
        answers = await doc.type('"bad header %q", h)', '"bad header %q: %w", h, err)')
        final = 'return fmt.Errorf("bad header %q: %w", h, err)'
        assert len(answers) == 15 and all(edits == [] for line, edits in answers.items() if line != final)
        edits = answers[final]
        assert [e["range"]["start"]["line"] for e in edits] == [9, 12]  # the nearest first
        assert '\t\treturn fmt.Errorf("bad trailer %q: %w", t, err)\n' in doc.applied(edits[0])
        # Tab again: the one left, and never ``fmt.Printf``.
        edits = await doc.ask(doc.text.index("err)", doc.text.index("bad trailer")) + 4)
        assert [e["range"]["start"]["line"] for e in edits] == [12]
        assert '\t\treturn fmt.Errorf("bad body %q: %w", b, err)\n' in doc.applied(edits[0])

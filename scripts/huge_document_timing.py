"""Time what a huge document costs the server per step: open, line index, parse, one keystroke.

Run: .venv/bin/python scripts/huge_document_timing.py  (docs/reliability.md quotes its figures;
with MAX_TREE_BYTES in place the parses print None-fast.)
"""

import time

from lsprotocol import types

from difill.server.config import Settings
from difill.server.documents import UTF16, Documents
from difill.server.served import context_for
from difill.server.trees import SyntaxTrees

text = "value = compute(1, 2)  # a line\n" * 650_000  # ~20 MB
print(len(text) / 1e6, "MB")
docs = Documents()
trees = SyntaxTrees()
t = time.perf_counter()
d = docs.open("file:///h.py", "python", 1, text)
print("open", round(time.perf_counter() - t, 3))
t = time.perf_counter()
d.line_starts
print("line_starts", round(time.perf_counter() - t, 3))
t = time.perf_counter()
tree = trees.tree_for(d)
print("parse", round(time.perf_counter() - t, 3))
at = types.Position(line=300000, character=5)
t = time.perf_counter()
d2 = docs.change(
    "file:///h.py",
    2,
    [types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text="x")],
    UTF16,
)
print("change", round(time.perf_counter() - t, 3))
t = time.perf_counter()
tree = trees.tree_for(d2)
print("reparse", round(time.perf_counter() - t, 3))
off = d2.offset_at(at, UTF16)
t = time.perf_counter()
ctx = context_for(d2.text, off, "python", d2.uri, Settings(), tree)
print("context", round(time.perf_counter() - t, 3))
line = "x = [" + "1, " * 700_000 + "]\n"
d3 = docs.open("file:///l.py", "python", 1, line)
t = time.perf_counter()
trees.tree_for(d3)
print("parse 2MB line", round(time.perf_counter() - t, 3))

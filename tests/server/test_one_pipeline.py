"""One middle, three ways to the editor: ``difill fill``, the LSP server and ``ServedModel`` (eval).

A backend that always writes the same messy middle sits behind a real ``difill serve-http`` app.
``difill fill --remote`` and ``difill serve`` (with the ``remote`` setting) both reach it over
HTTP; ``ServedModel`` calls it in process, as ``difill eval`` does.  All three must show the same
text, and that text is the pipeline's: the next line the document already has is dropped, the
trailing blank lines go, and the document's CRLF line endings come back.
"""

from __future__ import annotations

import subprocess
import sys

from lsp_helpers import inline_params, open_document, running_server

from difill.engine.api import Candidate, FillResult, FillStats
from difill.server.serve_http import FillService, build_app, serve_in_thread
from difill.server.suggestion_path import ServedModel

DOCUMENT = "def area(w, h):\r\n    \r\n\r\nprint(area(2, 3))\r\n"
CURSOR = (1, 4)  # line 2, after the indentation
MIDDLE = "total = w * h\n    return total\n\n\nprint(area(2, 3))"
SHOWN = "total = w * h\r\n    return total"


class FixedMiddle:
    """An InfillBackend whose model always writes MIDDLE."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        self.options: list = []

    def fill(self, prefix, suffix, options=None, should_stop=None, on_preview=None) -> FillResult:
        self.requests.append((prefix, suffix))
        self.options.append(options)
        return FillResult(MIDDLE, [Candidate(MIDDLE, 16, -0.2, True)], FillStats(decoder_forwards=1))

    def fill_holes(self, *args, **kwargs):
        raise NotImplementedError

    def rewrite(self, *args, **kwargs):
        raise NotImplementedError


def offset_of(line: int, character: int) -> int:
    return sum(len(x) for x in DOCUMENT.splitlines(keepends=True)[:line]) + character


def test_eval_path_shows_the_pipelines_text():
    backend = FixedMiddle()
    shown = ServedModel(backend).suggest(DOCUMENT, offset_of(*CURSOR), "file:///area.py")
    assert shown.text == SHOWN
    (prefix, suffix), *_ = backend.requests
    assert "\r" not in prefix + suffix  # the model reads LF: line endings are decided once


async def test_fill_the_lsp_server_and_eval_show_the_same_text(tmp_path):
    backend = FixedMiddle()
    url, stop = serve_in_thread(build_app(FillService(backend, "fixed", "cpu", 2), None))
    try:
        source = tmp_path / "area.py"
        source.write_bytes(DOCUMENT.encode())
        line, character = CURSOR
        shown: dict[bool, tuple[str, str, str]] = {}
        for invoked in (True, False):  # `difill fill` asks as Alt+\\ does; --typing, as typing does
            done = subprocess.run(
                [sys.executable, "-m", "difill", "fill", "--remote", url,
                 f"{source}:{line + 1}:{character + 1}", *([] if invoked else ["--typing"])],
                capture_output=True, timeout=60,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr.decode()
            from_cli = done.stdout.decode()[: -len("\n")]  # print() adds one newline

            async with running_server(None, init_options={"remote": url}) as client:
                uri = source.as_uri()
                open_document(client, uri, DOCUMENT)
                result = await client.text_document_inline_completion_async(
                    inline_params(uri, line, character, invoked=invoked)
                )
            items = result.items if hasattr(result, "items") else result
            from_lsp = items[0].insert_text
            from_eval = ServedModel(backend).suggest(DOCUMENT, offset_of(*CURSOR), uri, invoked=invoked).text
            shown[invoked] = (from_cli, from_lsp, from_eval)
    finally:
        stop()
    for from_cli, from_lsp, from_eval in shown.values():
        assert from_cli == from_lsp == from_eval == SHOWN


def test_difill_fill_asks_as_an_invoked_request_and_typing_as_ghost_text(tmp_path, capsys):
    """`difill fill` is a request the user made: whole middles, several hole lengths. With
    --typing it is ghost text while typing: one hole length, the model's own ghost-text cut."""
    from difill import cli

    backend = FixedMiddle()
    url, stop = serve_in_thread(build_app(FillService(backend, "fixed", "cpu", 2), None))
    try:
        source = tmp_path / "area.py"
        source.write_bytes(DOCUMENT.encode())
        location = f"{source}:{CURSOR[0] + 1}:{CURSOR[1] + 1}"
        assert cli.main(["fill", "--remote", url, location]) == 0
        asked = backend.options[-1]
        assert cli.main(["fill", "--remote", url, location, "--typing"]) == 0
        typing = backend.options[-1]
    finally:
        stop()
    assert capsys.readouterr().out == SHOWN + "\n" + SHOWN + "\n"
    assert asked.min_token_prob == 0.0 and len(asked.candidate_lengths()) > 1
    assert typing.min_token_prob is None and len(typing.candidate_lengths()) == 1

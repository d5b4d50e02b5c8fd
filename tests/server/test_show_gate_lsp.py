"""The show gate through ``difill serve`` on the shipped model (the one its calibration was fitted
on): what it holds back is never shown, the log says why, and comments can be turned off.  Each
case is checked against the same cursor with the gate open (``minShowProbability: 0``), so a
test fails if the gate stops holding back, not merely when the model writes nothing."""

from __future__ import annotations

from lsp_helpers import changed_settings, inline_params, open_document, running_server

CODE = "import os\n\n\ndef main(root):\n    path = os.path.join(root, 'a')\n    print(pa"
# The comment's words occurred before: a draft from this file continues them.
COMMENT = (
    "import os\n\n\ndef first(root):\n    # join the root with the name of the file we read\n    return root\n\n\n"
    "def main(root):\n    # join the root with the name of the "
)


async def shown(client, uri: str, text: str) -> list[str]:
    lines = text.split("\n")
    answer = await client.text_document_inline_completion_async(
        inline_params(uri, len(lines) - 1, len(lines[-1]), invoked=False)
    )
    return [item.insert_text for item in answer.items] if answer else []


async def test_ghost_text_below_the_bar_is_held_back_and_the_log_says_why(tmp_path):
    log_file = tmp_path / "server.log"
    async with running_server(None, extra_args=("--log-file", str(log_file))) as client:
        uri = "file:///tmp/show-gate/code.py"
        open_document(client, uri, CODE)
        async with changed_settings(client, {"minShowProbability": 0, "minTokenProb": 0}):
            assert await shown(client, uri, CODE)  # the gate open: the filters leave a text
        async with changed_settings(client, {"minShowProbability": 0.999999, "minTokenProb": 0}):
            assert await shown(client, uri, CODE) == []
    assert "ghost text not shown: P(right)" in log_file.read_text()


async def test_comment_suggestions_off_shows_nothing_in_a_comment():
    async with running_server(None) as client:
        uri = "file:///tmp/show-gate/comment.py"
        open_document(client, uri, COMMENT)
        async with changed_settings(client, {"minShowProbability": 0, "minTokenProb": 0}):
            assert await shown(client, uri, COMMENT)
        async with changed_settings(
            client, {"minShowProbability": 0, "minTokenProb": 0, "commentSuggestions": False}
        ):
            assert await shown(client, uri, COMMENT) == []

"""The seeded canvas from the user's side: `difill fill --remote-canvas` and the LSP server's
`remoteCanvas` setting, against the fake vLLM (lab/fake_vllm.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from lab.fake_vllm import FakeVllm

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server"))  # lsp_helpers, as test_one_pipeline
from lsp_helpers import inline_params, open_document, running_server  # noqa: E402

from difill import cli  # noqa: E402

DOCUMENT = "def add(a, b):\n    return \n\nprint(add(1, 2))\n"
CURSOR = (1, 11)  # after "return "


def test_difill_fill_takes_remote_canvas(fake_server, tmp_path, capsys):
    source = tmp_path / "add.py"
    source.write_text(DOCUMENT)
    location = f"{source}:{CURSOR[0] + 1}:{CURSOR[1] + 1}"
    seeded, plain = FakeVllm(), FakeVllm()
    assert cli.main(["fill", "--remote", fake_server(seeded), "--remote-canvas", "seeded", location]) == 0
    assert capsys.readouterr().out == "a + b\n"
    assert len(seeded.seeded_bodies()) == 1
    assert cli.main(["fill", "--remote", fake_server(plain), "--remote-canvas", "plain", location]) == 0
    assert capsys.readouterr().out == "chat(a, b)\n" and plain.seeded_bodies() == []


async def test_the_lsp_server_fills_through_the_seeded_canvas_and_says_so(fake_server, tmp_path):
    fake = FakeVllm(canvas_length=256)
    url = fake_server(fake)
    uri = (tmp_path / "add.py").as_uri()
    async with running_server(None, init_options={"remote": url, "remoteCanvas": "auto"}) as client:
        ready = next(s for s in client.statuses if s.get("state") == "ready")
        open_document(client, uri, DOCUMENT)
        result = await client.text_document_inline_completion_async(inline_params(uri, *CURSOR, invoked=True))
    items = result.items if hasattr(result, "items") else result
    assert items[0].insert_text == "a + b"
    assert "seeded canvas (vLLM 0.33.0)" in ready["message"]
    # the warm-up fill and the completion, each with the code after the cursor pinned
    assert len(fake.seeded_bodies()) == 2 and all(
        b["vllm_xargs"]["diffusion_pinned"] for b in fake.seeded_bodies()
    )

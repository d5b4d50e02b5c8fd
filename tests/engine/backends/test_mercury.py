"""Inception's Mercury as a remote (issue 64 item 6), against the fake built from its published
shapes (lab/fake_mercury.py): the bodies difill sends, the answers it reads, the key's path."""

from __future__ import annotations

import pytest

from difill.engine import secrets
from difill.engine.api import BackendError, FillOptions, RewriteRequest
from difill.engine.backends import BackendSpec, make_backend
from difill.engine.backends.connect import connect
from difill.engine.backends.mercury import MercuryRemote, edit_prompt, unfenced
from difill.engine.backends.remote import RemoteConfig
from lab.fake_mercury import KEY, SECTIONS, FakeMercury

FIM = "/v1/fim/completions"
EDIT = "/v1/edit/completions"


@pytest.fixture()
def mercury(fake_server, monkeypatch) -> tuple[FakeMercury, MercuryRemote]:
    monkeypatch.setenv("DIFILL_API_KEY", KEY)
    fake = FakeMercury(edit=lambda region: region.replace("width", "w"))
    backend = make_backend(BackendSpec(remote=fake_server(fake), remote_kind="mercury"))
    assert isinstance(backend, MercuryRemote)
    return fake, backend


def test_ghost_text_is_a_published_fim_request(mercury):
    fake, backend = mercury
    result = backend.fill("def add(a, b):\n    return ", "\n", FillOptions(max_hole_tokens=24, single_line=True))
    assert result.text == "a + b"
    (body,) = fake.bodies(FIM)
    assert body == {
        "model": "mercury-edit-2", "prompt": "def add(a, b):\n    return ", "suffix": "\n", "max_tokens": 24,
        "temperature": 0.0, "stream": False, "stop": ["\n"],
    }  # fmt: skip
    assert all(authorized for _, _, authorized in fake.requests)


def test_a_next_edit_is_the_region_mercury_rewrote_with_the_cursor_and_the_diff(mercury):
    fake, backend = mercury
    request = RewriteRequest(
        "import math\n", "def area(w, height):\n    return width * height\n", "\nprint(area(2, 3))\n",
        cursor=10, history="@@ -2,1 +2,1 @@\n-def area(width, height):\n+def area(w, height):\n",
    )  # fmt: skip
    result = backend.rewrite(request, FillOptions(language="python"))
    assert result.text == "def area(w, height):\n    return w * height\n"  # whitespace kept
    assert result.candidates[0].source == "remote" and result.candidates[0].change_logprob is None
    (body,) = fake.bodies(EDIT)
    content = body["messages"][0]["content"]
    match = SECTIONS.match(content)
    assert match is not None and match.group("region") == "def area(w<|cursor|>, height):\n    return width * height\n"
    assert "--- file.py\n+++ file.py\n@@ -2,1 +2,1 @@\n-def area(width, height):\n" in match.group("history")
    assert "current_file_path: file.py\n" in content  # the language, no folder of the user's


def test_none_is_no_edit_and_an_instruction_is_refused(fake_server, monkeypatch):
    monkeypatch.setenv("DIFILL_API_KEY", KEY)
    backend = connect(RemoteConfig(fake_server(FakeMercury()), protocol="mercury"))
    assert backend.rewrite(RewriteRequest("", "x = 1\n", "")).candidates == []
    with pytest.raises(BackendError, match="takes no instruction"):
        backend.rewrite(RewriteRequest("", "x = 1\n", "", instruction="add type hints"))


def test_the_key_comes_from_the_environment_and_is_never_shown(fake_server, monkeypatch):
    fake = FakeMercury()
    url = fake_server(fake)
    monkeypatch.delenv("DIFILL_API_KEY", raising=False)
    monkeypatch.setenv("INCEPTION_API_KEY", KEY)  # Inception's own name works too
    assert connect(RemoteConfig(url, protocol="mercury")).fill("x = ", "\n").text == "a + b"
    monkeypatch.setenv("INCEPTION_API_KEY", "sk-wrong-key-987654")
    with pytest.raises(BackendError) as refused:
        connect(RemoteConfig(url, protocol="mercury")).fill("x = ", "\n")
    assert "401" in str(refused.value) and "sk-wrong-key-987654" not in secrets.scrub(str(refused.value))


def test_inceptions_host_is_mercury_without_asking():
    backend = connect(RemoteConfig("https://api.inceptionlabs.ai"))
    assert isinstance(backend, MercuryRemote) and "mercury-edit-2" in backend.describe_path()


def test_the_prompt_has_the_published_empty_sections():
    content = edit_prompt(RewriteRequest("", "x = 1\n", ""), None)
    assert content.startswith("<|recently_viewed_code_snippets|>\n\n<|/recently_viewed_code_snippets|>\n\n")
    assert content.endswith("<|edit_diff_history|>\n\n<|/edit_diff_history|>")
    assert SECTIONS.match(content) is not None


def test_unfenced_keeps_whitespace():
    assert unfenced("```python\n    x = 1\n\n```") == "    x = 1\n\n"
    assert unfenced("    x = 1\n") == "    x = 1\n"

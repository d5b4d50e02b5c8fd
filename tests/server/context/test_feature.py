"""The workspace index inside the server: folders from initialize and workspace events, watched
files, settings, and a real ``difill serve`` that keeps answering through bad workspace input."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from lsp_helpers import inline_params, open_document, running_server, wait_for
from lsprotocol import types
from pytest_lsp import client_capabilities

from difill.server.config import Settings
from difill.server.context.feature import ContextFeature
from difill.server.documents import Documents


class FakeServer:
    client_has_progress = False

    def __init__(self) -> None:
        self.registrations: list[types.RegistrationParams] = []

    def client_register_capability(self, params: types.RegistrationParams) -> None:
        self.registrations.append(params)


def initialize_params(**fields) -> types.InitializeParams:
    capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True)
        )
    )
    return types.InitializeParams(capabilities=capabilities, **fields)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_folders_come_from_initialize(tmp_path):
    feature = ContextFeature(Documents(), Settings)
    a, b = tmp_path / "a", tmp_path / "b"
    feature.initialize(
        initialize_params(
            workspace_folders=[types.WorkspaceFolder(uri=a.as_uri(), name="a")], root_uri=b.as_uri()
        )
    )
    assert feature.folders == [str(a)] and feature.client_watches_dynamically
    feature.initialize(initialize_params(root_uri=b.as_uri()))
    assert feature.folders == [str(b)]
    feature.initialize(initialize_params(root_uri="untitled:Untitled-1"))  # not a folder on disk
    assert feature.folders == []
    feature.initialize(types.InitializeParams(capabilities=types.ClientCapabilities(), root_path=str(a)))
    assert feature.folders == [str(a)] and not feature.client_watches_dynamically


def test_events_reach_the_index_and_settings_turn_it_off(tmp_path):
    documents = Documents()
    settings = [Settings()]
    feature = ContextFeature(documents, lambda: settings[0])
    first, second = tmp_path / "first", tmp_path / "second"
    write(first / "one.py", "def first_helper():\n    return 1\n")
    write(second / "two.py", "def second_helper():\n    return 2\n")
    feature.initialize(initialize_params(workspace_folders=[types.WorkspaceFolder(first.as_uri(), "first")]))
    server = FakeServer()
    feature.start(server)
    try:
        (registration,) = server.registrations[0].registrations
        assert registration.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES

        uri = (tmp_path / "current.py").as_uri()
        documents.open(uri, "python", 1, "x = first_helper()\ny = second_helper()\n\n")
        feature.document_opened(uri)

        def definitions() -> set[str]:
            assert feature.index is not None and feature.index.wait_idle(30)
            text = documents.get(uri).text
            retrieval = feature.retrieve(uri, text, len(text), "python")
            return {s.path for s in retrieval.snippets if s.kind == "definition"}

        assert definitions() == {"one.py"}
        event = types.WorkspaceFoldersChangeEvent(
            added=[types.WorkspaceFolder(second.as_uri(), "second"), types.WorkspaceFolder("bad uri", "x")],
            removed=[types.WorkspaceFolder(first.as_uri(), "first")],
        )
        feature.folders_changed(event)
        assert definitions() == {"two.py"}

        write(second / "three.py", "def first_helper():\n    return 3\n")
        feature.watched_files_changed(
            [
                types.FileEvent((second / "three.py").as_uri(), types.FileChangeType.Created),
                types.FileEvent("file://%zz/broken", types.FileChangeType.Changed),
                types.FileEvent("https://example.com/x.py", types.FileChangeType.Changed),
            ]
        )
        assert definitions() == {"two.py", "three.py"}
        (second / "three.py").unlink()
        feature.watched_files_changed(
            [types.FileEvent((second / "three.py").as_uri(), types.FileChangeType.Deleted)]
        )
        assert definitions() == {"two.py"}

        before = settings[0]
        settings[0] = dataclasses.replace(before, workspace_index=False)
        feature.settings_changed(before, settings[0])
        assert feature.index is None and feature.retrieve(uri, "x", 1, "python") is None
        feature.settings_changed(settings[0], before)  # back on: rebuilt from the current folders
        settings[0] = before
        feature.settings_changed(dataclasses.replace(before, workspace_index=False), before)
        assert definitions() == {"two.py"}
    finally:
        feature.shutdown()


async def test_the_server_indexes_with_progress_and_survives_bad_workspace_input(tiny_model_dir, tmp_path):
    workspace, first = tmp_path / "ws", tmp_path / "first"
    write(first / "start.py", "started = True\n")
    write(
        workspace / "pkg/util.py",
        "def load_config(path):\n    return open(path).read()\n\n\nconfig = load_config('settings.toml')\n",
    )
    capabilities = client_capabilities("visual-studio-code")
    async with running_server(
        tiny_model_dir,
        "visual_studio_code",
        # minTokenProb 1: the random model's own text never shows, so what shows is the index's draft.
        {"workspaceIndex": True, "contextDrafts": "show", "minTokenProb": 1.0},
        wait_ready=False,
        capabilities=capabilities,
        root_uri=first.as_uri(),
    ) as client:
        client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[types.WorkspaceFolder(workspace.as_uri(), "ws")],
                    removed=[types.WorkspaceFolder(first.as_uri(), "first")],
                )
            )
        )
        await wait_for(
            lambda: any(
                token.startswith("difill-index-") and reports and reports[-1].kind == "end"
                for token, reports in client.progress_reports.items()
            ),
            60,
            "the index's progress to end",
        )
        bad_folders = [
            types.WorkspaceFolder("file:///does/not/exist", "gone"),
            types.WorkspaceFolder("not a uri at all", "bad"),
            types.WorkspaceFolder(workspace.as_uri(), "twice"),
        ]
        client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(added=bad_folders, removed=[])
            )
        )
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent("file:///etc/passwd", types.FileChangeType.Changed),
                    types.FileEvent("file://%%%", types.FileChangeType.Created),
                    types.FileEvent((workspace / "missing.py").as_uri(), types.FileChangeType.Deleted),
                ]
            )
        )
        open_document(
            client, (workspace / "main.py").as_uri(), "from pkg.util import load_config\n\nsettings = load_"
        )
        result = await asyncio.wait_for(
            client.text_document_inline_completion_async(
                inline_params((workspace / "main.py").as_uri(), 2, 16, invoked=False)
            ),
            60,
        )
        # Still answering, from the same index: the draft is what followed "= load_" in
        # pkg/util.py, and nothing of /etc/passwd or the bad folders got in.
        assert [item.insert_text for item in result.items] == ["config('settings.toml')"]

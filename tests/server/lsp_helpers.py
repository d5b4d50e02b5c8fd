"""Start the real ``difill serve`` subprocess under pytest-lsp with a client profile."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

# One torch thread: this machine's two cores are shared with training jobs, and two OpenMP
# threads fighting for them make a tiny fill take seconds instead of milliseconds.
SERVER_ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
PROFILES = {"neovim": "neovim@v0.11.0", "visual_studio_code": "visual-studio-code"}


def server_command(model_dir: Path | str | None, *extra: str) -> list[str]:
    command = [sys.executable, "-m", "difill", "serve"]
    if model_dir is not None:
        command += ["--model", str(model_dir)]
    return command + list(extra)


def make_client() -> LanguageClient:
    """pytest-lsp's client, also recording difill's own notifications and applyEdit requests."""
    client = make_test_lsp_client()
    client.statuses: list[dict] = []  # type: ignore[attr-defined]
    client.previews: list[dict] = []  # type: ignore[attr-defined]
    client.applied_edits: list[types.ApplyWorkspaceEditParams] = []  # type: ignore[attr-defined]

    @client.feature("difill/status")
    def on_status(ls: LanguageClient, params: Any) -> None:
        ls.statuses.append(_plain(params))

    @client.feature("difill/preview")
    def on_preview(ls: LanguageClient, params: Any) -> None:
        ls.previews.append(_plain(params))

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def on_apply_edit(ls: LanguageClient, params: types.ApplyWorkspaceEditParams):
        ls.applied_edits.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    return client


def _plain(params: Any) -> Any:
    """pygls hands a custom notification's params over as namedtuples, nested ones included."""
    if hasattr(params, "_asdict"):
        params = params._asdict()
    if isinstance(params, dict):
        return {key: _plain(value) for key, value in params.items()}
    if isinstance(params, list):
        return [_plain(value) for value in params]
    return params


@contextlib.asynccontextmanager
async def running_server(
    model_dir: Path | str | None,
    profile: str = "visual_studio_code",
    init_options: dict | None = None,
    extra_args: tuple[str, ...] = (),
    wait_ready: bool = True,
    capabilities: types.ClientCapabilities | None = None,
    root_uri: str = "file:///tmp",
):
    if init_options is None or (isinstance(init_options, dict) and "workspaceIndex" not in init_options):
        # The root is /tmp by default: these servers do not index it (the workspace index has its
        # own tests, tests/server/context/, which turn it on over a folder of their own).
        init_options = {"workspaceIndex": False, **(init_options or {})}
    config = ClientServerConfig(
        server_command=server_command(model_dir, *extra_args),
        client_factory=make_client,
        server_env=SERVER_ENV,
    )
    client = await config.start()
    try:
        client.init_result = await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities or client_capabilities(PROFILES[profile]),
                initialization_options=init_options,
                root_uri=root_uri,
            )
        )
        if wait_ready:
            await wait_for_status(client, "ready")
        yield client
        await client.shutdown_session()
    except BaseException:
        # A failure inside the block skips the shutdown above: the server would never exit, and
        # client.stop() would wait for it forever instead of reporting the failure.  Ask it to
        # shut down, briefly, then kill it.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_session(), 5)
        server = client._server  # pygls' JsonRPCClient: the server process it started
        if server is not None and server.returncode is None:
            server.kill()
        raise
    finally:
        await client.stop()


async def wait_for(predicate, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def wait_for_status(client: LanguageClient, state: str, after: int = 0, timeout: float = 60.0) -> dict:
    def found():
        return next((s for s in client.statuses[after:] if s.get("state") == state), None)

    await wait_for(lambda: found() is not None, timeout, f"difill/status {state!r}")
    return found()


def open_document(
    client: LanguageClient, uri: str, text: str, language: str = "python", version: int = 1
) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id=language, version=version, text=text)
        )
    )


def inline_params(uri: str, line: int, character: int, invoked: bool = True) -> types.InlineCompletionParams:
    kind = (
        types.InlineCompletionTriggerKind.Invoked if invoked else types.InlineCompletionTriggerKind.Automatic
    )
    return types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=character),
        context=types.InlineCompletionContext(trigger_kind=kind),
    )


def range_change(
    uri: str, version: int, line: int, start: int, end: int, text: str
) -> types.DidChangeTextDocumentParams:
    """``text`` in place of characters ``start``..``end`` of ``line``."""
    rng = types.Range(
        start=types.Position(line=line, character=start), end=types.Position(line=line, character=end)
    )
    return types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(range=rng, text=text)],
    )


def insert_change(
    uri: str, version: int, line: int, character: int, text: str
) -> types.DidChangeTextDocumentParams:
    return range_change(uri, version, line, character, character, text)


def change_text(
    client: LanguageClient, uri: str, version: int, line: int, start: int, end: int, text: str
) -> None:
    """Send ``range_change``: what an editor sends when the user replaces part of a line."""
    client.text_document_did_change(range_change(uri, version, line, start, end, text))


async def send_raw_request(client: LanguageClient, method: str, params: Any, msg_id: str) -> Any:
    """Send a request exactly as given (pygls would refuse to serialise malformed parameters)."""
    from concurrent.futures import Future

    future: Future = Future()
    client.protocol._request_futures[msg_id] = future
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await asyncio.wait_for(asyncio.wrap_future(future), 10)


@contextlib.asynccontextmanager
async def changed_settings(client: LanguageClient, values: dict):
    """didChangeConfiguration with ``values``; back to the initial settings afterwards."""
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"difill": values}))
    try:
        yield
    finally:
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"difill": {}}))


async def assert_inline_as_torch(
    client: LanguageClient, uri: str, document: str, line: int, character: int
) -> None:
    """An invoked inline completion from ``client``'s engine is what ``difill serve --engine torch``
    gives at the same place (the engines besides torch: llama.cpp, MLX)."""
    open_document(client, uri, document)
    ours = await client.text_document_inline_completion_async(
        inline_params(uri, line, character, invoked=True)
    )
    async with running_server(None, "neovim", extra_args=("--engine", "torch")) as torch_client:
        open_document(torch_client, uri, document)
        theirs = await torch_client.text_document_inline_completion_async(
            inline_params(uri, line, character, invoked=True)
        )
    assert ours.items and [i.insert_text for i in ours.items] == [i.insert_text for i in theirs.items]

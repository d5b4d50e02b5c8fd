"""Which class talks to a server, chosen once: ``connect(config)``.

``protocol`` "difill" or "openai" names the class outright.  "auto" (the default: the settings
name no protocol) can only be answered by the server, so ``AutoRemote`` asks it once, on the first
request (``GET /health``: difill serve-http answers ``{"server": "difill"}``), makes that class on
the same connection and hands every request to it from then on.  Asking on the first request, not
here, keeps making a backend free of network calls: the server's warm-up fill asks, where a newer
load can cancel it (server/engine_host.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from urllib.parse import urlsplit

from difill.engine.api import (
    DEFAULT_HOLE_MARKER,
    FillOptions,
    FillResult,
    HolesResult,
    PreviewCallback,
    RewriteRequest,
    ShouldStop,
)
from difill.engine.backends.difill_remote import DifillRemote
from difill.engine.backends.mercury import HOST as MERCURY_HOST
from difill.engine.backends.mercury import MercuryRemote
from difill.engine.backends.openai_remote import OpenAIRemote
from difill.engine.backends.remote import RemoteBackend, RemoteConfig
from difill.engine.backends.transport import HttpStatusError
from difill.engine.backends.vllm_names import NameScoringFailed

PROTOCOL_CLASSES: dict[str, type[DifillRemote | OpenAIRemote | MercuryRemote]] = {
    "difill": DifillRemote,
    "openai": OpenAIRemote,
    "mercury": MercuryRemote,
}


def connect(config: RemoteConfig) -> RemoteBackend:
    """The backend for ``config``'s server: its protocol's class, or one that finds the protocol.
    Inception's host is Mercury (it has no ``/health`` to ask)."""
    if config.protocol == "auto" and _host(config.url) == MERCURY_HOST:
        config = replace(config, protocol="mercury")
    if config.protocol == "auto":
        return AutoRemote(config)
    return PROTOCOL_CLASSES[config.protocol](config)


def _host(url: str) -> str:
    """The URL's host; "" where it does not parse (the transport then says why, scrubbed)."""
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


class AutoRemote(RemoteBackend):
    """A server whose protocol is found on the first request; ``chosen`` serves every request."""

    server_kind = "difill or OpenAI-compatible"

    def __init__(self, config: RemoteConfig) -> None:
        super().__init__(config)
        self.chosen: DifillRemote | OpenAIRemote | None = None

    @property
    def protocol(self) -> str:  # "auto" until the server said which
        return self.chosen.protocol if self.chosen is not None else "auto"

    def describe_path(self) -> str:
        return self.chosen.describe_path() if self.chosen is not None else "protocol found on the first fill"

    def fill(
        self,
        prefix: str,
        suffix: str,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_preview: PreviewCallback | None = None,
    ) -> FillResult:
        return self._choose(should_stop).fill(prefix, suffix, options, should_stop, on_preview)

    def fill_holes(
        self,
        text: str,
        marker: str = DEFAULT_HOLE_MARKER,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
    ) -> HolesResult:
        return self._choose(should_stop).fill_holes(text, marker, options, should_stop)

    def rewrite(
        self,
        request: RewriteRequest,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_preview: PreviewCallback | None = None,
    ) -> FillResult:
        return self._choose(should_stop).rewrite(request, options, should_stop, on_preview)

    @property
    def scores_names(self) -> bool:
        """A vLLM whose seeded path can score names (engine/backends/vllm_names.py); known only
        once the first fill chose the protocol (difill serve-http has no such read)."""
        return isinstance(self.chosen, OpenAIRemote) and self.chosen.scores_names

    def score_names(
        self, prefix: str, suffix: str, names: Sequence[str], options: FillOptions | None = None
    ) -> list[float]:
        if not isinstance(self.chosen, OpenAIRemote):
            raise NameScoringFailed("this server scores no names (only vLLM 0.32 or later does)")
        return self.chosen.score_names(prefix, suffix, names, options)

    def _choose(self, should_stop: ShouldStop | None) -> DifillRemote | OpenAIRemote:
        if self.chosen is None:
            try:  # vLLM answers an empty 200; a server without /health is not difill either
                health = self.transport.request("GET", "/health", None, should_stop, allow_empty=True)
            except HttpStatusError as err:
                if err.status != 404:
                    raise
                health = None
            is_difill = isinstance(health, dict) and health.get("server") == "difill"
            chosen = DifillRemote if is_difill else OpenAIRemote
            self.chosen = chosen(self.config, self.transport)
        return self.chosen

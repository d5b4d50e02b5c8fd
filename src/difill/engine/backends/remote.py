"""The remote backend: fills run on a server, over HTTP.  What every wire protocol shares lives here.

One class per wire protocol, each an ``InfillBackend`` on this module's ``RemoteBackend``:

* ``"difill"`` - engine/backends/difill_remote.py: difill serve-http's native ``POST /v1/fill``:
  every feature (candidates, holes, rewrite with strength) and the same text as the local engine
  for the same seed;
* ``"openai"`` - engine/backends/openai_remote.py: an OpenAI-compatible server such as vLLM
  serving DiffusionGemma: difill's own seeded canvas where the server is vLLM 0.32 or later
  (released; difill is tested against 0.33.0's rules; engine/backends/vllm.py, chosen by
  ``canvas``: ``auto`` tries it first), else engine/backends/openai.py's ``suffix`` or chat
  prompt (``fim``);
* ``"mercury"`` - engine/backends/mercury.py: Inception's Mercury, its fill-in-the-middle and
  next-edit endpoints;
* ``"auto"`` (default) - engine/backends/connect.py: Mercury on Inception's host, else
  ``GET /health`` on the first fill (difill answers ``{"server": "difill"}``), then the difill or
  the OpenAI class for good.

``connect`` (engine/backends/connect.py) picks the class once, from ``RemoteConfig.protocol``.

The API key comes from ``DIFILL_API_KEY`` unless one is given (for Mercury, ``INCEPTION_API_KEY``
where ``DIFILL_API_KEY`` is unset); never from a setting; it is only ever sent in the
Authorization header.  TLS certificates are verified against the system trust store.  Every
answer is checked by engine/backends/answers.py before it is used; messages name the server by
``secrets.shown_url`` (no password, no query string).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpx2 as httpx

from difill.engine import secrets
from difill.engine.api import About, BackendError, ShouldStop
from difill.engine.backends.transport import HttpTransport
from difill.engine.names import CANVAS_MODES, REMOTE_KINDS

API_KEY_ENV = "DIFILL_API_KEY"
MERCURY_KEY_ENV = "INCEPTION_API_KEY"  # Inception's own name, read for Mercury where DIFILL_API_KEY is unset
PROTOCOLS = REMOTE_KINDS
FIM_MODES = ("auto", "suffix", "chat")


@dataclass(frozen=True)
class RemoteConfig:
    """How to reach one server: what ``connect`` needs to make its backend.  Checked when made
    (BackendError says what to change); the key is never shown (``repr`` leaves it out)."""

    url: str
    protocol: str = "auto"  # PROTOCOLS
    api_key: str | None = field(default=None, repr=False)  # None: DIFILL_API_KEY
    model: str | None = None  # an OpenAI server's model name; None: the first /v1/models lists
    fim: str = "auto"  # an OpenAI server's prompt for a middle: FIM_MODES (openai.py)
    canvas: str = "auto"  # vLLM 0.32+'s seeded canvas: CANVAS_MODES (vllm.py; the remoteCanvas setting)
    canvas_length: int = 256  # the server's canvas (vLLM --diffusion-config canvas_length)
    vocab_size: int = 262_144  # bounds the seeded canvas's noise ids (DiffusionGemma's vocabulary)
    timeout_s: float = 30.0  # one deadline for a request and all its retries
    retries: int = 2
    backoff_s: float = 0.25
    verify: bool | str = True  # TLS: the system trust store, a CA bundle's path, or False

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise BackendError(
                f"unknown remote protocol {self.protocol!r}; use one of {', '.join(PROTOCOLS)}"
            )
        if self.fim not in FIM_MODES:
            raise BackendError(f"unknown fim mode {self.fim!r}; use one of {', '.join(FIM_MODES)}")
        if self.canvas not in CANVAS_MODES:
            raise BackendError(
                f"unknown remote canvas mode {self.canvas!r}; use one of {', '.join(CANVAS_MODES)}"
            )
        if not self.url.startswith(("http://", "https://")):
            raise BackendError(
                f"remote URL {secrets.shown_url(self.url)!r} must start with http:// or https://"
            )

    def __repr__(self) -> str:  # the URL without its password or query string, and no key
        return f"RemoteConfig({secrets.shown_url(self.url)!r}, protocol={self.protocol!r})"


def open_transport(config: RemoteConfig) -> HttpTransport:
    """The HTTP connection ``config`` describes; BackendError when its URL or CA bundle is unusable."""
    key = config.api_key if config.api_key is not None else os.environ.get(API_KEY_ENV)
    if key is None and config.protocol == "mercury":
        key = os.environ.get(MERCURY_KEY_ENV)
    try:
        return HttpTransport(
            config.url, key, timeout_s=config.timeout_s, retries=config.retries, backoff_s=config.backoff_s,
            verify=config.verify,
        )  # fmt: skip
    except OSError as err:
        raise BackendError(f"cannot read the CA bundle {config.verify!r}: {err.strerror or err}") from None
    except (ValueError, httpx.InvalidURL) as err:
        raise BackendError(
            f"remote URL {secrets.shown_url(config.url)!r} is not a valid URL: {secrets.scrub(str(err))}"
        ) from None


class RemoteBackend:
    """What every remote backend shares: the connection, posting, and reading an answer.  Each
    subclass speaks one wire protocol and is an ``InfillBackend`` (fill, fill_holes, rewrite,
    describe_path); make one with ``connect`` (engine/backends/connect.py).

    ``transport`` lets the class that found the protocol (``auto``) hand its connection on.
    """

    protocol: ClassVar[str]  # "difill", "openai" or "mercury": the wire protocol this class speaks
    server_kind: ClassVar[str]  # how a message names such a server

    def __init__(self, config: RemoteConfig, transport: HttpTransport | None = None) -> None:
        self.config = config
        self.transport = transport if transport is not None else open_transport(config)

    scores_names = False  # a vLLM whose seeded path can score names says so (openai_remote.py)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.transport.shown_url!r}, protocol={self.protocol!r})"

    def about(self) -> About:
        """The server's URL without credentials, and the path found to it (the protocol, the
        canvas): a remote model names no languages, and its drafts seed the canvas."""
        return About("remote", f"{self.transport.shown_url} ({self.describe_path()})", scores_names=self.scores_names)

    def describe_path(self) -> str:
        raise NotImplementedError  # each protocol's class says what it found

    def close(self) -> None:
        self.transport.close()

    # ------------------------------------------------------------------ plumbing

    def _post(self, path: str, body: dict, should_stop: ShouldStop | None) -> Any:
        return self.transport.request("POST", path, body, should_stop)

    def _parse(self, parse: Callable[[Any], Any], answer: Any) -> Any:
        """``parse(answer)``; a BackendError that names the server when the answer has another shape."""
        try:
            return parse(answer)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
            raise BackendError(
                f"{self.transport.shown_url} answered JSON of an unexpected shape ({err}). Is it a "
                f"{self.server_kind} server of a matching version?"
            ) from None

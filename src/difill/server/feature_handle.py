"""``FeatureHandle``: what the server hands each feature service.

Its own module: the engine host and the trees import ``lifecycle.py``, and this handle names both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from difill.server.config import Settings
    from difill.server.documents import Documents
    from difill.server.engine_host import EngineHost
    from difill.server.trees import SyntaxTrees


@dataclass(frozen=True)
class FeatureHandle:
    """What the server hands every feature service, one handle for all three (suggestions, edits,
    next edits) in the same shape, built once in ``DifillServer.__init__``; a service reads the
    parts it uses and takes its own extras beside it by keyword."""

    documents: Documents
    host: EngineHost  # the model's worker: every feature's model work runs through it
    settings: Callable[[], Settings]  # the settings now (they change with didChangeConfiguration)
    trees: SyntaxTrees  # one parse per document version, for every feature
    encoding: Callable[[], str] = lambda: "utf-16"  # the negotiated position encoding, at initialize
    notify: Callable[[str, Any], None] = lambda method, params: None  # a notification to the client
    # The document is on the secrets deny list or in contextExclude: no suggestion, no edit.
    excluded: Callable[[str], bool] = lambda uri: False

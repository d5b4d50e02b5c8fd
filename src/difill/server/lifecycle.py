"""Document and server events, fanned out to every feature that takes part (as esbonio does).

The LSP handlers in server.py announce each event once; every feature added here hears it
through the methods of ``Feature`` it overrides.  A new feature never has to be named in
``did_open``, ``did_change``, ``did_close`` or ``shutdown``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the documents module imports the LSP types; this one stays free of them
    from difill.server.documents import Document


class Feature:
    """A part of the server that holds per-document or per-server state; every event is a no-op
    unless overridden."""

    def document_opened(self, uri: str) -> None:
        """``uri`` was opened (or opened again, with new text): as a change, unless overridden."""
        self.document_changed(uri)

    def text_changed(self, before: Document | None, after: Document, changes: list[Any]) -> None:
        """A didChange made ``after`` from ``before`` (None when the server's copy was out of sync)
        with the editor's ``changes``; ``document_changed`` follows."""

    def document_changed(self, uri: str) -> None:
        """``uri`` has new text: work computed for the old text is useless."""

    def document_closed(self, uri: str) -> None:
        """``uri`` is closed: forget everything kept for it."""

    def shutdown(self) -> None:
        """The server is shutting down: stop work in flight and release what is held."""


class Lifecycle:
    def __init__(self) -> None:
        self.features: list[Feature] = []

    def add(self, feature: Feature) -> None:
        """``feature`` hears every later event, after the features added before it."""
        self.features.append(feature)

    def document_opened(self, uri: str) -> None:
        for feature in self.features:
            feature.document_opened(uri)

    def text_changed(self, before: Document | None, after: Document, changes: list[Any]) -> None:
        for feature in self.features:
            feature.text_changed(before, after, changes)

    def document_changed(self, uri: str) -> None:
        for feature in self.features:
            feature.document_changed(uri)

    def document_closed(self, uri: str) -> None:
        for feature in self.features:
            feature.document_closed(uri)

    def shutdown(self) -> None:
        for feature in self.features:
            feature.shutdown()

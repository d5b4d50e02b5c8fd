"""difill serve-http's native protocol: ``POST /v1/fill`` for fills, holes and rewrites.

The options travel as FillOptions' own fields and the results as the engine's (engine/backends/
wire.py), so a fill here gives the same text as the local engine for the same seed.  Each answer
is checked (engine/backends/answers.py) before it is used.
"""

from __future__ import annotations

from difill.engine.api import (
    DEFAULT_HOLE_MARKER,
    HOLE_TOKENS,
    FillOptions,
    FillResult,
    HolesResult,
    PreviewCallback,
    RewriteRequest,
    ShouldStop,
)
from difill.engine.backends import answers
from difill.engine.backends.remote import RemoteBackend
from difill.engine.backends.wire import options_to_json


class DifillRemote(RemoteBackend):
    protocol = "difill"
    server_kind = "difill"

    def describe_path(self) -> str:
        return "difill serve-http"

    def fill(
        self,
        prefix: str,
        suffix: str,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_preview: PreviewCallback | None = None,  # noqa: ARG002 - remote fills send no previews
    ) -> FillResult:
        body = {"prefix": prefix, "suffix": suffix, "options": options_to_json(options)}
        tokens = (options or FillOptions()).max_hole_tokens
        return self._parse(
            lambda a: answers.fill_result(a, tokens), self._post("/v1/fill", body, should_stop)
        )

    def fill_holes(
        self,
        text: str,
        marker: str = DEFAULT_HOLE_MARKER,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
    ) -> HolesResult:
        body = {"holes": text, "marker": marker, "options": options_to_json(options)}
        tokens = (options or FillOptions(max_hole_tokens=HOLE_TOKENS)).max_hole_tokens
        answer = self._post("/v1/fill", body, should_stop)
        return self._parse(lambda a: answers.holes_result(a, tokens), answer)

    def rewrite(
        self,
        request: RewriteRequest,
        options: FillOptions | None = None,
        should_stop: ShouldStop | None = None,
        on_preview: PreviewCallback | None = None,  # noqa: ARG002
    ) -> FillResult:
        body = {
            "prefix": request.prefix, "selection": request.selection, "suffix": request.suffix,
            "strength": request.strength, "instruction": request.instruction,
            "options": options_to_json(options),
        }  # fmt: skip
        tokens = (options or FillOptions()).max_hole_tokens
        result = self._parse(
            lambda a: answers.fill_result(a, None), self._post("/v1/fill", body, should_stop)
        )
        self._parse(lambda r: answers.bounded_rewrite(r.text, request.selection, tokens), result)
        return result

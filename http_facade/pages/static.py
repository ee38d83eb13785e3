"""``/static``: the pages' CSS, ES modules, images and vendored files, served by the app itself."""

from __future__ import annotations

import mimetypes
import os

from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from http_facade.pages.security import STATIC_HEADERS
from http_facade.pages.templating import STATIC_DIR

# Module scripts must come with a JavaScript type; some systems' tables lack .mjs or map .js oddly.
mimetypes.add_type("text/javascript", ".js")
mimetypes.add_type("image/svg+xml", ".svg")


class PageStatic(StaticFiles):
    """StaticFiles with ``nosniff`` and an hour of caching (page URLs carry a content hash)."""

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers.update(STATIC_HEADERS)
        return response


def static_files() -> PageStatic:
    return PageStatic(directory=STATIC_DIR)

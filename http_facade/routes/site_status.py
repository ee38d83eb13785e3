"""Status in the health-check format (spec 4.5): ``/api/status.php``, ``/status``, ``/.well-known/health``.

Unversioned (spec 9): the versioning middleware skips these paths (``STATUS_PATHS``, mirrored by
``http_facade/versioning.py:UNVERSIONED``), so the responses carry no ``API-Version``.
"""

from __future__ import annotations

import json

from fastapi import APIRouter
from fastapi.responses import Response

from agent_server.policies.versions import CURRENT_VERSION
from agent_server.site.health import MEDIA_TYPE, health
from http_facade.deps import ServicesDep

STATUS_PATHS = ("/api/status.php", "/status", "/.well-known/health")
router = APIRouter(tags=["status"])


async def status(services: ServicesDep) -> Response:
    document, code = await health(
        services, version=CURRENT_VERSION, timeout=services.settings.health_timeout_seconds
    )
    return Response(
        json.dumps(document), status_code=code, media_type=MEDIA_TYPE, headers={"Cache-Control": "no-store"}
    )


for _path in STATUS_PATHS:
    router.add_api_route(_path, status, methods=["GET"], summary="Health (application/health+json)")
    # HEAD separately, outside the schema: one operation id per path and method.
    router.add_api_route(_path, status, methods=["HEAD"], include_in_schema=False)

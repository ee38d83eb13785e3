"""Files and batches (``/app/batches``): the organisation's batches with their progress and counts,
the download of their output and error files, cancel; and its files. The pages call the services
``/v1/batches`` and ``/v1/files`` call (``Batches``, ``Files``: the same checks, another tenant's id
answering 404); batches are created with an API key (docs/batches.md), not here.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Form, Request
from fastapi.responses import HTMLResponse, Response, StreamingResponse

from agent_server.batches.service import Batches, batch_view
from agent_server.files.service import Files, file_view
from http_facade.pages.dashboard.audit_trail import audited
from http_facade.pages.dashboard.route import (
    DashboardForm,
    SessionDep,
    checked,
    dashboard_router,
    page,
    responses,
    see_other,
)
from http_facade.pages.dashboard.webhook_views import Id, Notice

router = dashboard_router()
BATCHES_PAGE = "/app/batches"
SHOWN = 50  # the newest batches and files on the page


@router.get(BATCHES_PAGE, summary="Dashboard: the organisation's batches (progress, files, cancel) and files")
async def batches_page(request: Request, session: SessionDep, cancelled: Notice = "") -> HTMLResponse:
    batches: Batches = request.app.state.batches
    files: Files = request.app.state.files
    listed, _ = await batches.list(session.tenant_id, None, SHOWN)
    kept, _ = await files.list(session.tenant_id, after=None, limit=SHOWN, purpose=None, newest_first=True)
    context = {
        "batches": [batch_view(batch) for batch in listed],
        "files": [file_view(record) for record in kept],
        "notice": f"The batch {cancelled} is cancelled: no new request starts." if cancelled else "",
    }
    return page(request, "batches.html", context, session=session)


@router.get(
    "/app/files/{file_id}/content",
    summary="Dashboard: download a file (a batch's input, output or errors)",
    response_class=StreamingResponse,
    responses=responses(404),
)
async def download(request: Request, file_id: Id, session: SessionDep) -> Response:
    files: Files = request.app.state.files
    record = await files.get(session.tenant_id, file_id)
    headers = {"Content-Disposition": f'attachment; filename="{_safe(record.filename)}"'}
    return StreamingResponse(files.read(record), media_type="application/octet-stream", headers=headers)


@router.post(
    f"{BATCHES_PAGE}/{{batch_id}}/cancel",
    summary="Dashboard: cancel a batch (no new request starts; what finished is kept)",
    responses=responses(404, 409),
)
async def cancel(
    request: Request, batch_id: Id, form: Annotated[DashboardForm, Form()], session: SessionDep
) -> Response:
    checked(request, form)
    batches: Batches = request.app.state.batches
    async with audited(request, session.user_id, session.tenant_id, "batch.cancel", target=batch_id):
        await batches.cancel(session.tenant_id, batch_id)
    return see_other(f"{BATCHES_PAGE}?cancelled={batch_id}")


def _safe(filename: str) -> str:
    """The name in a Content-Disposition header: no quote, backslash or control character."""
    return "".join(c for c in filename if c.isprintable() and c not in '"\\') or "download"

"""The OpenAI Files API on /v1/files (docs/batches.md): keys with the ``files`` scope, own files only.

Uploads are multipart and streamed to the file store (http_facade/uploads.py), refused with 413
above the plan's ``max_file_bytes``; uploads of the ``batch`` purpose are checked line by line.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from agent_server.files.service import Files, file_view
from agent_server.foundation.errors import AgentError, PayloadTooLarge
from agent_server.gateway.service import Caller, Gateway
from http_facade.gateway_deps import api_key_of
from http_facade.uploads import MultipartUpload

router = APIRouter(tags=["files"])
MULTIPART_OVERHEAD = 64 * 1024  # boundaries and the purpose field, beyond the file's own bytes
UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file", "purpose"],
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "purpose": {"type": "string", "enum": ["batch", "user_data"]},
                    },
                }
            }
        },
    }
}


class FileCall:
    """One admitted files or batches request: its usage row is written whatever the outcome."""

    def __init__(self, request: Request, caller: Caller, usage: str) -> None:
        self.gateway: Gateway = request.app.state.gateway
        self.files: Files = request.app.state.files
        self.caller, self.usage = caller, usage

    async def answer(self, body: dict[str, Any], status: int = 200) -> Response:
        await self.gateway.record(self.caller, self.usage, "", status, "gateway")
        return JSONResponse(body, status_code=status, headers=self.caller.headers)

    async def refuse(self, err: AgentError) -> AgentError:
        err.headers.update(self.caller.headers)
        await self.gateway.record(
            self.caller, self.usage, "", err.http_status, "gateway", error_code=err.code
        )
        return err


async def admitted(request: Request, usage: str = "files") -> FileCall:
    """The ``files`` scope (and the plan's files feature) admits both /v1/files and /v1/batches."""
    gateway: Gateway = request.app.state.gateway
    caller = await gateway.admit(api_key_of(request), "files")
    call = FileCall(request, caller, usage)
    try:
        gateway.catalog.check_feature(caller.principal.plan, "files")
    except AgentError as err:
        raise await call.refuse(err) from None
    return call


@router.post("/v1/files", summary="Upload a file (multipart: file, purpose)", openapi_extra=UPLOAD_BODY)
async def create_file(request: Request) -> Response:
    call = await admitted(request)
    principal = call.caller.principal
    try:
        limit = call.files.max_bytes(principal.plan)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit + MULTIPART_OVERHEAD:
            raise PayloadTooLarge(
                f"The file is larger than {limit} bytes, the upload limit of the {principal.plan.name} plan.",
                param="file",
            )
        upload = MultipartUpload(request)
        record = await call.files.create(
            principal.tenant_id, principal.plan, upload.file_content(), upload.fields
        )
    except AgentError as err:
        raise await call.refuse(err) from None
    return await call.answer(file_view(record))


@router.get("/v1/files", summary="The files of this key's organisation, newest first (cursor: after)")
async def list_files(
    request: Request,
    after: str | None = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 10_000,
    purpose: str | None = None,
    order: Annotated[str, Query(pattern="^(asc|desc)$")] = "desc",
) -> Response:
    call = await admitted(request)
    try:
        rows, more = await call.files.list(
            call.caller.principal.tenant_id,
            after=after,
            limit=limit,
            purpose=purpose,
            newest_first=order == "desc",
        )
    except AgentError as err:
        raise await call.refuse(err) from None
    data = [file_view(row) for row in rows]
    page = {
        "object": "list",
        "data": data,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": more,
    }
    return await call.answer(page)


@router.get("/v1/files/{file_id}", summary="One file's object")
async def retrieve_file(request: Request, file_id: str) -> Response:
    call = await admitted(request)
    try:
        record = await call.files.get(call.caller.principal.tenant_id, file_id)
    except AgentError as err:
        raise await call.refuse(err) from None
    return await call.answer(file_view(record))


CONTENT = {"schema": {"type": "string", "format": "binary"}}


@router.get(
    "/v1/files/{file_id}/content",
    summary="A file's content, as uploaded or written",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The bytes.",
            "content": {"application/jsonl": CONTENT, "application/octet-stream": CONTENT},
        }
    },
)
async def file_content(request: Request, file_id: str) -> Response:
    call = await admitted(request)
    try:
        record = await call.files.get(call.caller.principal.tenant_id, file_id)
    except AgentError as err:
        raise await call.refuse(err) from None
    await call.gateway.record(call.caller, call.usage, "", 200, "gateway")
    headers = {**call.caller.headers, "Content-Length": str(record.bytes)}
    media = "application/jsonl" if record.filename.endswith(".jsonl") else "application/octet-stream"
    return StreamingResponse(call.files.read(record), media_type=media, headers=headers)


@router.delete("/v1/files/{file_id}", summary="Delete a file")
async def delete_file(request: Request, file_id: str) -> Response:
    call = await admitted(request)
    try:
        record = await call.files.delete(call.caller.principal.tenant_id, file_id)
    except AgentError as err:
        raise await call.refuse(err) from None
    return await call.answer({"id": record.id, "object": "file", "deleted": True})

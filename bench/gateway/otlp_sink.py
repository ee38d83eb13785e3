"""An OTLP/HTTP trace sink for the telemetry-on benchmark: accepts ``POST /v1/traces`` and counts
requests and bytes (nothing is decoded: the benchmark measures the gateway's cost, not a collector's).

    .venv/bin/python bench/gateway/otlp_sink.py [port]      # default 4318; prints totals on Ctrl-C
"""

from __future__ import annotations

import sys

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

received = {"requests": 0, "bytes": 0}


async def traces(request: Request) -> Response:
    received["requests"] += 1
    received["bytes"] += len(await request.body())
    return Response(b"", media_type="application/x-protobuf")  # an empty ExportTraceServiceResponse


async def totals(_: Request) -> Response:
    return Response(f"{received['requests']} exports, {received['bytes']} bytes\n")


app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/totals", totals)])

if __name__ == "__main__":
    uvicorn.run(
        app, host="127.0.0.1", port=int(sys.argv[1]) if len(sys.argv) > 1 else 4318, log_level="warning"
    )

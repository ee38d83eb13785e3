"""Logging of every process: text or JSON lines on stderr, each with the request id of the request
it belongs to, the access-log switch, and a quiet start.

``logging_config(settings)`` is one ``logging.config.dictConfig`` document. ``agentgate serve``
hands it to uvicorn, which applies it in each worker process it starts (workers are spawned, so
nothing of the parent's logging reaches them); every other command applies it with
``configure_logging``. The standard library does the work: a JSON line costs ~6 us to format
(docs/performance.md), and no request pays anything when it logs nothing.
"""

from __future__ import annotations

import json
import logging
import logging.config
import time
from typing import Any

from agent_server.foundation.request_context import REQUEST_ID
from agent_server.foundation.settings import Settings
from agent_server.observability import telemetry

ACCESS_LOGGER = "agentgate.access"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
# At INFO these report each migration step (alembic), each session manager start and stop (mcp) and
# each periodic job (arq): nothing an operator needs unless AGENTGATE_LOG_LEVEL=DEBUG asks for it.
CHATTY_LIBRARIES = ("alembic", "arq", "mcp")
_MODULE = __name__


def logging_config(settings: Settings) -> dict[str, Any]:
    level = settings.log_level.upper()
    formatter = "JsonFormatter" if settings.log_format == "json" else "TextFormatter"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request": {"()": f"{_MODULE}.RequestContextFilter"}},
        "formatters": {"line": {"()": f"{_MODULE}.{formatter}"}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "line",
                "filters": ["request"],
            }
        },
        "root": {"level": level, "handlers": ["stderr"]},
        "loggers": {
            **{name: {"level": "INFO" if level == "DEBUG" else "WARNING"} for name in CHATTY_LIBRARIES},
            ACCESS_LOGGER: {"level": "INFO" if settings.access_log else "WARNING"},
        },
    }


def configure_logging(settings: Settings) -> None:
    logging.config.dictConfig(logging_config(settings))


class RequestContextFilter(logging.Filter):
    """Stamps each record with the request id (and, with traces on, the trace and span ids) of the
    request whose task logs it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        record.trace = telemetry.current_trace_ids()
        return True


class TextFormatter(logging.Formatter):
    """``time LEVEL logger [request id] message key=value ...``"""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:
        request_id = getattr(record, "request_id", None)
        if request_id is not None:
            record.message = f"[{request_id}] {record.message}"
        line = super().formatMessage(record)
        fields = getattr(record, "fields", None)
        if fields:
            line += " " + " ".join(f"{k}={v}" for k, v in fields.items())
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC), level, logger, pid, message, request_id, trace_id and
    span_id when known, the record's ``fields`` (``extra={"fields": {...}}``), the exception."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,  # which worker process of a `serve --workers N`
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None)
        if request_id is not None:
            doc["request_id"] = request_id
        trace = getattr(record, "trace", None)
        if trace is not None:
            doc["trace_id"], doc["span_id"] = trace
        fields = getattr(record, "fields", None)
        if fields:
            doc.update(fields)
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            doc["stack"] = self.formatStack(record.stack_info)
        return json.dumps(doc, ensure_ascii=False, default=str)

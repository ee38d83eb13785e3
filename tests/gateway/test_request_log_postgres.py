"""The request log's queries on PostgreSQL read one index range, never the whole table.

200,000 usage rows over two tenants (migrated schema, ANALYZEd); each filter of ``GET /admin/logs``
and the lookup by request id are EXPLAINed as the service builds them (parameters bound, as the
app sends them): the plan scans the index that starts with the tenant and that filter and yields
the log's order itself (no sequential scan of usage_records, no sort), so a page costs the same at
ten million rows a tenant (docs/request-log.md has the measured figures).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from sqlalchemy.dialects.postgresql import psycopg as pg_dialect
from sqlalchemy.sql import Select

from agent_server.gateway.request_log import LogFilters, encode_cursor, page_query, request_query

pytestmark = pytest.mark.postgres
ROWS = 200_000
FILL = f"""
INSERT INTO usage_records (tenant_id, key_id, model, endpoint, prompt_tokens, completion_tokens, latency_ms,
                           status, backend, stream, created_at, request_id)
SELECT CASE WHEN g % 4 = 0 THEN 'ten_b' ELSE 'ten_a' END, 'key_' || (g % 10), 'model-' || (g % 5),
       CASE WHEN g % 20 = 0 THEN 'embeddings' ELSE 'chat' END, 10, 20, 1.5,
       CASE WHEN g % 100 = 0 THEN 502 WHEN g % 50 = 0 THEN 400 ELSE 200 END, 'router', false,
       timestamptz '2026-01-01 00:00:00+00' + g * interval '10 seconds', md5(g::text)
FROM generate_series(1, {ROWS}) AS g
"""
MIDDLE = datetime(2026, 1, 12, tzinfo=UTC)


def plan(url: str, statement: Select[Any]) -> str:
    compiled = statement.compile(dialect=pg_dialect.dialect())
    with psycopg.connect(url) as conn:
        rows = conn.execute(f"EXPLAIN {compiled}", compiled.params).fetchall()  # type: ignore[arg-type]
    return "\n".join(row[0] for row in rows)


@pytest.fixture(scope="module")
def filled(_postgres_template: str) -> Any:
    from tests.conftest import fresh_database

    for url in fresh_database(template=_postgres_template):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(FILL)
            conn.execute("ANALYZE usage_records")
        yield url


@pytest.mark.parametrize(
    ("filters", "index"),
    [
        ({}, "ix_usage_records_tenant_time"),
        ({"cursor": encode_cursor(MIDDLE, 90_000)}, "ix_usage_records_tenant_time"),
        ({"since": MIDDLE}, "ix_usage_records_tenant_time"),
        ({"until": MIDDLE}, "ix_usage_records_tenant_time"),
        ({"key": "key_3"}, "ix_usage_records_tenant_key_time"),
        ({"key": "key_3", "cursor": encode_cursor(MIDDLE, 90_000)}, "ix_usage_records_tenant_key_time"),
        ({"model": "model-2"}, "ix_usage_records_tenant_model_time"),
        ({"status": "5xx"}, "ix_usage_records_tenant_class_time"),
        ({"status": "4xx", "cursor": encode_cursor(MIDDLE, 90_000)}, "ix_usage_records_tenant_class_time"),
        ({"endpoint": "embeddings"}, "ix_usage_records_tenant_endpoint_time"),
    ],
)
def test_every_filter_reads_its_index_in_order(filled: str, filters: dict[str, Any], index: str) -> None:
    explained = plan(filled, page_query("ten_a", LogFilters(**filters)))
    assert f"using {index} on usage_records" in explained, explained
    assert "Seq Scan on usage_records" not in explained, explained
    assert "Sort" not in explained, explained  # the index gives (created_at, id) descending


def test_a_request_id_is_found_by_its_index(filled: str) -> None:
    explained = plan(filled, request_query("ten_a", "c4ca4238a0b923820dcc509a6f75849b"))
    assert "using ix_usage_records_tenant_request on usage_records" in explained, explained
    assert "Seq Scan on usage_records" not in explained, explained

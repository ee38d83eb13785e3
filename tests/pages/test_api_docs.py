"""``/docs``: the API explorer works offline, from the vendored swagger-ui-dist, without inline script."""

from __future__ import annotations

import httpx

from http_facade.pages.templating import STATIC_DIR
from tests.pages.html import parse

VENDOR = "vendor/swagger-ui-5.35.0"


async def test_the_explorer_loads_only_vendored_files(browser: httpx.AsyncClient) -> None:
    response = await browser.get("/docs")
    assert response.status_code == 200
    page = parse(response.text)
    scripts = [e.attrs["src"].split("?")[0] for e in page.all("script")]
    assert f"/static/{VENDOR}/swagger-ui-bundle.js" in scripts and "/static/js/swagger-init.js" in scripts
    styles = [e.attrs["href"].split("?")[0] for e in page.all("link") if e.attrs.get("rel") == "stylesheet"]
    assert f"/static/{VENDOR}/swagger-ui.css" in styles
    root = next(e for e in page.elements if e.attrs.get("id") == "swagger-ui")
    assert root.attrs["data-openapi-url"] == "/openapi.json"
    bundle = await browser.get(f"/static/{VENDOR}/swagger-ui-bundle.js")
    assert bundle.status_code == 200 and "SwaggerUIBundle" in bundle.text


def test_the_vendored_package_keeps_its_licence() -> None:
    folder = STATIC_DIR / VENDOR
    assert sorted(p.name for p in folder.iterdir()) == [
        "LICENSE",
        "NOTICE",
        "swagger-ui-bundle.js",
        "swagger-ui.css",
    ]
    assert "Apache License" in (folder / "LICENSE").read_text()


async def test_fastapi_default_docs_are_gone(browser: httpx.AsyncClient, program: httpx.AsyncClient) -> None:
    assert (await browser.get("/docs/oauth2-redirect")).status_code == 404
    assert "cdn" not in (await browser.get("/docs")).text.lower()
    schema = (await program.get("/openapi.json")).json()
    for path in ("/docs", "/docs/errors", "/", "/pricing", "/checkout"):
        assert path in schema["paths"], path
    assert "text/html" in schema["paths"]["/"]["get"]["responses"]["200"]["content"]

"""Every checkout session links the site's terms of use and privacy policy (ACP ``Link``), and every
link is a live page of the site: fetched here, never a 404."""

from __future__ import annotations

from urllib.parse import urlsplit

from tests.commerce.conftest import HARDWARE, TRAINING, Shop, assert_valid, payment


async def assert_live(shop: Shop, session: dict) -> dict[str, str]:
    """Each http(s) link answers 200 with an HTML page; returns the links by type."""
    found = {}
    for link in session["links"]:
        assert_valid("Link", link)
        found[link["type"]] = link["url"]
        if urlsplit(link["url"]).scheme == "mailto":
            continue
        page = await shop.client.get(link["url"], headers={"Accept": "text/html"})  # as a browser
        assert page.status_code == 200, (link, page.status_code)
        assert page.headers["content-type"].startswith("text/html"), link
        assert link["title"] in page.text, link
    return found


async def test_every_session_links_terms_and_privacy_pages_that_exist(shop: Shop) -> None:
    session = await shop.create(TRAINING)
    links = await assert_live(shop, session)
    assert urlsplit(links["terms_of_use"]).path == "/terms"
    assert urlsplit(links["privacy_policy"]).path == "/privacy"
    terms = (await shop.client.get(links["terms_of_use"])).text
    pack = shop.app.state.services.knowledge.pack
    assert all(section.heading in terms for section in pack.terms.sections)
    assert "Prices are in EUR and exclude VAT" in terms
    # In every state the links stay: not ready, completed, canceled.
    shipped = await shop.create(HARDWARE)
    assert shipped["status"] == "not_ready_for_payment"
    await assert_live(shop, shipped)
    done = await shop.post(f"/checkout_sessions/{session['id']}/complete", payment())
    assert done.status_code == 200, done.text
    assert_valid("CheckoutSessionWithOrder", done.json())
    assert {link["type"] for link in done.json()["links"]} >= {"terms_of_use", "privacy_policy"}
    canceled = await shop.post(f"/checkout_sessions/{shipped['id']}/cancel", {})
    assert canceled.status_code == 200, canceled.text
    await assert_live(shop, canceled.json())


async def test_the_legal_pages_are_in_the_site_footer(shop: Shop) -> None:
    home = (await shop.client.get("/", headers={"Accept": "text/html"})).text
    assert 'href="/terms"' in home and 'href="/privacy"' in home
    missing = await shop.client.get("/terms-of-sale", headers={"Accept": "text/html"})
    assert missing.status_code == 404  # the check above can fail: unknown pages are 404

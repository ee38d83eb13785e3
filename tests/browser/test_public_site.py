"""Journey 1: a visitor opens the home page, asks a question and watches the answer arrive token by
token, then chats with the widget, whose message the chat proxy refuses while the token is younger
than its 3 s minimum and answers after.

The browser reaches the app through a proxy that passes the answer's events on 50 ms apart: Chromium
would otherwise hand the page a small answer in one read, and a page that waits for the whole answer
would look the same as one that streams it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Response, expect

from tests.browser.conftest import OpenVisitor
from tests.browser.live import ThreadedServer, paced_proxy

pytestmark = pytest.mark.browser

# Samples the answer once per rendered frame: what the visitor could have seen, not every DOM change.
WATCH_FRAMES = """() => {
  window.__frames = [];
  const sample = () => {
    const text = document.querySelector("#ask-answer .answer-text");
    window.__frames.push({ text: text ? text.textContent : "", busy: document.getElementById("ask-answer").getAttribute("aria-busy") });
    requestAnimationFrame(sample);
  };
  requestAnimationFrame(sample);
}"""


@pytest.fixture
def proxy(server: ThreadedServer) -> Iterator[ThreadedServer]:
    with paced_proxy(server.url, gap=0.05) as paced:
        yield paced


def words(text: str) -> str:
    return " ".join(text.split())


def test_a_visitor_sees_the_answer_stream_in_then_chats(
    open_visitor: OpenVisitor, proxy: ThreadedServer
) -> None:
    visitor = open_visitor(proxy.url)
    page = visitor.open("/")
    visitor.check("home")

    page.evaluate(WATCH_FRAMES)
    page.get_by_label("Your question").fill("How do I rotate my API key?")
    page.get_by_role("button", name="Ask", exact=True).click()
    expect(page.locator("#ask-status")).to_have_text("Answer complete.", timeout=20_000)
    answer = words(page.locator("#ask-answer .answer-text").inner_text())
    assert answer.startswith("We recommend rotating every key"), answer
    expect(page.locator("#ask-answer")).to_contain_text("Answered from the FAQ.")

    frames = page.evaluate("window.__frames")
    partial = {words(f["text"]) for f in frames} - {"", answer}
    assert partial, "no frame showed part of the answer before the whole of it"
    assert all(answer.startswith(text) for text in partial), partial
    assert len(partial) >= 5, f"the answer grew in {len(partial)} steps only"
    assert all(f["busy"] == "true" for f in frames if words(f["text"]) in partial)
    assert page.locator("#ask-answer").get_attribute("aria-busy") == "false"
    visitor.check("home with the streamed answer")

    # The chat: the widget's clock runs 4 s ahead, so it sends before the token is 3 s old at the server.
    visitor.announce("/api/chat-completion.php", 401)
    posts: list[tuple[float, int, str]] = []
    issued: list[float] = []

    def on_response(response: Response) -> None:
        if "action=token" in response.url:
            issued.append(time.monotonic())
        elif response.url.endswith("/api/chat-completion.php") and response.request.method == "POST":
            code = response.json().get("error", {}).get("code", "") if response.status != 200 else ""
            posts.append((time.monotonic(), response.status, code))

    page.on("response", on_response)
    page.clock.install()
    message = page.get_by_label("Message")
    with page.expect_response(lambda r: "action=token" in r.url):
        message.focus()
    # The widget notes the issue time once it has read the token (then clears its status); moving its
    # clock before that would make it wait the full 3 s itself and send a token the server accepts.
    expect(page.locator("#chat-status")).to_have_text("")
    page.clock.fast_forward(4000)
    message.fill("Which plans have a free trial?")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#chat-status")).to_contain_text("Getting ready: your message goes out in")
    expect(page.locator("#chat-log .from-assistant")).to_have_count(1, timeout=15_000)

    # The server's verdict shows the widget sent early; no wall-clock bound a stalled machine could break.
    assert posts[0][1:] == (401, "TOKEN_TOO_YOUNG"), posts
    # The answer came only once the token was 3 s old (its issue time is kept in milliseconds).
    assert posts[-1][1] == 200 and posts[-1][0] - issued[0] >= 2.95, (posts, issued)
    expect(page.locator("#chat-log .from-visitor")).to_have_text("YouWhich plans have a free trial?")
    expect(page.locator("#chat-log .from-error")).to_have_count(0)
    visitor.check("home after the chat")

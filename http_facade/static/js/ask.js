// The ask box, enhanced: the answer of POST /api/ask.php streamed token by token (start, token,
// result, complete). Without this module the form posts to /ask and the answer comes as a page.
import { readError, readEvents } from "./sse.js";

const ROUTES = { faq: "the FAQ", weather: "the weather tool", llm: "a model with our knowledge base" };

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text) node.textContent = text;
  return node;
}

function showSources(list, sources) {
  list.replaceChildren(...(sources || []).map((source) => element("li", "", source.title)));
}

async function ask(form, status, region) {
  const query = form.elements.query.value.trim();
  if (!query) return;
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  const text = element("p", "answer-text");
  const origin = element("p", "hint");
  const sources = element("ul", "sources");
  region.replaceChildren(element("h3", "", "Answer"), text, origin, sources);
  region.setAttribute("aria-busy", "true");
  status.textContent = "Thinking…";
  try {
    const response = await fetch(form.dataset.streamUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream", Prefer: "streaming" },
      body: JSON.stringify({ query }),
    });
    if (!response.ok) {
      const error = await readError(response);
      region.replaceChildren();
      status.textContent = error.retryAfter ? `${error.message} Try again in ${error.retryAfter} s.` : error.message;
      return;
    }
    for await (const { event, data } of readEvents(response)) {
      const payload = JSON.parse(data);
      if (event === "start") {
        status.textContent = "Answering…";
        origin.textContent = `Answered from ${ROUTES[payload.route] || payload.route}.`;
      } else if (event === "token") {
        text.textContent += payload.text;
      } else if (event === "result") {
        text.textContent = payload.answer;
        showSources(sources, payload.sources);
      } else if (event === "error") {
        status.textContent = payload.error?.message || "The answer broke off; please ask again.";
      } else if (event === "complete" && payload.status === "ok") {
        status.textContent = "Answer complete.";
      }
    }
  } catch {
    status.textContent = "The answer could not be loaded; please try again.";
  } finally {
    region.setAttribute("aria-busy", "false");
    button.disabled = false;
  }
}

const form = document.getElementById("ask-form");
const status = document.getElementById("ask-status");
const region = document.getElementById("ask-answer");
if (form && status && region && window.ReadableStream) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    ask(form, status, region);
  });
}

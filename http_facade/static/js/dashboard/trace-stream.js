// The playground's trace, live: an EventSource on the list's data-stream URL (the session cookie
// goes with it); each "step" event adds a line as it arrives, "end" adds the summary and closes.
// describe() writes a step as the trace page does (http_facade/pages/dashboard/trace_text.py).
const list = document.getElementById("trace-steps");
const status = document.getElementById("trace-status");

const plural = (count, word) => `${count} ${word}${count === 1 ? "" : "s"}`;

function value(v) {
  if (v === null || v === undefined) return "none";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (Array.isArray(v)) return v.map(value).join(", ") || "none";
  if (typeof v === "object") return Object.entries(v).map(([k, x]) => `${k} ${value(x)}`).join(", ") || "none";
  return String(v);
}

export function describe(step) {
  switch (step.kind) {
    case "request": {
      const tokens = step.max_tokens ? `, at most ${plural(step.max_tokens, "token")}` : "";
      return `Request for ${step.model}: ${plural(step.messages, "message")}${tokens}.`;
    }
    case "route": {
      const table = step.revision !== null && step.revision !== undefined ? ` (routing table revision ${step.revision})` : "";
      return `Backends to try, in order${table}: ${value(step.order)}.`;
    }
    case "attempt":
      return step.ok
        ? `${step.backend} answered in ${step.latency_ms} ms.`
        : `${step.backend} failed after ${step.latency_ms} ms (${step.error}).`;
    case "result":
      return `Finished (${step.finish_reason}): ${step.prompt_tokens} tokens in, ${step.completion_tokens} out, ${plural(step.characters, "character")}.`;
    case "error":
      return `Error ${step.code}: ${step.message}`;
    default: {
      const details = Object.entries(step)
        .filter(([name]) => !["seq", "at_ms", "kind"].includes(name))
        .map(([name, v]) => `${name.replace(/_/g, " ")} ${value(v)}`)
        .join("; ");
      const kind = String(step.kind);
      return `${kind.charAt(0).toUpperCase()}${kind.slice(1)}${details ? `: ${details}` : ""}.`;
    }
  }
}

if (list && list.dataset.stream && window.EventSource) {
  const source = new EventSource(list.dataset.stream);
  list.setAttribute("aria-busy", "true");
  status.textContent = "Reading the trace…";
  source.addEventListener("step", (event) => {
    const step = JSON.parse(event.data);
    const item = document.createElement("li");
    const at = document.createElement("span");
    at.className = "step-at";
    at.textContent = `${step.at_ms} ms`;
    const text = document.createElement("span");
    text.className = "step-text";
    text.textContent = describe(step);
    item.append(at, " ", text);
    list.append(item);
  });
  source.addEventListener("end", (event) => {
    const summary = JSON.parse(event.data);
    status.textContent = `${plural(summary.attempts, "attempt")}, ${summary.latency_ms} ms, status ${summary.status}.`;
    list.setAttribute("aria-busy", "false");
    source.close();
  });
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CLOSED) return;
    status.textContent = "The trace stream stopped; open the trace as a page.";
    list.setAttribute("aria-busy", "false");
    source.close();
  });
}

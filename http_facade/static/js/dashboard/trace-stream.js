// The playground's trace, live: an EventSource on the list's data-stream URL (the session cookie
// goes with it); each "step" event adds a line as it arrives, "end" adds the summary and closes.
const list = document.getElementById("trace-steps");
const status = document.getElementById("trace-status");

function describe(step) {
  const details = Object.entries(step)
    .filter(([name]) => !["seq", "at_ms", "kind"].includes(name))
    .map(([name, value]) => `${name}: ${typeof value === "object" ? JSON.stringify(value) : value}`);
  return `#${step.seq} ${step.kind} at ${step.at_ms} ms${details.length ? ` (${details.join("; ")})` : ""}`;
}

if (list && list.dataset.stream && window.EventSource) {
  const source = new EventSource(list.dataset.stream);
  list.setAttribute("aria-busy", "true");
  status.textContent = "Reading the trace…";
  source.addEventListener("step", (event) => {
    const item = document.createElement("li");
    item.textContent = describe(JSON.parse(event.data));
    list.append(item);
  });
  source.addEventListener("end", (event) => {
    const summary = JSON.parse(event.data);
    status.textContent = `${summary.attempts} attempt(s), ${summary.latency_ms} ms, status ${summary.status}.`;
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

// Server-sent events read with fetch() and a ReadableStream reader: EventSource only does GET, and
// the ask endpoint is a POST. Yields {event, data} per event; comments (": ping") are skipped.

function parseBlock(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? { event, data: data.join("\n") } : null;
}

export async function* readEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
    // Lines may end in \r\n, \n or \r; a \r at the very end may be half of a \r\n still to come.
    const held = !done && buffer.endsWith("\r") ? "\r" : "";
    let text = (held ? buffer.slice(0, -1) : buffer).replace(/\r\n?/g, "\n");
    let end;
    while ((end = text.indexOf("\n\n")) !== -1) {
      const event = parseBlock(text.slice(0, end));
      text = text.slice(end + 2);
      if (event) yield event;
    }
    buffer = text + held;
    if (done) break;
  }
  const last = parseBlock(buffer.replace(/\r\n?/g, "\n"));
  if (last) yield last;
}

// The message of an error answer (the site envelope), with its Retry-After when it has one.
export async function readError(response) {
  let error = {};
  try {
    error = (await response.json()).error || {};
  } catch {
    error = {};
  }
  const header = Number(response.headers.get("Retry-After"));
  const retryAfter = error.retry_after ?? (Number.isFinite(header) && header > 0 ? header : null);
  return {
    status: response.status,
    code: error.code || "",
    message: error.message || `The request failed (HTTP ${response.status}).`,
    retryAfter,
    nextSteps: Array.isArray(error.next_steps) ? error.next_steps : [],
  };
}

// A UUID v4 for Idempotency-Key; crypto.randomUUID exists only in secure contexts.
export function uuid4() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

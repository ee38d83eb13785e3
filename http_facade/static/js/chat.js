// The chat widget over the public chat proxy (contract 4.5, 5.8): a token from
// GET ?action=token, used only once it is old enough (3 s), sent as the X-Platform-Token header and
// as the body field session_token. A 429 shows its Retry-After and next steps.
import { readError, uuid4 } from "./sse.js";

const RENEW = new Set(["EXPIRED_TOKEN", "INVALID_TOKEN", "TOKEN_IP_MISMATCH", "TOKEN_UA_MISMATCH", "MISSING_TOKEN"]);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class ChatWidget {
  constructor(root) {
    this.tokenUrl = root.dataset.tokenUrl;
    this.chatUrl = root.dataset.chatUrl;
    this.form = root.querySelector("#chat-form");
    this.message = root.querySelector("#chat-message");
    this.mode = root.querySelector("#chat-mode");
    this.button = this.form.querySelector("button[type=submit]");
    this.log = root.querySelector("#chat-log");
    this.status = root.querySelector("#chat-status");
    this.token = null;
    this.pending = null;
  }

  start() {
    this.form.hidden = false;
    // The token is fetched when the visitor starts typing, so it is usually old enough at "Send".
    this.message.addEventListener("focus", () => this.ensureToken().catch((error) => this.fail(error)), { once: true });
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.send();
    });
  }

  say(text) {
    this.status.textContent = text;
  }

  append(who, text, className, steps = []) {
    const item = document.createElement("li");
    item.className = className;
    const label = document.createElement("span");
    label.className = "who";
    label.textContent = who;
    item.append(label, document.createTextNode(text));
    if (steps.length) {
      const list = document.createElement("ul");
      list.className = "next-steps";
      for (const step of steps) {
        const entry = document.createElement("li");
        entry.textContent = step;
        list.append(entry);
      }
      item.append(list);
    }
    this.log.append(item);
  }

  fail(error) {
    const wait = error.retryAfter ? ` Try again in ${error.retryAfter} s.` : "";
    this.append("Chat", `${error.message}${wait}`, "from-error", error.nextSteps || []);
    this.say(error.retryAfter ? `Please wait ${error.retryAfter} s before the next message.` : "");
  }

  expired() {
    return !this.token || performance.now() - this.issuedAt > (this.expiresIn - 60) * 1000;
  }

  ensureToken() {
    if (!this.expired()) return Promise.resolve(this.token);
    if (!this.pending) {
      this.pending = this.fetchToken().finally(() => {
        this.pending = null;
      });
    }
    return this.pending;
  }

  async fetchToken() {
    this.say("Getting the chat ready…");
    const response = await fetch(this.tokenUrl, { headers: { Accept: "application/json" } });
    if (!response.ok) throw await readError(response);
    const body = await response.json();
    this.token = body.token;
    this.header = body.header || "X-Platform-Token";
    this.usableAfter = Number(body.usable_after) || 3;
    this.expiresIn = Number(body.expires_in) || 3600;
    this.issuedAt = performance.now();
    this.say("");
    return this.token;
  }

  waitMs() {
    return Math.max(0, this.usableAfter * 1000 - (performance.now() - this.issuedAt));
  }

  async untilUsable() {
    // A new token is refused for its first seconds: show that the chat is getting ready meanwhile.
    while (this.waitMs() > 0) {
      this.say(`Getting ready: your message goes out in ${Math.ceil(this.waitMs() / 1000)} s…`);
      await sleep(Math.min(500, this.waitMs()));
    }
  }

  async send() {
    const text = this.message.value.trim();
    if (!text) return;
    this.button.disabled = true;
    this.append("You", text, "from-visitor");
    this.message.value = "";
    try {
      await this.ensureToken();
      await this.untilUsable();
      await this.post(text, 0);
    } catch (error) {
      this.fail(error.message ? error : { message: "The chat could not be reached; please try again." });
    } finally {
      this.button.disabled = false;
    }
  }

  async post(text, attempt) {
    this.say("Sending…");
    const response = await fetch(this.chatUrl, {
      method: "POST",
      // A fresh key per attempt: a refused attempt's answer is kept under its key for 24 h.
      headers: { "Content-Type": "application/json", [this.header]: this.token, "Idempotency-Key": uuid4() },
      body: JSON.stringify({ message: text, mode: this.mode.value, session_token: this.token }),
    });
    if (response.ok) {
      const body = await response.json();
      this.append("Assistant", body.choices[0].message.content, "from-assistant");
      this.say("");
      return;
    }
    const error = await readError(response);
    if (attempt < 2 && error.code === "TOKEN_TOO_YOUNG") {
      this.say(`Getting ready: your message goes out in ${error.retryAfter || 1} s…`);
      await sleep((error.retryAfter || 1) * 1000);
      return this.post(text, attempt + 1);
    }
    if (attempt < 1 && RENEW.has(error.code)) {
      this.token = null;
      await this.ensureToken();
      await this.untilUsable();
      return this.post(text, attempt + 1);
    }
    throw error;
  }
}

const root = document.querySelector("[data-chat]");
if (root) new ChatWidget(root).start();

// Add a passkey while signed in: options from POST /app/passkeys/options, the browser makes the
// passkey, POST /app/passkeys saves it (both forms carry the page's CSRF token; the session cookie
// goes along). The page is then reloaded to list it.
import { readError } from "../sse.js";
import { creationOptions, credentialJSON, explain, supported } from "./webauthn.js";

const form = document.getElementById("passkey-add-form");
const status = document.getElementById("passkey-add-status");

async function post(url, fields) {
  const response = await fetch(url, {
    method: "POST",
    headers: { Accept: "application/json" },
    body: new URLSearchParams(fields),
    credentials: "same-origin",
  });
  if (!response.ok) throw new Error((await readError(response)).message);
  return response.json();
}

if (form && supported()) {
  form.hidden = false;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button[type=submit]");
    const token = form.elements.csrf_token.value;
    button.disabled = true;
    status.textContent = "Waiting for your device…";
    try {
      const { options } = await post(form.dataset.options, { csrf_token: token });
      const credential = await navigator.credentials.create({ publicKey: creationOptions(options) });
      await post(form.dataset.save, {
        csrf_token: token,
        name: form.elements.name.value,
        credential: JSON.stringify(credentialJSON(credential)),
      });
      status.textContent = "Passkey added.";
      window.location.reload();
    } catch (error) {
      status.textContent = explain(error);
      button.disabled = false;
    }
  });
}

// Sign in with a passkey: options from POST /admin/auth/passkey/options, the browser's assertion to
// POST /admin/auth/passkey, then the JWT it answers goes to POST /app/session (a form with the page's
// CSRF token), which sets the dashboard's session cookie and opens the dashboard.
import { credentialJSON, explain, postJSON, requestOptions, supported } from "./webauthn.js";

const root = document.getElementById("passkey-login");
const form = document.getElementById("passkey-session");

if (root && form && supported()) {
  const button = root.querySelector("button");
  const status = document.getElementById("passkey-login-status");
  root.hidden = false;
  button.addEventListener("click", async () => {
    button.disabled = true;
    status.textContent = "Waiting for your passkey…";
    try {
      const started = await postJSON("/admin/auth/passkey/options", {});
      const credential = await navigator.credentials.get({ publicKey: requestOptions(started.options) });
      const signedIn = await postJSON("/admin/auth/passkey", {
        state: started.state,
        credential: credentialJSON(credential),
      });
      form.elements.token.value = signedIn.access_token;
      status.textContent = "Signed in; opening the dashboard…";
      form.submit();
    } catch (error) {
      status.textContent = explain(error);
      button.disabled = false;
    }
  });
}

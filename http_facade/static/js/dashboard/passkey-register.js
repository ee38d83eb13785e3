// Registration with a passkey: POST /register (method "passkey") answers creation options, the
// browser makes the passkey, POST /register/passkey keeps it until the link in the mail is followed
// (the mail is sent then, so a passkey that failed leaves no mail). Without scripts (or WebAuthn)
// the form registers with a password.
import { creationOptions, credentialJSON, explain, postJSON, supported } from "./webauthn.js";

const form = document.getElementById("register-form");
const passkey = document.getElementById("register-method-passkey");
const passwordField = document.getElementById("register-password-field");
const result = document.getElementById("register-result");

function showSent(message) {
  const box = document.createElement("div");
  box.className = "confirmation";
  box.dataset.test = "register-sent";
  const text = document.createElement("p");
  text.className = "lead";
  text.textContent = `${message} Your passkey is saved and works once you confirm.`;
  box.append(text);
  result.replaceChildren(box);
  form.hidden = true;
}

async function registerWithPasskey(button) {
  const fields = new FormData(form);
  button.disabled = true;
  result.textContent = "Creating your passkey…";
  try {
    const answer = await postJSON("/register", {
      email: fields.get("email"),
      organisation: fields.get("organisation"),
      plan: fields.get("plan"),
      method: "passkey",
    });
    const credential = await navigator.credentials.create({ publicKey: creationOptions(answer.passkey.options) });
    const saved = await postJSON("/register/passkey", { registration_id: answer.registration_id, credential: credentialJSON(credential) });
    showSent(saved.message);
  } catch (error) {
    result.textContent = explain(error);
  } finally {
    button.disabled = false;
  }
}

if (form && passkey) {
  if (!supported()) {
    passkey.disabled = true;
  } else {
    const sync = () => {
      passwordField.hidden = passkey.checked;
      form.elements.password.required = !passkey.checked;
    };
    form.addEventListener("change", sync);
    sync();
    form.addEventListener("submit", (event) => {
      if (!passkey.checked) return;
      event.preventDefault();
      registerWithPasskey(form.querySelector("button[type=submit]"));
    });
  }
}

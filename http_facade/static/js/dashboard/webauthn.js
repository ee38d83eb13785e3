// WebAuthn between the JSON of the passkey routes and the browser's credential objects. Current
// browsers parse the options (PublicKeyCredential.parse*FromJSON) and serialise credentials
// (toJSON()) themselves; the fallbacks decode and encode base64url by hand for older ones.
import { readError } from "../sse.js";

const fromBase64url = (text) => {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const padded = base64.padEnd(Math.ceil(base64.length / 4) * 4, "=");
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0)).buffer;
};
const toBase64url = (buffer) =>
  btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const withIds = (list) => (list || []).map((item) => ({ ...item, id: fromBase64url(item.id) }));

export function supported() {
  return typeof window.PublicKeyCredential === "function" && Boolean(navigator.credentials);
}

export function creationOptions(json) {
  if (PublicKeyCredential.parseCreationOptionsFromJSON) return PublicKeyCredential.parseCreationOptionsFromJSON(json);
  return {
    ...json,
    challenge: fromBase64url(json.challenge),
    user: { ...json.user, id: fromBase64url(json.user.id) },
    excludeCredentials: withIds(json.excludeCredentials),
  };
}

export function requestOptions(json) {
  if (PublicKeyCredential.parseRequestOptionsFromJSON) return PublicKeyCredential.parseRequestOptionsFromJSON(json);
  return { ...json, challenge: fromBase64url(json.challenge), allowCredentials: withIds(json.allowCredentials) };
}

export function credentialJSON(credential) {
  if (typeof credential.toJSON === "function") return credential.toJSON();
  const r = credential.response;
  const json = {
    id: credential.id,
    rawId: toBase64url(credential.rawId),
    type: credential.type,
    authenticatorAttachment: credential.authenticatorAttachment,
    clientExtensionResults: credential.getClientExtensionResults(),
    response: { clientDataJSON: toBase64url(r.clientDataJSON) },
  };
  if (r.attestationObject) {
    json.response.attestationObject = toBase64url(r.attestationObject);
    json.response.transports = r.getTransports ? r.getTransports() : [];
  } else {
    json.response.authenticatorData = toBase64url(r.authenticatorData);
    json.response.signature = toBase64url(r.signature);
    json.response.userHandle = r.userHandle ? toBase64url(r.userHandle) : null;
  }
  return json;
}

// POST a JSON body to a route of the JSON API; its error envelope becomes an Error with the message.
export async function postJSON(url, body, headers = {}) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json", ...headers },
    body: JSON.stringify(body),
    credentials: "same-origin",
  });
  if (!response.ok) throw new Error((await readError(response)).message);
  return response.json();
}

// What to tell a person when the browser's passkey prompt fails.
export function explain(error) {
  if (error && error.name === "NotAllowedError") return "The passkey prompt was closed or timed out; try again.";
  if (error && error.name === "InvalidStateError") return "This device already holds a passkey for this account.";
  return (error && error.message) || "The passkey did not work; try again.";
}

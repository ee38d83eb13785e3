// Partial updates for plain forms: a form with data-partial="<id>" is sent with fetch() and the
// element of that id in the answer replaces the one on this page; a refused form's fields, with their
// messages, replace this form's. Without scripts (or on a network error) the form is submitted as
// usual and the answer is a whole page.

async function submitPartly(form) {
  const target = document.getElementById(form.dataset.partial);
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  try {
    const response = await fetch(form.action, {
      method: "POST",
      headers: { Accept: "text/html" },
      body: new URLSearchParams(new FormData(form)),
    });
    const page = new DOMParser().parseFromString(await response.text(), "text/html");
    // A confirmation carries the element itself; an error page says what went wrong in its lead.
    const fresh = page.getElementById(form.dataset.partial) || page.querySelector("main .lead");
    if (!fresh) throw new Error("unexpected answer");
    const adopt = (from, to) => to.replaceChildren(...Array.from(from.childNodes, (node) => document.importNode(node, true)));
    adopt(fresh, target);
    // A refused form comes back with its fields' messages and the values sent: show them in place.
    const sent = page.querySelector(`form[data-partial="${form.dataset.partial}"]`);
    if (response.ok) form.reset();
    else if (sent) adopt(sent, form);
  } catch {
    form.submit();
  } finally {
    button.disabled = false;
  }
}

for (const form of document.querySelectorAll("form[data-partial]")) {
  if (!document.getElementById(form.dataset.partial)) continue;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submitPartly(form);
  });
}

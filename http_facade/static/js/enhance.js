// Partial updates for plain forms: a form with data-partial="<id>" is sent with fetch() and the
// element of that id in the answer replaces the one on this page. Without scripts (or on a network
// error) the form is submitted as usual and the answer is a whole page.

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
    target.replaceChildren(...Array.from(fresh.childNodes, (node) => document.importNode(node, true)));
    if (response.ok) form.reset();
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

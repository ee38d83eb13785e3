// Copy buttons: a button with data-copy="<id>" copies that field's value (a new key or secret, a
// snippet or a code block's text) and says so in the element named by data-copy-status (default: #copy-status).
// The button appears only where the clipboard is available; the field can always be selected.
for (const button of document.querySelectorAll("button[data-copy]")) {
  const field = document.getElementById(button.dataset.copy);
  const status = document.getElementById(button.dataset.copyStatus || "copy-status");
  if (!field || !status || !navigator.clipboard) continue;
  button.hidden = false;
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText("value" in field ? field.value : field.textContent);
      status.textContent = "Copied to the clipboard.";
    } catch {
      if ("select" in field) field.select();
      status.textContent = "Select the text and copy it with your keyboard.";
    }
  });
}

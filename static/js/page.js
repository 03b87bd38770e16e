// Behaviour every page shares, kept out of the HTML: the CSP allows no inline handlers.
(function () {
  "use strict";

  // A message from the last request (deleted, refused) can be dismissed: it says nothing
  // about what happens after it.
  document.querySelectorAll(".flash").forEach(function (flash) {
    const close = document.createElement("button");
    close.type = "button";
    close.className = "flash-close";
    close.textContent = "×";
    close.setAttribute("aria-label", "Dismiss this message");
    close.addEventListener("click", function () { flash.remove(); });
    flash.append(close);
  });

  // A form sent back with errors puts the reader on its first wrong field, whose error is
  // tied to it (aria-describedby): it is read at once.
  const invalid = document.querySelector('[aria-invalid="true"]');
  if (invalid) {
    const details = invalid.closest("details");
    if (details) details.open = true;
    invalid.focus();
  }

  // A form with data-confirm asks before it is sent.
  document.addEventListener("submit", function (evt) {
    const message = evt.target.dataset && evt.target.dataset.confirm;
    if (message && !window.confirm(message)) evt.preventDefault();
  });
})();

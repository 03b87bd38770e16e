// The sidebar on narrow screens: hidden behind the top bar's Workflows button so the chat
// takes the screen (app.css shows it while the button is expanded). The button opens and
// closes it; Escape closes it and gives the focus back. On wide screens the button is not
// shown and the sidebar always is.
(function () {
  "use strict";

  document.addEventListener("DOMContentLoaded", function () {
    const toggle = document.getElementById("sidebar-toggle");
    if (!toggle) return;
    const expanded = () => toggle.getAttribute("aria-expanded") === "true";
    toggle.addEventListener("click", function () {
      toggle.setAttribute("aria-expanded", expanded() ? "false" : "true");
    });
    document.addEventListener("keydown", function (e) {
      if (e.key !== "Escape" || !expanded() || toggle.offsetParent === null) return;
      toggle.setAttribute("aria-expanded", "false");
      toggle.focus();
    });
  });
})();

// The colour theme: the system's by default; the topbar's button switches to light or dark
// and the choice is kept in this browser. Loaded before the page is drawn (no flash), so it
// also applies the chart's kept folding.
(function () {
  "use strict";

  const root = document.documentElement;
  const ORDER = ["auto", "light", "dark"];
  const LABELS = { auto: "Theme: system", light: "Theme: light", dark: "Theme: dark" };

  function stored() {
    try { return localStorage.getItem("poweron-theme") || "auto"; } catch (e) { return "auto"; }
  }
  function apply(choice) {
    if (choice === "auto") root.removeAttribute("data-theme");
    else root.setAttribute("data-theme", choice);
    root.dataset.themeChoice = choice;
    const button = document.getElementById("theme-toggle");
    if (button) button.textContent = LABELS[choice];
  }
  apply(stored());
  // The per-step chart as this browser last left it, folded or open (chart.js keeps it):
  // set here, before the page is drawn, so that a folded chart never shows for a moment.
  try {
    if (localStorage.getItem("poweron-chart") === "folded") root.dataset.chart = "folded";
  } catch (e) { /* private mode: open */ }

  document.addEventListener("DOMContentLoaded", function () {
    const button = document.getElementById("theme-toggle");
    if (!button) return;
    apply(stored());
    button.addEventListener("click", function () {
      const next = ORDER[(ORDER.indexOf(stored()) + 1) % ORDER.length];
      try { localStorage.setItem("poweron-theme", next); } catch (e) { /* private mode */ }
      apply(next);
    });
  });
})();

// The per-step chart: each step's (and Reasoning mode's each thought's) bars arrive with their
// figures as data (data-value), coloured by how the step ended (app.css); this scales every
// bar to the largest figure so far and writes the axes. The CSP allows no style
// attributes in HTML, but a script may set element.style.
(function () {
  "use strict";

  // One style for durations, as the server writes them (pricing.seconds_text).
  function seconds(ms) {
    if (ms < 59950) return (ms / 1000).toFixed(1) + " s";
    const total = Math.round(ms / 1000);
    const rest = total % 60;
    return Math.floor(total / 60) + " min" + (rest ? " " + rest + " s" : "");
  }
  function count(tokens) {
    return Math.round(tokens).toLocaleString("en") + " tok";
  }

  function draw(iterations, chart) {
    ["duration", "tokens"].forEach((kind) => {
      const bars = iterations.querySelectorAll(".bar." + kind);
      const values = Array.from(bars, (bar) => parseInt(bar.dataset.value, 10) || 0);
      const measured = Math.max(0, ...values) > 0; // the demo model counts no tokens
      const largest = Math.max(1, ...values);
      bars.forEach((bar, index) => {
        bar.style.height = Math.max(1, (100 * values[index]) / largest) + "%";
      });
      const format = kind === "duration" ? seconds : count;
      chart.querySelectorAll("[data-axis=" + kind + "]").forEach((label) => {
        const fraction = parseFloat(label.dataset.fraction);
        // Nothing measured yet: only the zero is labelled (not "1 tok" twice over a flat axis).
        label.textContent = measured || !fraction ? format(Math.round(largest * fraction)) : "";
      });
    });
  }

  // Folded to its caption line, or open: the reader's choice, kept in this browser (theme.js
  // applies it before the page is drawn, as <html data-chart="folded">).
  function foldable() {
    const toggle = document.getElementById("chart-toggle");
    if (!toggle) return;
    const root = document.documentElement;
    const show = () => toggle.setAttribute("aria-expanded", root.dataset.chart === "folded" ? "false" : "true");
    toggle.addEventListener("click", function () {
      const fold = root.dataset.chart !== "folded";
      if (fold) root.dataset.chart = "folded";
      else delete root.dataset.chart;
      try { localStorage.setItem("poweron-chart", fold ? "folded" : "open"); } catch (e) { /* private mode */ }
      show();
    });
    show();
  }

  document.addEventListener("DOMContentLoaded", function () {
    foldable();
    const iterations = document.getElementById("iterations");
    const chart = iterations && iterations.closest(".chart");
    if (!chart) return;
    new MutationObserver(() => draw(iterations, chart)).observe(iterations, { childList: true });
    draw(iterations, chart);
  });
})();

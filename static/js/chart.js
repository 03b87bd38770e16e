// The per-step chart: each step's bars arrive with their figures as data (data-value); this
// scales every bar to the largest figure so far and writes the axes. The CSP allows no style
// attributes in HTML, but a script may set element.style.
(function () {
  "use strict";

  function seconds(ms) {
    return ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + " s";
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

  document.addEventListener("DOMContentLoaded", function () {
    const iterations = document.getElementById("iterations");
    const chart = iterations && iterations.closest(".chart");
    if (!chart) return;
    new MutationObserver(() => draw(iterations, chart)).observe(iterations, { childList: true });
    draw(iterations, chart);
  });
})();

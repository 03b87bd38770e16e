// The sidebar on narrow screens: hidden behind the top bar's Workflows button so the chat
// takes the screen (app.css shows it while the button is expanded). The button opens and
// closes it; Escape closes it and gives the focus back. On wide screens the button is not
// shown and the sidebar always is.
(function () {
  "use strict";

  // The sidebar's entries of runs going on elsewhere (another tab, another process) follow
  // the database: while one says running, queued or stopping, its status is asked for every
  // few seconds (the open workflow's own entry also follows its live events).
  const GOING = ["running", "queued", "stopping"];
  function refreshStatuses() {
    const list = document.getElementById("workflow-list");
    if (!list || document.hidden) return;
    const going = Array.from(list.querySelectorAll("[id^=sidebar-status-]")).filter(
      (span) => GOING.some((status) => span.classList.contains("status-" + status)));
    if (!going.length) return;
    const asked = new Map(going.map((span) => [span.id.replace("sidebar-status-", ""), span.className]));
    fetch(list.dataset.statusesUrl + "?ids=" + Array.from(asked.keys()).join(","),
      { headers: { Accept: "application/json" } })
      .then((response) => (response.ok ? response.json() : null))
      .then(function (statuses) {
        if (!statuses) return;
        asked.forEach(function (before, id) {
          const span = document.getElementById("sidebar-status-" + id);
          // Changed since it was asked (its own live event came first): that is newer.
          if (!span || span.className !== before) return;
          const found = statuses[id];
          if (!found) { // deleted elsewhere: its entry goes
            span.closest("li").remove();
            return;
          }
          span.className = "status status-" + found.status;
          span.textContent = found.label;
        });
      })
      .catch(function () {}); // offline for now: the next round asks again
  }
  setInterval(refreshStatuses, 4000);

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

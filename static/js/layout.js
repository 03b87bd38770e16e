// The sidebar on narrow screens: hidden behind the Workflows button (☰ in a workflow's own
// bar) so the chat takes the screen (app.css shows it while the button is expanded, over the
// chat beside a workflow). The button opens and closes it; Escape (or, over the chat, a tap
// outside it) closes it and gives the focus back. On wide screens the button is not shown
// and the sidebar always is.
(function () {
  "use strict";

  // The sidebar follows every run, also those started elsewhere after the page loaded (in
  // another tab, another process, the API): every few seconds it asks for the statuses of
  // its entries and of workflows newer than its newest. A run waiting for the user's answer
  // or approval says "Waiting for you". The open workflow's entry also follows its live
  // events; a workflow created since the page loaded brings the list again.
  function refreshStatuses() {
    const list = document.getElementById("workflow-list");
    if (!list || document.hidden) return;
    const spans = Array.from(list.querySelectorAll("[id^=sidebar-status-]")).slice(0, 200);
    const asked = new Map(spans.map((span) => [span.id.replace("sidebar-status-", ""), span.className]));
    const newest = Math.max(0, ...Array.from(asked.keys(), Number));
    const url = list.dataset.statusesUrl + "?ids=" + Array.from(asked.keys()).join(",") + "&newer=" + newest;
    fetch(url, { headers: { Accept: "application/json" } })
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
          // A run begun elsewhere puts its workflow first, as a reload would list it.
          if (found.status === "running" && !/status-(running|waiting)/.test(before)) toTop(id);
          span.className = "status status-" + (found.waiting ? "waiting" : found.status);
          span.textContent = found.label;
        });
        if (Object.keys(statuses).some((id) => !asked.has(id))) reloadList(list);
      })
      .catch(function () {}); // offline for now: the next round asks again
  }
  // The list as the search box has it (unless it is searching: new workflows then wait).
  function reloadList(list) {
    const search = document.querySelector("form.workflow-search");
    if (!search || search.querySelector("input[name=q]").value.trim()) return;
    const query = new URLSearchParams(new FormData(search)).toString();
    fetch(search.getAttribute("action") + "?" + query, { headers: { "HX-Request": "true" } })
      .then((response) => (response.ok ? response.text() : null))
      .then(function (html) {
        if (!html || !list.isConnected) return;
        const holder = document.createElement("template");
        holder.innerHTML = html.trim();
        const fresh = holder.content.getElementById("workflow-list");
        if (fresh) list.replaceWith(fresh);
      })
      .catch(function () {});
  }
  setInterval(refreshStatuses, 3000);

  // The list is newest activity first: a workflow whose round begins moves to its top.
  function toTop(id) {
    const link = document.getElementById("sidebar-title-" + id);
    const item = link && link.closest("li");
    if (item && item.parentElement.firstElementChild !== item) item.parentElement.prepend(item);
  }
  // The open workflow's rounds, from its live events (not those replayed when it loaded).
  const chat = document.getElementById("live");
  if (chat) {
    const storedAtLoad = parseInt(chat.dataset.storedSeq || "0", 10);
    chat.addEventListener("poweron:event", function (evt) {
      const meta = evt.detail;
      const live = parseInt(meta.dataset.seq || "0", 10) > storedAtLoad;
      if (live && meta.dataset.type === "message" && meta.dataset.role === "user") {
        toTop(chat.dataset.workflow);
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    const toggle = document.getElementById("sidebar-toggle");
    if (!toggle) return;
    const expanded = () => toggle.getAttribute("aria-expanded") === "true";
    toggle.addEventListener("click", function () {
      const bar = toggle.closest(".chat-bar");
      if (bar && !expanded()) { // the list opens right under the bar, wherever it is now
        const top = Math.max(0, bar.getBoundingClientRect().bottom);
        document.getElementById("sidebar").style.setProperty("--drawer-top", top + "px");
      }
      toggle.setAttribute("aria-expanded", expanded() ? "false" : "true");
    });
    document.addEventListener("keydown", function (e) {
      if (e.key !== "Escape" || !expanded() || toggle.offsetParent === null) return;
      toggle.setAttribute("aria-expanded", "false");
      toggle.focus();
    });
    // Beside a workflow the list opens over the chat (app.css): a tap outside it closes it.
    document.addEventListener("click", function (e) {
      if (!expanded() || !toggle.closest(".chat-bar") || toggle.offsetParent === null) return;
      if (toggle.contains(e.target) || document.getElementById("sidebar").contains(e.target)) return;
      toggle.setAttribute("aria-expanded", "false");
    });
  });
})();

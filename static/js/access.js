// The chat for keyboard and screen-reader users: what a run does is said once, in a sentence
// (not every swapped fragment); focus never falls to the page's start when the control that
// held it goes away; Escape closes the Tools panel and the Rename form; a printout shows
// every step.
(function () {
  "use strict";

  const chat = document.getElementById("live");
  const announcer = document.getElementById("announcer");
  if (!chat || !announcer) return;

  // --- Saying what happens ----------------------------------------------------------------
  // What was stored before the page loaded is replayed to draw it: read on the page, not
  // said. What happens after (also what a reconnection brings) is said.
  const storedAtLoad = parseInt(chat.dataset.storedSeq || "0", 10);
  function replayed(meta) {
    const seq = parseInt(meta.dataset.seq || "0", 10);
    return seq > 0 && seq <= storedAtLoad;
  }

  let cleared = null;
  function say(text) {
    if (!text) return;
    announcer.textContent = text;
    clearTimeout(cleared);
    cleared = setTimeout(function () { announcer.textContent = ""; }, 5000);
  }
  function text(selector) {
    const element = document.querySelector(selector);
    return element ? element.textContent.replace(/\s+/g, " ").trim() : "";
  }

  // One sentence per milestone, read off what was just swapped in.
  function sentence(meta) {
    const type = meta.dataset.type;
    const place = meta.dataset.place || "";
    const [round] = place.split("-");
    if (type === "step") {
      const badge = document.getElementById("step-" + place + "-badge");
      if (!badge || badge.dataset.state === "running") return "";
      const action = text("#step-" + place + "-title code") || text("#step-" + place + "-title");
      return text("#step-" + place + " .step-no") + " " + action + ": " + badge.dataset.state + ".";
    }
    if (type === "approval" && document.querySelector("#step-" + place + "-approval form")) {
      return "Approval needed: " + text("#step-" + place + "-approval form p") + " Approve or Reject in the step.";
    }
    if (type === "ask" && meta.dataset.role === "waiting") return "Question: " + askText(place);
    if (type === "message" && meta.dataset.role === "assistant") return "The answer is ready.";
    if (type === "run" && meta.dataset.final) return "Run " + text("#round-" + round + "-status");
    if (type === "run" && meta.dataset.role === "queued") return "The run waits for a worker.";
    return "";
  }
  function askText(place) {
    return text("#ask-" + place.split("-").slice(0, 2).join("-") + "-open p");
  }
  chat.addEventListener("poweron:event", function (evt) {
    if (!replayed(evt.detail)) say(sentence(evt.detail));
    keepFocus();
  });

  // The live badge, said when it changes after the first connection (connection.js).
  let connectedOnce = false;
  let said = "";
  chat.addEventListener("poweron:connection", function (evt) {
    const state = evt.detail.state;
    if (state === said) return; // every failed attempt while away says nothing new
    said = state;
    if (state === "live" && connectedOnce) say("Connected again.");
    if (state === "live") connectedOnce = true;
    if (state === "reconnecting") say("Connection lost; reconnecting.");
    if (state === "refused") say("This workflow can no longer be followed.");
  });
  // An upload, said by the names of the files it attached.
  const uploads = document.getElementById("upload-form");
  if (uploads) {
    uploads.addEventListener("htmx:afterRequest", function (evt) {
      if (!evt.detail.successful) return;
      const names = Array.from(document.querySelectorAll("#attachments .chip-name")).map((n) => n.textContent.trim());
      if (names.length) say("Attached: " + names.join(", ") + ".");
    });
  }

  // --- Send: disabled for assistive technology too while a run goes ----------------------
  const send = document.getElementById("send-button");
  function markSend() {
    const status = document.getElementById("wf-status");
    const busy = status && ["running", "queued", "stopping"].includes(status.dataset.status);
    if (send) send.setAttribute("aria-disabled", busy ? "true" : "false");
  }
  chat.addEventListener("htmx:wsAfterMessage", markSend);
  markSend();

  // --- Focus ------------------------------------------------------------------------------
  // The control a reader last used may be swapped out or hidden (Stop once the run ended, an
  // approval's buttons, a closed form): focus then goes to the message box, not the page.
  let focused = null;
  document.addEventListener("focusin", function (e) { focused = e.target; });
  function lost(element) {
    return !element || !element.isConnected || element.getClientRects().length === 0;
  }
  function keepFocus() {
    requestAnimationFrame(function () {
      const active = document.activeElement;
      if (focused && lost(focused) && (!active || active === document.body || lost(active))) {
        const box = document.getElementById("composer-text");
        if (box) box.focus({ preventScroll: true });
      }
    });
  }
  document.body.addEventListener("htmx:afterSwap", keepFocus);
  document.body.addEventListener("htmx:afterRequest", keepFocus);
  chat.addEventListener("htmx:wsAfterSend", keepFocus);
  document.addEventListener("toggle", keepFocus, true);

  // Escape closes the Tools panel, the Rename form or an edit, and gives focus back to its
  // summary; a click elsewhere closes the Tools panel.
  const closable = "details.tool-overview[open], details.rename[open], details.edit-message[open]";
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape") return;
    const open = (document.activeElement && document.activeElement.closest(closable)) ||
      document.querySelector("details.tool-overview[open]");
    if (!open) return;
    open.open = false;
    open.querySelector("summary").focus();
  });
  document.addEventListener("click", function (e) {
    document.querySelectorAll("details.tool-overview[open]").forEach(function (panel) {
      if (!panel.contains(e.target)) panel.open = false;
    });
  });

  // --- Print: every step open, then as it was -------------------------------------------
  let closed = [];
  window.addEventListener("beforeprint", function () {
    closed = Array.from(document.querySelectorAll("#timeline details:not([open])"));
    closed.forEach(function (d) { if (!d.classList.contains("edit-message")) d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    closed.forEach(function (d) { d.open = false; });
    closed = [];
  });
})();

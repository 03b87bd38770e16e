// The live chat: keeps the replay position, de-duplicates by seq, streams token deltas by
// offset, uploads by drag and drop. Everything else is HTMX out-of-band swaps.
(function () {
  "use strict";

  const chat = document.getElementById("live");
  if (!chat) return;
  let lastSeq = parseInt(chat.dataset.lastSeq || "0", 10);
  const streamed = {}; // message key -> characters shown so far

  // Every (re)connect asks for what came after the last event this page has.
  htmx.createWebSocket = function (url) {
    const u = new URL(url);
    u.searchParams.set("after", String(lastSeq));
    return new WebSocket(u.toString());
  };

  const seqOf = (text) => {
    const m = /data-seq="(\d+)"/.exec(text.slice(0, 300));
    return m ? parseInt(m[1], 10) : null;
  };

  function applyDelta(text) {
    const holder = document.createElement("div");
    holder.innerHTML = text;
    const t = holder.querySelector("template[data-delta]");
    const key = t.dataset.key;
    const offset = parseInt(t.dataset.offset, 10);
    const piece = t.content.textContent;
    let target = document.getElementById("stream-" + key);
    if (!target) {
      const answers = document.getElementById("answer-slot-" + t.dataset.round);
      if (!answers) return;
      answers.insertAdjacentHTML("beforeend",
        '<article class="message message-assistant streaming" id="streaming-' + key + '"><header><small>Assistant · writing…</small></header>' +
        '<div class="content stream" id="stream-' + key + '"></div></article>');
      target = document.getElementById("stream-" + key);
    }
    const have = streamed[key] || 0;
    if (offset + piece.length <= have) return; // already shown
    const fresh = piece.slice(Math.max(0, have - offset));
    if (offset > have) return; // a gap: the stored, coalesced delta will fill it
    target.appendChild(document.createTextNode(fresh));
    streamed[key] = have + fresh.length;
  }

  chat.addEventListener("htmx:wsBeforeMessage", function (evt) {
    const text = evt.detail.message;
    const seq = seqOf(text);
    if (seq !== null) {
      if (seq <= lastSeq) { evt.preventDefault(); return; }
      lastSeq = seq;
      chat.dataset.lastSeq = String(seq);
    }
    const final = /data-final-key="([^"]+)"/.exec(text);
    if (final) {
      const streaming = document.getElementById("streaming-" + final[1]);
      if (streaming) streaming.remove();
    }
    if (text.indexOf("<template data-delta") !== -1 && text.indexOf("<template data-delta") < 300) {
      evt.preventDefault();
      applyDelta(text);
      scrollDown();
    }
  });

  chat.addEventListener("htmx:wsAfterMessage", scrollDown);
  // Notices for this tab fade after a while; the record of the run is in the timeline.
  chat.addEventListener("htmx:wsAfterMessage", function () {
    document.querySelectorAll("#notices .toast:not([data-timed])").forEach(function (toast) {
      toast.dataset.timed = "1";
      setTimeout(function () { toast.remove(); }, 8000);
    });
  });
  chat.addEventListener("htmx:wsOpen", () => setConnection("live"));
  chat.addEventListener("htmx:wsClose", (evt) => {
    const code = evt.detail.event.code;
    setConnection(code === 4401 || code === 4404 ? "refused" : "reconnecting");
  });

  function setConnection(state) {
    const badge = document.getElementById("connection");
    if (!badge) return;
    badge.dataset.state = state;
    badge.textContent = { live: "● live", reconnecting: "○ reconnecting…", refused: "× not allowed" }[state];
  }

  function scrollDown() {
    const pane = document.getElementById("timeline");
    if (!pane) return;
    const nearBottom = pane.scrollHeight - pane.scrollTop - pane.clientHeight < 200;
    if (nearBottom) pane.scrollTop = pane.scrollHeight;
  }

  // Clear the composer only once the round has really opened (its user message arrived):
  // a refused send (say, while another run is going) keeps the text and the attachments.
  let pendingSend = false;
  chat.addEventListener("htmx:wsAfterSend", function (evt) {
    const form = evt.target.closest("form");
    if (!form) return;
    if (form.id === "composer") pendingSend = true;
    // A question is answered once: the loop has moved on.
    if (form.classList.contains("ask") || form.classList.contains("feedback")) {
      form.querySelectorAll("button, input").forEach((el) => { el.disabled = true; });
      form.classList.add("answered");
    }
  });
  chat.addEventListener("htmx:wsAfterMessage", function (evt) {
    if (!pendingSend || evt.detail.message.indexOf('class="message message-user"') === -1) return;
    pendingSend = false;
    const composer = document.getElementById("composer");
    if (composer) composer.reset();
    const chips = document.getElementById("attachments");
    if (chips) chips.innerHTML = "";
  });

  // Ctrl+Enter (or Cmd+Enter) sends.
  const textarea = document.querySelector("#composer textarea");
  if (textarea) {
    textarea.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        document.getElementById("send-button").click();
      }
    });
  }

  // Drag and drop onto the chat uploads like the file picker does.
  const drop = document.getElementById("dropzone");
  const picker = document.getElementById("file-picker");
  if (drop && picker) {
    ["dragenter", "dragover"].forEach((name) => chat.addEventListener(name, (e) => {
      e.preventDefault(); drop.classList.add("active");
    }));
    ["dragleave", "drop"].forEach((name) => chat.addEventListener(name, (e) => {
      e.preventDefault(); drop.classList.remove("active");
    }));
    chat.addEventListener("drop", (e) => {
      if (!e.dataTransfer || !e.dataTransfer.files.length) return;
      picker.files = e.dataTransfer.files;
      picker.dispatchEvent(new Event("change", { bubbles: true }));
    });
  }
})();

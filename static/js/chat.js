// The live chat: keeps the replay position, de-duplicates by seq, streams token deltas by
// offset, uploads by drag and drop. Everything else is HTMX out-of-band swaps.
(function () {
  "use strict";

  const chat = document.getElementById("live");
  if (!chat) return;
  let lastSeq = parseInt(chat.dataset.lastSeq || "0", 10);
  // The page draws what was stored before it loaded by replaying it. While it does, nothing
  // measures the layout per event (that made a long workflow's load quadratic): the steps
  // fold and the view goes to the bottom once, when the replay reaches this seq.
  const storedAtLoad = parseInt(chat.dataset.storedSeq || "0", 10);
  function replaying() { return lastSeq < storedAtLoad; }
  const streamed = {}; // message key -> characters shown so far
  const attempts = {}; // message key -> the attempt being shown (a resumed run streams anew)

  // The socket, its reconnections and its "after" (data-last-seq): connection.js.

  // Every fragment starts with #event-meta: the event's seq, type and keys as data.
  function metaOf(text) {
    const holder = document.createElement("template");
    holder.innerHTML = text;
    const meta = holder.content.firstElementChild;
    return meta && meta.id === "event-meta" ? meta : null;
  }

  function applyDelta(meta) {
    const key = meta.dataset.key;
    const offset = parseInt(meta.dataset.offset, 10);
    const piece = meta.textContent;
    let target = document.getElementById("stream-" + key);
    if (!target) {
      const answers = document.getElementById("answer-slot-" + meta.dataset.round);
      if (!answers) return;
      const article = document.createElement("article");
      article.className = "message message-assistant streaming";
      article.id = "streaming-" + key;
      article.innerHTML = '<header><small>Assistant · writing…</small></header><div class="content stream"></div>';
      article.querySelector(".stream").id = "stream-" + key;
      answers.appendChild(article);
      target = document.getElementById("stream-" + key);
    }
    if (attempts[key] !== undefined && attempts[key] !== meta.dataset.attempt) {
      target.textContent = ""; // the answer is being written again from the start
      streamed[key] = 0;
    }
    attempts[key] = meta.dataset.attempt;
    const have = streamed[key] || 0;
    if (offset + piece.length <= have) return; // already shown
    if (offset > have) return; // a gap: the stored, coalesced delta fills it
    target.appendChild(document.createTextNode(piece.slice(have - offset)));
    streamed[key] = offset + piece.length;
  }

  let lastMeta = null;
  chat.addEventListener("htmx:wsAfterMessage", function () {
    if (!lastMeta) return;
    chat.dispatchEvent(new CustomEvent("poweron:event", { detail: lastMeta }));
    lastMeta = null;
  });
  chat.addEventListener("htmx:wsBeforeMessage", function (evt) {
    const wasReplaying = replaying();
    if (!wasReplaying) noteFollowing();
    const meta = metaOf(evt.detail.message);
    if (!meta) return;
    showPhase(meta);
    const seq = meta.dataset.seq ? parseInt(meta.dataset.seq, 10) : null;
    if (seq !== null) {
      if (seq <= lastSeq) { evt.preventDefault(); return; }
      lastSeq = seq;
      chat.dataset.lastSeq = String(seq);
    }
    if (meta.dataset.type === "delta") {
      evt.preventDefault(); // no swap, so no wsAfterMessage: the replay's end is done here
      applyDelta(meta);
      if (wasReplaying && !replaying()) foldFinishedSteps();
      if (!replaying()) scrollDown();
      return;
    }
    lastMeta = meta; // said, once it is swapped in, by access.js
    if (meta.dataset.type === "message" && meta.dataset.key) {
      const streaming = document.getElementById("streaming-" + meta.dataset.key);
      if (streaming) streaming.remove(); // the complete message replaces what was streamed
    }
    if (meta.dataset.role === "user") sendConfirmed();
    if (meta.dataset.type === "notice" && pendingAsk) {
      if (meta.dataset.role === "error" && pendingAsk.isConnected) answering(pendingAsk, false);
      pendingAsk = null;
    }
    // A refused send keeps its text and attachments, and a later message (from another tab,
    // say) is not taken for it.
    if (meta.dataset.type === "notice" && meta.dataset.role === "error") pendingSend = false;
    if (meta.dataset.type === "notice" && pendingSteer) {
      if (meta.dataset.role === "info") pendingSteer.reset(); // refused: the note stays
      pendingSteer = null;
    }
  });

  // A step that succeeded folds to its one-line summary (action, outcome, duration, tokens);
  // a failed, rejected or stopped one stays open with its reason. One the reader opened or
  // closed stays as they left it.
  const FOLDED = new Set(["success"]);
  function foldFinishedSteps() {
    if (replaying()) return;
    document.querySelectorAll("details.step[open]:not([data-pinned])").forEach(function (step) {
      if (step.contains(document.activeElement)) return; // never fold away the reader's focus
      const badge = step.querySelector(":scope > summary .badge[data-state]");
      if (badge && FOLDED.has(badge.dataset.state)) step.open = false;
    });
  }
  chat.addEventListener("click", function (e) {
    const summary = e.target.closest("details.step > summary");
    if (summary) summary.parentElement.dataset.pinned = "1";
  });
  chat.addEventListener("htmx:wsAfterMessage", foldFinishedSteps);
  chat.addEventListener("htmx:wsAfterMessage", scrollDown);
  // Notices for this tab fade after a while (an error after longer, to be read whole); the
  // record of the run is in the timeline.
  chat.addEventListener("htmx:wsAfterMessage", function () {
    document.querySelectorAll("#notices .toast:not([data-timed])").forEach(function (toast) {
      toast.dataset.timed = "1";
      setTimeout(function () { toast.remove(); }, toast.classList.contains("error") ? 20000 : 8000);
    });
  });
  // The view follows the work while the reader is at the bottom; scrolled up, they get a
  // "jump to latest" button instead of being pulled down. Whether they were at the bottom is
  // noted before each message is swapped in: one message may add more than the margin.
  // On a narrow screen the timeline does not scroll on its own: the page does.
  const jump = document.getElementById("jump-latest");
  let following = true;
  // app.css's narrow and short layouts, where the page scrolls rather than the timeline
  const narrow = window.matchMedia("(max-width: 48rem), (max-height: 40rem)");
  function scroller() {
    const timeline = document.getElementById("timeline");
    if (!timeline) return null;
    return narrow.matches ? document.scrollingElement : timeline;
  }
  function nearBottom(pane) {
    return pane.scrollHeight - pane.scrollTop - pane.clientHeight < 200;
  }
  function noteFollowing() {
    const pane = scroller();
    following = !pane || nearBottom(pane);
  }
  function scrollDown() {
    if (replaying()) return;
    const pane = scroller();
    if (!pane) return;
    if (following || nearBottom(pane)) pane.scrollTop = pane.scrollHeight;
    else if (jump) jump.hidden = false;
  }
  if (jump) {
    jump.addEventListener("click", function () {
      const pane = scroller();
      pane.scrollTop = pane.scrollHeight;
      jump.hidden = true;
    });
    const hideAtBottom = function () {
      const pane = scroller();
      if (pane && nearBottom(pane)) jump.hidden = true;
    };
    document.getElementById("timeline").addEventListener("scroll", hideAtBottom);
    window.addEventListener("scroll", hideAtBottom);
  }

  // What the agent is doing now, and for how long: read off the type of the latest event.
  const PHASES = {
    message: "Planning the tasks", taskplan: "Planning the tasks", task: "Working on the task",
    actionplan: "Planning the actions", step: "Choosing an action", plan: "Setting the parameters",
    act: "Running the action", approval: "Waiting for your approval", ask: "Waiting for your answer",
    observe: "Judging the result", refine: "Going on", review: "Reviewing the task",
    thought: "Thinking", delta: "Writing the answer",
  };
  const RUN_PHASES = { queued: "Waiting for a worker", stopping: "Stopping" };
  const activity = document.getElementById("activity");
  let phaseSince = 0;
  function showPhase(meta) {
    if (!activity) return;
    if (meta.dataset.final) { activity.hidden = true; return; }
    let phase = PHASES[meta.dataset.type];
    if (meta.dataset.type === "message" && meta.dataset.role !== "user") phase = null;
    // A run that waits again (its worker stopped) or is stopping says so, not its last phase.
    if (meta.dataset.type === "run") phase = RUN_PHASES[meta.dataset.role] || null;
    if (!phase) return;
    if (activity.dataset.phase !== phase) {
      activity.dataset.phase = phase;
      // Since the event was stored (a reload replays it), never later than now.
      const at = Number(meta.dataset.at || 0) * 1000;
      phaseSince = at ? Math.min(Date.now(), at) : Date.now();
    }
    activity.hidden = false;
    tick();
  }
  // While the socket is down nothing is known of the run: the line says so, and stops
  // counting until the connection is back.
  function tick() {
    if (!activity) return;
    const away = chat.dataset.connection === "reconnecting";
    if (away) activity.dataset.reconnecting = "1";
    else delete activity.dataset.reconnecting;
    if (activity.hidden) return;
    const seconds = Math.floor((Date.now() - phaseSince) / 1000);
    activity.textContent = away ? "Reconnecting to the server…"
      : activity.dataset.phase + "… " + seconds + " s";
  }
  setInterval(tick, 1000);
  chat.addEventListener("poweron:connection", tick);

  // Clear the composer only once the round has really opened (its user message arrived):
  // a refused send (say, while another run is going) keeps the text and the attachments.
  let pendingSend = false;
  let pendingEdit = null; // an edited message's panel closes once its round has opened
  let pendingSteer = null; // a steering note leaves its box once the run has taken it
  let pendingAsk = null; // a question's answer, until it is taken or refused
  function answering(form, sent) {
    form.querySelectorAll("button, input").forEach((el) => { el.disabled = sent; });
    form.classList.toggle("answered", sent);
  }
  // A second Send (a double click, Enter twice) before the first is answered is not sent.
  let sentAt = 0;
  chat.addEventListener("htmx:wsConfigSend", function (evt) {
    const form = evt.target.closest && evt.target.closest("form");
    if (form && form.id === "composer" && pendingSend && Date.now() - sentAt < 10000) {
      evt.preventDefault();
    }
  });
  chat.addEventListener("htmx:wsAfterSend", function (evt) {
    const form = evt.target.closest("form");
    if (!form) return;
    if (form.id === "composer") { pendingSend = true; sentAt = Date.now(); }
    if (form.classList.contains("edit-form")) pendingEdit = form.closest("details");
    if (form.id === "steer-form") pendingSteer = form;
    // A question or an approval is answered once: the loop has moved on (a refused answer
    // opens it again).
    if (form.classList.contains("ask") || form.closest(".approval")) {
      answering(form, true);
      pendingAsk = form;
    }
    // A rating stays visible, and can be changed (with or without a comment) at any time.
    if (form.classList.contains("feedback") && form.dataset.chosen) {
      form.querySelectorAll("button[name=rating]").forEach(function (button) {
        const chosen = button.value === form.dataset.chosen;
        button.setAttribute("aria-pressed", chosen ? "true" : "false");
        button.classList.toggle("chosen", chosen);
      });
    }
  });
  chat.addEventListener("click", function (e) {
    const button = e.target.closest(".feedback button[name=rating]");
    if (button) button.closest("form").dataset.chosen = button.value;
  });
  function sendConfirmed() {
    if (pendingEdit) { pendingEdit.open = false; pendingEdit = null; }
    if (!pendingSend) return;
    pendingSend = false;
    // The files sent went with the message; an unticked one still waits (with its ×), and
    // stays unticked (the form's reset would tick it again).
    document.querySelectorAll("#attachments input[name=documents]:checked").forEach(
      (box) => box.closest(".upload-chip").remove());
    document.querySelectorAll("#attachments .upload-errors").forEach((list) => list.remove());
    const waiting = Array.from(document.querySelectorAll("#attachments input[name=documents]"));
    const composer = document.getElementById("composer");
    if (composer) composer.reset();
    waiting.forEach((box) => { box.checked = false; });
  }

  // Copy an answer, or one of its code blocks, with one click. Code blocks get their button
  // when they arrive; the answer's is in its template.
  function addCodeCopyButtons() {
    document.querySelectorAll(".markdown pre:not([data-copy-ready])").forEach(function (pre) {
      pre.dataset.copyReady = "1";
      const button = document.createElement("button");
      button.type = "button";
      button.className = "copy-button copy-code outline secondary";
      button.textContent = "Copy";
      button.title = "Copy this code";
      pre.prepend(button);
    });
  }
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    const area = document.createElement("textarea");  // plain http: the older way
    area.value = text;
    document.body.appendChild(area);
    area.select();
    document.execCommand("copy");
    area.remove();
    return Promise.resolve();
  }
  document.addEventListener("click", function (e) {
    const button = e.target.closest(".copy-button");
    if (!button) return;
    const source = button.dataset.copy
      ? document.querySelector(button.dataset.copy)
      : button.parentElement.querySelector("code") || button.parentElement;
    if (!source) return;
    const text = source.innerText  // without the code blocks' own buttons
      .split("\n").filter(function (line) { return line !== "Copy" && line !== "Copied"; })
      .join("\n").trim();
    copyText(text).then(function () {
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = "Copy"; }, 1500);
    });
  });
  addCodeCopyButtons();
  chat.addEventListener("htmx:wsAfterMessage", addCodeCopyButtons);

  // A rename that worked closes its form; a refused one stays open with its message. The
  // tab's title follows the workflow's, renamed here, in another tab or named by a message.
  function syncTabTitle() {
    const title = document.getElementById("wf-title");
    if (title) document.title = title.textContent.trim() + " · PowerOn";
  }
  chat.addEventListener("htmx:wsAfterMessage", syncTabTitle);
  const renameForm = document.getElementById("rename-form");
  if (renameForm) {
    renameForm.addEventListener("htmx:afterRequest", function (evt) {
      const refused = document.querySelector("#wf-title-block .error");
      if (evt.detail.successful && !refused) document.getElementById("rename").open = false;
      syncTabTitle();
    });
  }

  // Enter sends (so do Ctrl+Enter and Cmd+Enter); Shift+Enter adds a line. Enter that
  // confirms an input method's composition (e.g. Japanese) does not send. On a touch screen
  // Enter adds a line (its keyboard has no Shift+Enter) and the Send button sends.
  const textarea = document.querySelector("#composer textarea");
  const touch = window.matchMedia("(pointer: coarse)");
  if (textarea) {
    if (touch.matches) textarea.placeholder = "Describe your task…";
    textarea.addEventListener("keydown", function (e) {
      if (e.key !== "Enter" || e.shiftKey || e.altKey || e.isComposing) return;
      if (touch.matches && !e.ctrlKey && !e.metaKey) return;
      e.preventDefault();
      document.getElementById("send-button").click();
    });
  }

  // An upload's refusal (too large, too many, no file) is an HTML fragment to show.
  const uploadForm = document.getElementById("upload-form");
  if (uploadForm) {
    // Fired on the target (#attachments, outside the form): match the request's element.
    document.body.addEventListener("htmx:beforeSwap", function (evt) {
      if (evt.detail.elt !== uploadForm && evt.detail.requestConfig?.elt !== uploadForm) return;
      if ([400, 413, 429].includes(evt.detail.xhr.status)) {
        evt.detail.shouldSwap = true;
        evt.detail.isError = false;
      }
    });
    // Sent (or refused): the picker empties, so choosing the same file again uploads it again.
    uploadForm.addEventListener("htmx:afterRequest", function () {
      document.getElementById("file-picker").value = "";
    });
    // Files past the limit are not sent at all: the server would answer 413 before reading
    // them, but a browser still sending may report a reset connection instead.
    uploadForm.addEventListener("htmx:confirm", function (evt) {
      // A new attempt: the last one's refusal no longer holds.
      document.querySelectorAll("#attachments .upload-errors").forEach((list) => list.remove());
      const limit = Number(uploadForm.dataset.maxBytes || 0);
      const files = Array.from(document.getElementById("file-picker").files);
      if (!limit || files.reduce((sum, file) => sum + file.size, 0) <= limit) return;
      evt.preventDefault();
      const list = document.createElement("ul");
      list.className = "upload-errors";
      list.setAttribute("role", "alert");
      const item = document.createElement("li");
      item.className = "error";
      item.textContent = uploadForm.dataset.tooLarge;
      list.append(item);
      document.getElementById("attachments").append(list);
      document.getElementById("file-picker").value = "";
    });
  }

  // The per-step chart is drawn by chart.js.

  const attach = document.getElementById("attach-button");
  if (attach) attach.addEventListener("click", () => document.getElementById("file-picker").click());

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

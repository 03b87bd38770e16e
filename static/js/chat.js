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

  // A streamed answer is drawn as Markdown while it comes (markdown.js), as plain text where
  // the renderer is missing; the complete message's server render replaces it.
  const views = {}; // message key -> its Markdown view
  function applyDelta(meta) {
    const key = meta.dataset.key;
    const offset = parseInt(meta.dataset.offset, 10);
    const piece = meta.textContent;
    let target = document.getElementById("stream-" + key);
    if (!target) {
      const answers = document.getElementById("answer-slot-" + meta.dataset.round);
      if (!answers) return;
      // Built as the complete answer is (message.html), so that it takes its place in the
      // same box, without a jump.
      const article = document.createElement("article");
      article.className = "message message-assistant streaming";
      article.id = "streaming-" + key;
      article.innerHTML = '<header><h3 class="answer-heading"><small>Answer · writing…</small></h3></header>' +
        '<div class="content markdown"></div>';
      target = article.querySelector(".content");
      target.id = "stream-" + key;
      if (!window.PowerOnMarkdown) target.classList.add("stream");
      answers.appendChild(article);
      delete views[key];
    }
    if (attempts[key] !== undefined && attempts[key] !== meta.dataset.attempt) {
      streamed[key] = 0; // the answer is being written again from the start
      if (views[key]) views[key].stop();
      delete views[key];
      target.textContent = "";
    }
    attempts[key] = meta.dataset.attempt;
    const have = streamed[key] || 0;
    if (offset + piece.length <= have) return; // already shown
    if (offset > have) return; // a gap: the stored, coalesced delta fills it
    const fresh = piece.slice(have - offset);
    streamed[key] = offset + piece.length;
    if (!window.PowerOnMarkdown) { target.append(fresh); return; }
    if (!views[key]) views[key] = window.PowerOnMarkdown.stream(target, followDrawn);
    views[key].append(fresh);
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
    if (meta.dataset.more) {
      // A long workflow is replayed a page at a time: ask for the next one once this one
      // is drawn (it ended at data-more).
      evt.preventDefault();
      const after = parseInt(meta.dataset.more, 10);
      evt.detail.socketWrapper.send(JSON.stringify({ action: "resume", after: after }));
      return;
    }
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
  // Notices for this tab fade after a while (an error after longer, to be read whole), and
  // all go when the run ends (a "the run is still going" would then be wrong); the record of
  // the run is in the timeline.
  chat.addEventListener("poweron:event", function (evt) {
    if (evt.detail.dataset.type !== "run" || !evt.detail.dataset.final) return;
    document.querySelectorAll("#notices .toast").forEach((toast) => toast.remove());
  });
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
  // A workflow that had rounds opens at its latest round's start (its question, then what
  // was done and the answer, read from the top), once the replay has drawn them.
  let opened = storedAtLoad === 0;
  function openAtLatestRound() {
    opened = true;
    const rounds = document.querySelectorAll("#timeline > .round");
    const pane = scroller();
    if (!rounds.length || !pane) return;
    rounds[rounds.length - 1].scrollIntoView({ block: "start" });
    following = nearBottom(pane);
    if (jump) jump.hidden = following;
  }
  // A streamed answer grows when it is drawn (at the next frame), after its delta came: a
  // reader who was following is kept at the bottom.
  function followDrawn() {
    const pane = scroller();
    if (pane && opened && following && !replaying()) pane.scrollTop = pane.scrollHeight;
  }
  function scrollDown() {
    if (replaying()) return;
    if (!opened) { openAtLatestRound(); return; }
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

  // What the agent is doing now, and for how long: read off the type of the latest event
  // (and, for a step, a task or a stop, its status: data-role).
  const PHASES = {
    message: "Planning the tasks", taskplan: "Planning the tasks", task: "Working on the task",
    actionplan: "Planning the actions", step: "Choosing an action", plan: "Setting the parameters",
    act: "Running the action", approval: "Waiting for your approval", ask: "Waiting for your answer",
    observe: "Judging the result", refine: "Going on", review: "Reviewing the task",
    thought: "Thinking", delta: "Writing the answer",
  };
  const RUN_PHASES = { queued: "Waiting for a worker", stopping: "Stopping" };
  // A task's loop stopped: its review comes next (a spent budget skips it), or the question
  // whether to go on. A closed step says nothing of what comes next: the line stays.
  const STOP_PHASES = {
    criteria_met: "Reviewing the task", no_improvement: "Reviewing the task",
    step_failed: "Reviewing the task", plan_complete: "Reviewing the task",
    max_steps: "Reviewing the task", token_budget: "Writing the answer",
    cost_budget: "Writing the answer", time_budget: "Writing the answer",
  };
  const TASK_PHASES = { pending: "Planning the tasks", running: "Working on the task",
    retry: "Working on the task" };
  const activity = document.getElementById("activity");
  let phaseSince = 0;
  function showPhase(meta) {
    if (!activity) return;
    if (meta.dataset.final) { activity.hidden = true; return; }
    let phase = PHASES[meta.dataset.type];
    if (meta.dataset.type === "message" && meta.dataset.role !== "user") phase = null;
    // A run that waits again (its worker stopped) or is stopping says so, not its last phase.
    if (meta.dataset.type === "run") phase = RUN_PHASES[meta.dataset.role] || null;
    if (meta.dataset.type === "status") phase = STOP_PHASES[meta.dataset.role] || null;
    // A task that ended: the next one starts, or the answer is written.
    if (meta.dataset.type === "task") phase = TASK_PHASES[meta.dataset.role] || "Writing the answer";
    if (meta.dataset.type === "step" && meta.dataset.role !== "started") phase = null;
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

  // Copying an answer or a code block: copy.js.

  // A rename that worked closes its form; a refused one stays open with its message. The
  // tab's title follows the workflow's, renamed here, in another tab or named by a message.
  function syncTabTitle() {
    const title = document.getElementById("wf-title");
    if (title) document.title = title.textContent.trim() + " · PowerOn";
  }
  chat.addEventListener("htmx:wsAfterMessage", syncTabTitle);
  const renameForm = document.getElementById("rename-form");
  if (renameForm) {
    // The refusal comes back in #rename-error, by the box (an empty one when it worked).
    renameForm.addEventListener("htmx:afterRequest", function (evt) {
      const error = document.getElementById("rename-error");
      const refused = error && error.textContent.trim();
      if (evt.detail.successful && !refused) document.getElementById("rename").open = false;
      if (refused) renameForm.querySelector("input[name=title]").focus();
      syncTabTitle();
    });
  }

  // The message box, the edit boxes, the example prompts and the uploads: compose.js.
})();

// The page's live socket: it says whether it is connected (#connection's data-state and
// #live's data-connection: live, reconnecting, refused), resumes after the last event the
// page holds, and comes back within a second or two of the server answering again: after a
// restart, a dropped network, a laptop waking up or a tab shown again.
(function () {
  "use strict";

  const chat = document.getElementById("live");
  if (!chat || !window.htmx) return;

  // The ws extension waits a random time up to 2^n seconds (at most 64 s) before attempt n,
  // so a server back after a few seconds was found ~30 s later. Attempts are cheap (a closed
  // port refuses at once), so they stay close together: a quarter of a second at first, then
  // at most 1.5 s, with jitter so that many pages do not come back all at the same instant.
  const FIRST_MS = 250;
  const MOST_MS = 1500;
  let retryPending = false; // the extension has a timer set for its next attempt
  function pause(retryCount) {
    const wait = Math.min(MOST_MS, FIRST_MS * Math.pow(2, retryCount));
    return wait / 2 + Math.random() * (wait / 2);
  }
  htmx.config.wsReconnectDelay = function (retryCount) {
    retryPending = true;
    return pause(retryCount);
  };

  // Every (re)connect asks for what came after the last event this page has (chat.js keeps
  // data-last-seq). Only the newest socket speaks for the connection: a late close of one it
  // replaced says nothing.
  let socket = null;
  htmx.createWebSocket = function (url) {
    retryPending = false;
    const u = new URL(url);
    u.searchParams.set("after", chat.dataset.lastSeq || "0");
    socket = new WebSocket(u.toString());
    return socket;
  };

  // 4401: this session is signed out (here or elsewhere); 4404: the workflow was deleted.
  const REFUSED = { 4401: "× signed out", 4404: "× deleted" };
  // The closes the extension retries on its own; after any other one (a server shutting
  // down cleanly says 1001, "going away"; 4013, this page fell behind) the page tries again
  // itself.
  const RETRIED = [1006, 1011, 1012, 1013];
  let wrapper = null; // the extension's socket, which can reconnect at once
  let ownRetry = null;

  chat.addEventListener("htmx:wsOpen", function (evt) {
    if (evt.detail.event.target !== socket) return;
    wrapper = evt.detail.socketWrapper;
    setConnection("live");
  });
  chat.addEventListener("htmx:wsClose", function (evt) {
    const event = evt.detail.event;
    if (event.target !== socket) return;
    wrapper = evt.detail.socketWrapper;
    if (REFUSED[event.code]) {
      setConnection("refused", REFUSED[event.code]);
      return;
    }
    setConnection("reconnecting");
    if (!RETRIED.includes(event.code)) {
      clearTimeout(ownRetry);
      ownRetry = setTimeout(reconnectNow, pause(0));
    }
  });

  // Back online, or shown again after being hidden (a background tab's timers are slowed
  // down): try at once rather than at the next attempt's time, unless one is on its way.
  function reconnectNow() {
    clearTimeout(ownRetry);
    if (!wrapper || retryPending || chat.dataset.connection !== "reconnecting") return;
    if (socket && socket.readyState !== WebSocket.CLOSED) return;
    wrapper.reconnect();
  }
  window.addEventListener("online", reconnectNow);
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) reconnectNow();
  });

  function setConnection(state, text) {
    chat.dataset.connection = state;
    const badge = document.getElementById("connection");
    if (badge) {
      badge.dataset.state = state;
      badge.textContent = text || { live: "● live", reconnecting: "○ reconnecting…" }[state];
    }
    chat.dispatchEvent(new CustomEvent("poweron:connection", { detail: { state: state } }));
  }
})();

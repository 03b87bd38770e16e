// Copy an answer, or one of its code blocks, with one click. An answer copies as its Markdown
// source (the text the model wrote, held in the answer's <template class="markdown-source">,
// never read back from the page) and, where the clipboard takes it, as rich text too (the
// answer as shown, for editors that paste formatting); a code block copies its code exactly.
(function () {
  "use strict";

  // Code blocks get their button when they arrive; the answer's is in its template.
  function addCodeCopyButtons() {
    document.querySelectorAll(".markdown pre:not([data-copy-ready])").forEach(function (pre) {
      if (pre.closest(".streaming")) return; // the complete answer gets them
      pre.dataset.copyReady = "1";
      const button = document.createElement("button");
      button.type = "button";
      button.className = "copy-button copy-code outline secondary";
      button.textContent = "Copy";
      button.title = "Copy this code";
      pre.prepend(button);
    });
  }

  // Both flavours through the Clipboard API where the page may use it (a secure context);
  // else through a copy event, which also sets both (plain http on another machine).
  function copy(plain, html) {
    if (window.isSecureContext && navigator.clipboard) {
      if (html && window.ClipboardItem && navigator.clipboard.write) {
        const item = new ClipboardItem({
          "text/plain": new Blob([plain], { type: "text/plain" }),
          "text/html": new Blob([html], { type: "text/html" }),
        });
        return navigator.clipboard.write([item]).catch(() => navigator.clipboard.writeText(plain))
          .catch(() => copyByEvent(plain, html));
      }
      return navigator.clipboard.writeText(plain).catch(() => copyByEvent(plain, html));
    }
    return copyByEvent(plain, html);
  }
  function copyByEvent(plain, html) {
    function fill(e) {
      e.clipboardData.setData("text/plain", plain);
      if (html) e.clipboardData.setData("text/html", html);
      e.preventDefault();
    }
    document.addEventListener("copy", fill);
    try {
      return document.execCommand("copy") ? Promise.resolve() : Promise.reject(new Error("copy refused"));
    } finally {
      document.removeEventListener("copy", fill);
    }
  }

  // What a button copies: its code block's code (without the newline that ends the fence),
  // or its answer's source and the answer as shown, without the code blocks' buttons.
  function copied(button) {
    const pre = button.closest("pre");
    if (pre) {
      const code = pre.querySelector("code");
      return { plain: (code || pre).textContent.replace(/\n$/, ""), html: "" };
    }
    const answer = button.closest("article");
    const source = answer && answer.querySelector("template.markdown-source");
    const shown = answer && answer.querySelector(".content.markdown");
    if (!source || !shown) return null;
    const clone = shown.cloneNode(true);
    clone.querySelectorAll(".copy-button").forEach((b) => b.remove());
    return { plain: source.content.textContent, html: clone.innerHTML.trim() };
  }

  document.addEventListener("click", function (e) {
    const button = e.target.closest(".copy-button");
    if (!button) return;
    const what = copied(button);
    if (!what) return;
    copy(what.plain, what.html).then(function () {
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = "Copy"; }, 1500);
    }, function () {
      button.textContent = "Copy failed";
      setTimeout(function () { button.textContent = "Copy"; }, 3000);
    });
  });

  document.addEventListener("DOMContentLoaded", function () {
    addCodeCopyButtons();
    const chat = document.getElementById("live");
    if (chat) chat.addEventListener("htmx:wsAfterMessage", addCodeCopyButtons);
  });
})();

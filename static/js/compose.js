// Writing to the agent: the message box and the edit boxes (the same keys send), the example
// prompts of a new workflow, and the uploads (the picker, drag and drop, and what is refused
// before anything is sent: files too large, of a type the readers cannot read, or empty).
(function () {
  "use strict";

  const chat = document.getElementById("live");
  if (!chat) return;

  // Enter sends (so do Ctrl+Enter and Cmd+Enter); Shift+Enter adds a line. Enter that
  // confirms an input method's composition (e.g. Japanese) does not send. On a touch screen
  // Enter adds a line (its keyboard has no Shift+Enter) and the Send button sends. An edited
  // message's box works the same way: Enter runs it again.
  const touch = window.matchMedia("(pointer: coarse)");
  const textarea = document.querySelector("#composer textarea");
  if (textarea && touch.matches) textarea.placeholder = "Describe your task…";
  chat.addEventListener("keydown", function (e) {
    const box = e.target;
    if (box.tagName !== "TEXTAREA" || !box.matches("#composer textarea, .edit-form textarea")) return;
    if (e.key !== "Enter" || e.shiftKey || e.altKey || e.isComposing) return;
    if (touch.matches && !e.ctrlKey && !e.metaKey) return;
    e.preventDefault();
    const button = box.form.querySelector("button[type=submit]");
    if (button) button.click();
  });

  // An example prompt goes into the message box, to send as it is or to change first.
  chat.addEventListener("click", function (e) {
    const example = e.target.closest(".examples button[data-prompt]");
    if (!example || !textarea) return;
    textarea.value = example.dataset.prompt;
    textarea.focus();
    textarea.setSelectionRange(textarea.value.length, textarea.value.length);
  });

  // --- Uploads ----------------------------------------------------------------------------
  const uploadForm = document.getElementById("upload-form");
  const picker = document.getElementById("file-picker");
  const readableHolder = document.getElementById("readable-files");
  const readable = readableHolder ? JSON.parse(readableHolder.textContent) : null;
  // Whether the document readers read a file: by its type, else its name (as the server's
  // detect_kind decides, from the same table).
  function canRead(file) {
    if (!readable) return true;
    const type = (file.type || "").split(";")[0].trim().toLowerCase();
    if (readable.mimeTypes.includes(type)) return true;
    if (readable.mimeEndings.some((end) => type.endsWith(end))) return true;
    const name = file.name.toLowerCase();
    const dot = name.lastIndexOf(".");
    if (dot > 0 && readable.suffixes.includes(name.slice(dot))) return true;
    return readable.mimeBeginnings.some((start) => type.startsWith(start));
  }
  function refusal(file) {
    if (!canRead(file)) return uploadForm.dataset.unreadable.replace("{name}", file.name);
    if (file.size === 0) return uploadForm.dataset.empty.replace("{name}", file.name);
    return "";
  }
  function showRefusals(reasons) {
    const list = document.createElement("ul");
    list.className = "upload-errors";
    list.setAttribute("role", "alert");
    reasons.forEach(function (reason) {
      const item = document.createElement("li");
      item.className = "error";
      item.textContent = reason;
      list.append(item);
    });
    document.getElementById("attachments").append(list);
  }

  if (uploadForm && picker) {
    // An upload's refusal (too large, too many, no file) is an HTML fragment to show. The
    // event fires on the target (#attachments, outside the form): match the request's element.
    document.body.addEventListener("htmx:beforeSwap", function (evt) {
      if (evt.detail.elt !== uploadForm && evt.detail.requestConfig?.elt !== uploadForm) return;
      if ([400, 413, 429].includes(evt.detail.xhr.status)) {
        evt.detail.shouldSwap = true;
        evt.detail.isError = false;
      }
    });
    // Sent (or refused): the picker empties, so choosing the same file again uploads it again.
    uploadForm.addEventListener("htmx:afterRequest", function () { picker.value = ""; });
    // What would be refused is not sent: a file the readers cannot read or an empty one is
    // said at once (the others go); files past the size limit are not sent at all (the server
    // would answer 413 before reading them, but a browser still sending may report a reset
    // connection instead).
    uploadForm.addEventListener("htmx:confirm", function (evt) {
      if (evt.detail.elt !== uploadForm) return;
      // A new attempt: the last one's refusal no longer holds.
      document.querySelectorAll("#attachments .upload-errors").forEach((list) => list.remove());
      const files = Array.from(picker.files);
      const reasons = files.map(refusal).filter(Boolean);
      const taken = files.filter((file) => !refusal(file));
      const limit = Number(uploadForm.dataset.maxBytes || 0);
      if (limit && taken.reduce((sum, file) => sum + file.size, 0) > limit) {
        evt.preventDefault();
        showRefusals([...reasons, uploadForm.dataset.tooLarge]);
        picker.value = "";
        return;
      }
      if (!reasons.length) return;
      evt.preventDefault();
      showRefusals(reasons);
      if (!taken.length) { picker.value = ""; return; }
      const kept = new DataTransfer();
      taken.forEach((file) => kept.items.add(file));
      picker.files = kept.files;
      evt.detail.issueRequest(true);
    });
  }

  const attach = document.getElementById("attach-button");
  if (attach && picker) attach.addEventListener("click", () => picker.click());

  // Drag and drop onto the chat uploads like the file picker does.
  const drop = document.getElementById("dropzone");
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

// Answers rendered as they stream: the same parser as the server's (markdown-it, of which
// markdown-it-py is the port, with the same options, images as links and task lists), the
// same allow-list (DOMPurify set up from the server's, #markdown-config), the same table
// alignment classes and heading levels. The stored answer's server render still replaces it
// when it is complete (with its code highlighted).
//
// A stream re-renders only its last block: once a block is followed by another, the parser
// can no longer change it, so it is rendered once and kept. That keeps a long answer linear,
// and each render waits for an animation frame (longer when a render is slow).
(function () {
  "use strict";

  const holder = document.getElementById("markdown-config");
  if (!holder || !window.markdownit || !window.DOMPurify) return;
  const config = JSON.parse(holder.textContent);

  // --- The parser ------------------------------------------------------------------------
  const md = window.markdownit("commonmark", { html: false }).enable("table");
  md.renderer.rules.image = function (tokens, idx, options, env, self) {
    const token = tokens[idx];
    const alt = self.renderInlineAsText(token.children || [], options, env) || "image";
    const escape = md.utils.escapeHtml;
    return '<a href="' + escape(token.attrGet("src") || "") + '">' + escape(alt) + "</a>";
  };
  md.core.ruler.after("inline", "github-tasklists", taskLists);
  md.core.ruler.push("aligned-tables", alignedTables);

  // GFM task lists as mdit-py-plugins' tasklists (label=True) writes them: a list item whose
  // text starts with [ ] or [x] gets a disabled checkbox, both in a label.
  function taskLists(state) {
    const tokens = state.tokens;
    for (let i = 2; i < tokens.length - 1; i++) {
      const inline = tokens[i];
      if (inline.type !== "inline" || tokens[i - 1].type !== "paragraph_open" ||
          tokens[i - 2].type !== "list_item_open" || !/^\[[ xX]][ \t\n\v\f\r]+/.test(inline.content)) continue;
      const box = new state.Token("html_inline", "", 0);
      const checked = /^\[[xX]] /.test(inline.content) ? 'checked="checked" ' : "";
      if (inline.content.startsWith("[ ] ") || checked) {
        box.content = '<input class="task-list-item-checkbox" ' + checked + 'disabled="disabled" type="checkbox">';
      }
      inline.children.unshift(box);
      inline.children[1].content = inline.children[1].content.slice(3);
      inline.content = inline.content.slice(3);
      const open = new state.Token("html_inline", "", 0);
      open.content = "<label>";
      const close = new state.Token("html_inline", "", 0);
      close.content = "</label>";
      inline.children.unshift(open);
      inline.children.push(close);
      tokens[i - 2].attrSet("class", "task-list-item");
      const level = tokens[i - 2].level - 1;
      for (let j = i - 3; j >= 0; j--) {
        if (tokens[j].level === level) { tokens[j].attrSet("class", "contains-task-list"); break; }
      }
    }
  }

  // A table column's alignment as a class (align-right), as the server writes it once it has
  // sanitised: the CSP allows no style attribute, not even in the sanitiser's own document.
  const ALIGNED = new Set(["td", "th"]);
  function alignedTables(state) {
    state.tokens.forEach(function (token) {
      if (!ALIGNED.has(token.tag) || token.nesting !== 1 || token.attrGet("style") === null) return;
      const align = /^text-align:(left|center|right)$/.exec(token.attrGet("style"));
      token.attrs = token.attrs.filter(([name]) => name !== "style");
      if (align) token.attrSet("class", "align-" + align[1]);
    });
  }

  // --- The sanitiser: the server's allow-list, tag by tag ----------------------------------
  const attributes = config.attributes;
  const classes = config.classes;
  const forced = config.forced;
  const allAttributes = new Set(["class"]);
  Object.values(attributes).forEach((names) => names.forEach((name) => allAttributes.add(name)));
  Object.values(forced).forEach((values) => Object.keys(values).forEach((name) => allAttributes.add(name)));
  const schemes = config.urlSchemes.map((s) => s.replace(/[^a-z]/g, "")).join("|");
  const purify = window.DOMPurify;
  const purifyConfig = {
    ALLOWED_TAGS: config.tags,
    ALLOWED_ATTR: Array.from(allAttributes),
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    // The schemes allowed, or a relative URL (as the server's sanitiser lets through).
    ALLOWED_URI_REGEXP: new RegExp("^(?:(?:" + schemes + "):|[^a-z]|[a-z+.\\-]+(?:[^a-z+.\\-:]|$))", "i"),
    RETURN_DOM_FRAGMENT: true,
  };
  purify.addHook("uponSanitizeAttribute", function (node, data) {
    const tag = node.nodeName.toLowerCase();
    if (data.attrName === "class" && ALIGNED.has(tag) && /^align-(left|center|right)$/.test(data.attrValue)) {
      data.forceKeepAttr = true; // a table column's alignment (alignedTables)
    } else if (data.attrName === "class") {
      // As the server's sanitiser: only the listed classes stay (an empty attribute where
      // the tag may have classes but none of these), on the tags that may have any.
      const allowed = classes[tag];
      if (!allowed) { data.keepAttr = false; return; }
      data.attrValue = data.attrValue.split(/\s+/).filter((name) => allowed.includes(name)).join(" ");
      data.forceKeepAttr = true;
    } else if (!(attributes[tag] || []).includes(data.attrName) && !(forced[tag] || {})[data.attrName]) {
      data.keepAttr = false;
    } else if (data.attrName === "style") {
      const kept = data.attrValue.split(";").map((part) => part.trim())
        .filter((part) => config.styleProperties.includes(part.split(":")[0].trim().toLowerCase()));
      data.attrValue = kept.join(";");
    }
  });
  purify.addHook("afterSanitizeAttributes", function (node) {
    const tag = node.nodeName.toLowerCase();
    Object.entries(forced[tag] || {}).forEach(([name, value]) => node.setAttribute(name, value));
    if (tag === "a") node.setAttribute("rel", config.linkRel);
  });

  // --- As the page shows it ------------------------------------------------------------------
  // Headings under the page's (the answer's top level becomes config.topHeading).
  function shiftHeadings(root, shift) {
    if (!shift) return;
    root.querySelectorAll("h1, h2, h3, h4, h5, h6").forEach(function (heading) {
      const level = Math.min(Number(heading.tagName[1]) + shift, 6);
      const moved = document.createElement("h" + level);
      Array.from(heading.attributes).forEach((a) => moved.setAttribute(a.name, a.value));
      moved.append(...heading.childNodes);
      heading.replaceWith(moved);
    });
  }
  function topLevel(tokens) {
    let top = 7;
    tokens.forEach(function (token) {
      if (token.type === "heading_open") top = Math.min(top, Number(token.tag[1]));
    });
    return top;
  }
  // Markdown as the page shows it, as nodes; `top` is the answer's top heading level.
  function fragment(tokens, top) {
    const html = md.renderer.render(tokens, md.options, {});
    const nodes = purify.sanitize(html, purifyConfig);
    shiftHeadings(nodes, top < 7 ? config.topHeading - top : 0);
    return nodes;
  }
  function normalise(text) {
    return text.replace(/\r\n?/g, "\n");
  }

  // One streamed answer: append() each piece as it comes; it is drawn at the next animation
  // frame.
  function Stream(target, drawn) {
    this.target = target;
    this.drawn = drawn || function () {}; // called after each draw
    this.text = "";
    this.held = ""; // a last "\r", until the next piece says whether "\n" follows it
    this.frozenAt = 0; // the text before this is rendered for good
    this.frozenTop = 7; // the top heading level in it
    this.shownTop = 7; // the top heading level its headings were placed by
    this.tail = []; // the nodes of the last block(s), re-rendered
    this.pending = false;
    this.notBefore = 0;
  }
  Stream.prototype.append = function (piece) {
    let more = this.held + piece;
    this.held = more.endsWith("\r") ? "\r" : "";
    if (this.held) more = more.slice(0, -1);
    this.text += normalise(more); // only the piece: an answer's length costs nothing here
    this.schedule();
  };
  Stream.prototype.schedule = function () {
    if (this.pending) return;
    this.pending = true;
    const stream = this;
    requestAnimationFrame(function frame(now) {
      if (stream.stopped) return;
      if (now < stream.notBefore) { requestAnimationFrame(frame); return; }
      stream.pending = false;
      const started = performance.now();
      stream.draw();
      stream.drawn();
      // A slow render (a huge last block) leaves a few frames to the rest of the page.
      stream.notBefore = now + Math.min(1000, 4 * (performance.now() - started));
    });
  };
  Stream.prototype.draw = function () {
    let rest = this.text.slice(this.frozenAt);
    let tokens = md.parse(rest, {});
    const starts = tokens.filter((t) => t.level === 0 && t.map && t.nesting !== -1).map((t) => t.map[0]);
    if (starts.length > 1) {
      // Every block but the last is complete: render it once, and keep it.
      const cut = lineOffset(rest, starts[starts.length - 1]);
      const done = md.parse(rest.slice(0, cut), {});
      this.frozenTop = Math.min(this.frozenTop, topLevel(done));
      this.frozenAt += cut;
      this.clearTail();
      this.target.append(fragment(done, this.shownTop));
      rest = rest.slice(cut);
      tokens = md.parse(rest, {});
    }
    const top = Math.min(this.frozenTop, topLevel(tokens));
    if (top !== this.shownTop) {
      // A heading above all before it: the kept blocks' headings move (rare: at most five
      // times an answer), as the server places them by the answer's top level.
      this.shownTop = top;
      this.clearTail();
      this.target.replaceChildren(fragment(md.parse(this.text.slice(0, this.frozenAt), {}), top));
    }
    this.clearTail();
    const nodes = fragment(tokens, top);
    this.tail = Array.from(nodes.childNodes);
    this.target.append(nodes);
  };
  /** Draws no more (its answer is written again from the start, by a new view). */
  Stream.prototype.stop = function () { this.stopped = true; };
  Stream.prototype.clearTail = function () {
    this.tail.forEach((node) => node.remove());
    this.tail = [];
  };
  function lineOffset(text, line) {
    let at = 0;
    for (let n = 0; n < line; n++) at = text.indexOf("\n", at) + 1;
    return at;
  }

  window.PowerOnMarkdown = {
    /** Markdown as the page shows it (sanitised), as an HTML string. */
    render: function (text) {
      const tokens = md.parse(normalise(text), {});
      const box = document.createElement("div");
      box.append(fragment(tokens, topLevel(tokens)));
      return box.innerHTML;
    },
    /** A view that draws the streamed text of an answer into `target` (then calls `drawn`). */
    stream: function (target, drawn) { return new Stream(target, drawn); },
  };
})();

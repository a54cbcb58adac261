// A small, safe Markdown renderer for model output: headings, paragraphs, bold, italic,
// strikethrough, inline code, fenced code, block quotes, lists (nested, with task boxes),
// tables, rules and links. It builds DOM nodes with createElement and textContent only; no
// string ever becomes HTML, so text like <img onerror=…> or <script> stays text. Links are
// made only for http(s) URLs; anything else is shown as its source text.
"use strict";
(() => {
  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;
  const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
  const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const QUOTE = /^ {0,3}>\s?(.*)$/;
  const TABLE_SEP = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
  const SAFE_URL = /^https?:\/\/[^\s<>"']+$/i;

  function node(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function link(url, children) {
    if (!SAFE_URL.test(url)) return null;
    const a = document.createElement("a");
    a.href = url;
    if (a.protocol !== "http:" && a.protocol !== "https:") return null;
    a.rel = "noopener noreferrer nofollow";
    a.target = "_blank";
    for (const c of children) a.appendChild(c);
    return a;
  }

  // The index of `marker` closing a span opened before `from`, or -1.
  function closing(text, marker, from) {
    let i = from;
    while (true) {
      i = text.indexOf(marker, i);
      if (i < 0) return -1;
      if (text[i - 1] !== "\\" && i > from && text[i - 1] !== " ") return i;
      i += 1;
    }
  }

  // The end of a `(url)` starting at `open`, allowing one level of parentheses in the URL.
  function urlEnd(text, open) {
    let depth = 0;
    for (let i = open; i < text.length; i++) {
      const c = text[i];
      if (c === "(") depth++;
      else if (c === ")") { depth--; if (depth === 0) return i; }
      else if (c === " " || c === "\n") return -1;
    }
    return -1;
  }

  function inline(text) {
    const out = [];
    let plain = "";
    const flush = () => { if (plain) { out.push(document.createTextNode(plain)); plain = ""; } };
    const push = (n) => { flush(); out.push(n); };
    let i = 0;
    while (i < text.length) {
      const c = text[i];
      const rest = text.slice(i);
      if (c === "\\" && i + 1 < text.length && /[\\`*_{}[\]()#+\-.!~|<>]/.test(text[i + 1])) {
        plain += text[i + 1];
        i += 2;
        continue;
      }
      if (c === "`") {
        const run = /^`+/.exec(rest)[0];
        const end = text.indexOf(run, i + run.length);
        if (end > 0) {
          push(node("code", "", text.slice(i + run.length, end).replace(/^ (.+) $/, "$1")));
          i = end + run.length;
          continue;
        }
        plain += run;
        i += run.length;
        continue;
      }
      // Underscores never open or close inside a word (snake_case, __dunder__ names).
      if ((rest.startsWith("**") || (rest.startsWith("__") && !/\w/.test(text[i - 1] || "")))
          && text[i + 2] && text[i + 2] !== " ") {
        let end = closing(text, rest.slice(0, 2), i + 2);
        while (c === "_" && end > 0 && /\w/.test(text[end + 2] || "")) end = closing(text, "__", end + 2);
        if (end > 0) {
          const strong = node("strong");
          for (const n of inline(text.slice(i + 2, end))) strong.appendChild(n);
          push(strong);
          i = end + 2;
          continue;
        }
      }
      if (rest.startsWith("~~") && text[i + 2] && text[i + 2] !== " ") {
        const end = closing(text, "~~", i + 2);
        if (end > 0) {
          const del = node("del");
          for (const n of inline(text.slice(i + 2, end))) del.appendChild(n);
          push(del);
          i = end + 2;
          continue;
        }
      }
      if ((c === "*" || c === "_") && text[i + 1] && text[i + 1] !== " " && text[i + 1] !== c
          && !(c === "_" && /\w/.test(text[i - 1] || ""))) {
        let end = closing(text, c, i + 1);
        while (end > 0 && (text[end + 1] === c || (c === "_" && /\w/.test(text[end + 1] || "")))) {
          end = closing(text, c, end + 2);
        }
        if (end > 0) {
          const em = node("em");
          for (const n of inline(text.slice(i + 1, end))) em.appendChild(n);
          push(em);
          i = end + 1;
          continue;
        }
      }
      if (c === "[" || (c === "!" && text[i + 1] === "[")) {
        const image = c === "!";
        const open = i + (image ? 1 : 0);
        const close = text.indexOf("](", open);
        const end = close > 0 ? urlEnd(text, close + 1) : -1;
        if (close > 0 && end > 0 && !text.slice(open + 1, close).includes("\n")) {
          const label = text.slice(open + 1, close);
          const url = text.slice(close + 2, end).trim();
          // Images are never loaded: they become a link to the image.
          const children = image ? [document.createTextNode("image: " + (label || url))] : inline(label);
          const a = link(url, children);
          if (a) {
            push(a);
          } else {
            plain += text.slice(i, end + 1);
          }
          i = end + 1;
          continue;
        }
      }
      if ((c === "h" || c === "H") && /^https?:\/\//i.test(rest) && !/\w/.test(text[i - 1] || "")) {
        let url = /^[^\s<>"']+/.exec(rest)[0];
        url = url.replace(/[.,;:!?)\]]+$/, "");
        const a = link(url, [document.createTextNode(url)]);
        if (a) {
          push(a);
          i += url.length;
          continue;
        }
      }
      plain += c;
      i += 1;
    }
    flush();
    return out;
  }

  function appendInline(parent, text) {
    const lines = text.split("\n");
    lines.forEach((line, n) => {
      if (n > 0) parent.appendChild(document.createElement("br"));
      for (const c of inline(line)) parent.appendChild(c);
    });
    return parent;
  }

  function cells(line) {
    let s = line.trim();
    if (s.startsWith("|")) s = s.slice(1);
    if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
    return s.split(/(?<!\\)\|/).map((c) => c.trim());
  }

  function startsBlock(line, next) {
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || ITEM.test(line)
      || QUOTE.test(line) || (line.includes("|") && next !== undefined && TABLE_SEP.test(next));
  }

  function list(lines, start, parent) {
    const first = ITEM.exec(lines[start]);
    const indent = first[1].length;
    const ordered = /\d/.test(first[2]);
    const el = node(ordered ? "ol" : "ul");
    if (ordered && parseInt(first[2], 10) !== 1) el.start = parseInt(first[2], 10);
    let i = start;
    while (i < lines.length) {
      const m = ITEM.exec(lines[i]);
      if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
      const li = node("li");
      let body = m[3];
      const task = /^\[([ xX])\]\s+(.*)$/.exec(body);
      if (task) {
        li.className = "task";
        li.appendChild(node("span", "box" + (task[1] === " " ? "" : " done"), task[1] === " " ? "☐" : "☑"));
        body = task[2];
      }
      const own = [body];
      i++;
      // Continuation lines: indented deeper than the marker, or blank lines inside the item.
      while (i < lines.length) {
        const line = lines[i];
        const deeper = line.length - line.trimStart().length > indent;
        if (line.trim() === "") {
          if (i + 1 < lines.length && lines[i + 1].trim() !== "" &&
              lines[i + 1].length - lines[i + 1].trimStart().length > indent) { own.push(""); i++; continue; }
          break;
        }
        if (!deeper) break;
        own.push(line.slice(Math.min(indent + 2, line.length - line.trimStart().length)));
        i++;
      }
      const head = [];
      let k = 0;
      while (k < own.length && own[k].trim() !== "" && !(k > 0 && startsBlock(own[k], own[k + 1]))) head.push(own[k++]);
      appendInline(li, head.join("\n"));
      if (k < own.length) blocks(own.slice(k), li);
      el.appendChild(li);
      while (i < lines.length && lines[i].trim() === "" && i + 1 < lines.length && ITEM.test(lines[i + 1])
             && ITEM.exec(lines[i + 1])[1].length === indent) i++;
    }
    parent.appendChild(el);
    return i;
  }

  function blocks(lines, parent) {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (line.trim() === "") { i++; continue; }
      let m;
      if ((m = FENCE.exec(line))) {
        const fence = m[1];
        const body = [];
        i++;
        while (i < lines.length && !(lines[i].trim().startsWith(fence[0].repeat(fence.length)) && lines[i].trim().replace(new RegExp("^\\" + fence[0] + "+"), "").trim() === "")) {
          body.push(lines[i]);
          i++;
        }
        i++;
        const pre = node("pre", "code");
        if (m[2]) {
          pre.appendChild(node("span", "lang", m[2]));
        }
        const code = node("code", "", body.join("\n"));
        if (m[2]) code.dataset.lang = m[2];
        pre.appendChild(code);
        parent.appendChild(pre);
        continue;
      }
      if ((m = HEADING.exec(line))) {
        parent.appendChild(appendInline(node("h" + m[1].length), m[2]));
        i++;
        continue;
      }
      if (RULE.test(line)) {
        parent.appendChild(node("hr"));
        i++;
        continue;
      }
      if (ITEM.test(line)) {
        i = list(lines, i, parent);
        continue;
      }
      if (QUOTE.test(line)) {
        const inner = [];
        while (i < lines.length && (m = QUOTE.exec(lines[i]))) { inner.push(m[1]); i++; }
        const quote = node("blockquote");
        blocks(inner, quote);
        parent.appendChild(quote);
        continue;
      }
      if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1])) {
        const table = node("table");
        const head = node("thead");
        const row = node("tr");
        for (const c of cells(line)) row.appendChild(appendInline(node("th"), c));
        head.appendChild(row);
        table.appendChild(head);
        const bodyEl = node("tbody");
        i += 2;
        while (i < lines.length && lines[i].includes("|") && lines[i].trim() !== "") {
          const tr = node("tr");
          for (const c of cells(lines[i])) tr.appendChild(appendInline(node("td"), c));
          bodyEl.appendChild(tr);
          i++;
        }
        table.appendChild(bodyEl);
        const wrap = node("div", "table");
        wrap.appendChild(table);
        parent.appendChild(wrap);
        continue;
      }
      const para = [line];
      i++;
      while (i < lines.length && lines[i].trim() !== "" && !startsBlock(lines[i], lines[i + 1])) {
        para.push(lines[i]);
        i++;
      }
      parent.appendChild(appendInline(node("p"), para.join("\n")));
    }
    return parent;
  }

  // Render `text` into a new <div class="md">.
  function render(text) {
    return blocks(String(text).replace(/\r\n?/g, "\n").split("\n"), node("div", "md"));
  }

  window.KimiMarkdown = { render };
})();

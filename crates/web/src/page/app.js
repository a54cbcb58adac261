// The kimi-rs web page: sessions on the left, the transcript (Markdown answers, tool cards
// with diffs, approvals and questions answered in place), the session's todo list, goal and
// plan on the right. It speaks the REST API under /api/v1 and the WebSocket /api/v1/ws (see
// README "Web API"). Everything a model or tool wrote is put into the page as text nodes or
// through KimiMarkdown, which never creates HTML from strings.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  // The token comes from the URL kimi-rs web printed (#token=…, read once and then removed
  // from the address bar and history), from an earlier visit (this page's own storage), or
  // from the form. kimi-rs web opens this page without it: a browser's command line is
  // visible to other users of the machine.
  const TOKEN_KEY = "kimi-rs.web.token";
  function stored(value) {
    try {
      if (value === undefined) return localStorage.getItem(TOKEN_KEY) || "";
      if (value) localStorage.setItem(TOKEN_KEY, value); else localStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage disabled: the token lasts as long as the page */ }
    return value || "";
  }
  // `#session=<id>` (the terminal UI's /web) opens that session once connected.
  const fragment = new URLSearchParams(location.hash.slice(1));
  let wanted = fragment.get("session") || "";
  let token = fragment.get("token") || "";
  if (token) stored(token); else token = stored();
  if (fragment.has("token") || wanted) history.replaceState(null, "", location.pathname + location.search);

  let current = null;      // the open session's id
  let socket = null;
  let nextId = 1;
  let busy = false;
  let cards = new Map();   // tool_call_id → card
  let answer = null;       // the assistant message being streamed: {box, text, queued}
  let thinking = null;     // the thinking block being streamed
  let searchTimer = null;
  let statusTimer = null;

  function conn(text, on) {
    $("conn").textContent = text;
    $("conn").classList.toggle("on", !!on);
  }

  function askForToken(why) {
    token = stored("");
    if (socket) socket.close();
    $("login-why").textContent = why;
    $("login").hidden = false;
    $("token").focus();
  }

  async function api(method, path, body) {
    if (!token) throw new Error("no token yet: paste it on the left");
    const res = await fetch("/api/v1" + path, {
      method,
      headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status === 401) askForToken("The server did not accept the token (it may have been rotated).");
    const envelope = await res.json();
    if (envelope.code !== 0) throw new Error(envelope.msg + " (" + envelope.code + ")");
    return envelope.data;
  }

  // ---- transcript -------------------------------------------------------------------

  function atBottom() {
    const log = $("log");
    return log.scrollHeight - log.scrollTop - log.clientHeight < 80;
  }
  function append(node) {
    const stick = atBottom();
    $("log").appendChild(node);
    if (stick) $("log").scrollTop = $("log").scrollHeight;
    return node;
  }
  function say(cls, text) { return append(el("div", "msg " + cls, text)); }

  function userMessage(text) {
    endStream();
    return say("user", text);
  }

  function assistantBox() {
    const box = el("div", "msg assistant");
    append(box);
    return box;
  }

  function renderAnswer() {
    if (!answer) return;
    answer.queued = false;
    const stick = atBottom();
    answer.box.replaceChildren(window.KimiMarkdown.render(answer.text));
    if (stick) $("log").scrollTop = $("log").scrollHeight;
  }

  function onDelta(text) {
    if (thinking) thinking = null;
    if (!answer) answer = { box: assistantBox(), text: "", queued: false };
    answer.text += text;
    if (!answer.queued) {
      answer.queued = true;
      requestAnimationFrame(renderAnswer);
    }
  }

  function onThinking(text) {
    if (!thinking) {
      const details = el("details", "msg thinking");
      details.appendChild(el("summary", "", "Thinking"));
      thinking = el("div");
      details.appendChild(thinking);
      append(details);
    }
    thinking.textContent += text;
  }

  function endStream() {
    if (answer && answer.queued) renderAnswer();
    answer = null;
    thinking = null;
  }

  function finalAnswer(text) {
    if (answer) {
      answer.text = text;
      renderAnswer();
    } else if (text && text.trim()) {
      answer = { box: assistantBox(), text, queued: false };
      renderAnswer();
    }
    answer = null;
    thinking = null;
  }

  // ---- tool cards --------------------------------------------------------------------

  function diffView(lines) {
    const pre = el("pre", "diff");
    for (const [kind, text] of lines) pre.appendChild(el("span", "line " + kind, text));
    return pre;
  }

  function unifiedDiff(text) {
    return diffView(String(text).split("\n").map((line) => {
      if (line.startsWith("+++") || line.startsWith("---")) return ["hunk", line];
      if (line.startsWith("@@")) return ["hunk", line];
      if (line.startsWith("+")) return ["add", line];
      if (line.startsWith("-")) return ["del", line];
      return ["ctx", line];
    }));
  }

  function target(name, args) {
    if (!args || typeof args !== "object") return "";
    return args.path || args.file_path || args.command || args.pattern || args.url || args.query
      || args.description || "";
  }

  // What the call is about to do: a diff for Edit and Write, the command for Bash, else the
  // arguments.
  function argsView(name, args) {
    if (name === "Edit" && args && typeof args.old_string === "string") {
      const lines = [];
      for (const l of args.old_string.split("\n")) lines.push(["del", "-" + l]);
      for (const l of String(args.new_string || "").split("\n")) lines.push(["add", "+" + l]);
      return diffView(lines);
    }
    if (name === "Write" && args && typeof args.content === "string") {
      return diffView(args.content.replace(/\n$/, "").split("\n").map((l) => ["add", "+" + l]));
    }
    if (name === "Bash" && args && typeof args.command === "string") {
      return el("pre", "command", "$ " + args.command);
    }
    if (args && typeof args === "object" && Object.keys(args).length === 0) return null;
    return el("pre", "args", typeof args === "string" ? args : JSON.stringify(args, null, 2));
  }

  function setBadge(card, kind, text) {
    card.badge.className = "badge " + kind;
    card.badge.textContent = text;
  }

  function toolCard(id, name, args) {
    endStream();
    if (cards.has(id)) return cards.get(id);
    const details = el("details", "tool");
    details.dataset.tool = name;
    const summary = el("summary");
    summary.appendChild(el("span", "name", name));
    summary.appendChild(el("span", "target", target(name, args)));
    const badge = el("span", "badge running", "running");
    summary.appendChild(badge);
    details.appendChild(summary);
    const body = el("div", "body");
    const view = argsView(name, args);
    if (view) body.appendChild(view);
    details.appendChild(body);
    // Diffs stay in view; other cards open while they run.
    details.open = name === "Edit" || name === "Write";
    const card = { details, body, badge, name, view, output: null };
    cards.set(id, card);
    append(details);
    return card;
  }

  // The engine's diff against the file as it is (`tool.diff`): it replaces the guess made
  // from the arguments; an empty one means the call leaves the file unchanged.
  function toolDiff(id, diff) {
    const card = cards.get(id);
    if (!card) return;
    const view = diff ? unifiedDiff(diff.replace(/\n$/, "")) : el("pre", "diff", "(no changes: the content is the same)");
    if (card.view) card.view.replaceWith(view); else card.body.prepend(view);
    card.view = view;
  }

  function toolProgress(id, text) {
    const card = cards.get(id);
    if (!card) return;
    if (!card.output) {
      card.output = el("pre", "output");
      card.body.appendChild(card.output);
      card.details.open = true;
    }
    card.output.textContent += text;
  }

  function toolResult(id, output, isError) {
    const card = cards.get(id) || toolCard(id, "tool", {});
    if (!card.output) {
      card.output = el("pre", "output");
      card.body.appendChild(card.output);
    }
    card.output.textContent = output || "";
    card.output.classList.toggle("error", !!isError);
    setBadge(card, isError ? "failed" : "done", isError ? "failed" : "done");
    if (!isError && card.name !== "Edit" && card.name !== "Write") card.details.open = false;
    if (["TodoList", "EnterPlanMode", "ExitPlanMode", "SetGoal", "UpdateGoal"].includes(card.name)) scheduleStatus();
  }

  // ---- approvals and questions -------------------------------------------------------

  function approval(a) {
    endStream();
    const box = el("div", "ask approval");
    box.id = "approval-" + a.approval_id;
    box.appendChild(el("div", "what", a.tool_name + " wants to " + a.action));
    if (a.summary) box.appendChild(el("div", "summary", a.summary));
    if (a.detail) box.appendChild(el("pre", "detail", a.detail));
    if (a.diff) box.appendChild(unifiedDiff(a.diff));
    if (a.danger) box.appendChild(el("div", "danger", "⚠ " + a.danger));
    const row = el("div", "row");
    const decide = async (body) => {
      for (const b of row.querySelectorAll("button")) b.disabled = true;
      try {
        await api("POST", "/sessions/" + current + "/approvals/" + a.approval_id, body);
      } catch (e) {
        for (const b of row.querySelectorAll("button")) b.disabled = false;
        say("error", e.message);
      }
    };
    const button = (label, cls, decision, body) => {
      const b = el("button", cls, label);
      b.type = "button";
      b.dataset.decision = decision;
      b.onclick = () => decide(body());
      row.appendChild(b);
    };
    if (a.options && a.options.length) {
      for (const opt of a.options) {
        const b = el("button", "primary", opt.label);
        b.type = "button";
        b.title = opt.description || "";
        b.dataset.decision = "approved";
        b.onclick = () => decide({ decision: "approved", selected_label: opt.label });
        row.appendChild(b);
      }
    } else {
      button("Approve", "primary", "approved", () => ({ decision: "approved" }));
      button("Approve for this session", "", "approved-session", () => ({ decision: "approved", scope: "session" }));
    }
    const feedback = el("input");
    feedback.placeholder = "Why not? (optional, the model reads it)";
    button("Reject", "danger", "rejected", () => ({ decision: "rejected", feedback: feedback.value }));
    row.appendChild(feedback);
    box.appendChild(row);
    const card = cards.get(a.tool_call_id);
    if (card) {
      // The approval's diff is against the file as it is now: it replaces the card's own.
      if (a.diff && card.view && card.view.classList.contains("diff")) {
        card.view.remove();
        card.view = null;
      }
      setBadge(card, "waiting", "awaiting approval");
      card.details.open = true;
      card.body.appendChild(box);
      card.details.scrollIntoView({ block: "nearest" });
    } else {
      append(box);
    }
  }

  function resolved(boxId, text, ok) {
    const box = $(boxId);
    if (!box) return;
    const row = box.querySelector(".row") || box.querySelector(".actions");
    if (row) row.remove();
    for (const r of box.querySelectorAll(".q .row")) r.remove();
    box.appendChild(el("div", "outcome", text));
    box.classList.add(ok ? "ok" : "no");
  }

  function approvalResolved(p) {
    resolved("approval-" + p.approval_id, p.decision === "approved" ? "✓ Approved" : "✗ " + p.decision, p.decision === "approved");
    for (const card of cards.values()) {
      if (card.body.contains($("approval-" + p.approval_id))) {
        if (p.decision === "approved") setBadge(card, "running", "running");
        else setBadge(card, "rejected", p.decision);
      }
    }
  }

  // AskUserQuestion: one block per question with a toggle per option and an "other" field;
  // the answers of all questions of a request go back together.
  function question(q) {
    endStream();
    const box = el("div", "ask question");
    box.id = "question-" + q.question_id;
    const collect = [];
    for (const item of q.questions) {
      const part = el("div", "q");
      part.appendChild(el("div", "what", (item.header ? item.header + ": " : "") + item.question));
      const row = el("div", "row");
      const chosen = [];
      for (const opt of item.options) {
        const b = el("button", "", opt.label);
        b.type = "button";
        b.title = opt.description || "";
        b.setAttribute("aria-pressed", "false");
        b.onclick = () => {
          const at = chosen.indexOf(opt.label);
          if (at >= 0) {
            chosen.splice(at, 1);
          } else {
            if (!item.multi_select) chosen.length = 0;
            chosen.push(opt.label);
          }
          for (const other of row.querySelectorAll("button")) {
            other.setAttribute("aria-pressed", String(chosen.includes(other.textContent)));
          }
        };
        row.appendChild(b);
      }
      const other = el("input");
      other.placeholder = "Other…";
      row.appendChild(other);
      part.appendChild(row);
      box.appendChild(part);
      collect.push(() => {
        const text = other.value.trim();
        if (text) return { kind: item.multi_select ? "multi_with_other" : "other", option_ids: item.multi_select ? chosen.slice() : [], other: [text] };
        if (item.multi_select) return chosen.slice();
        return chosen.length ? chosen[0] : null;
      });
    }
    const actions = el("div", "actions row");
    const submit = el("button", "primary", "Answer");
    submit.type = "button";
    submit.onclick = async () => {
      const answers = {};
      q.questions.forEach((item, i) => { answers[item.id || "q" + i] = collect[i](); });
      try { await api("POST", "/sessions/" + current + "/questions/" + q.question_id, { answers }); }
      catch (e) { say("error", e.message); }
    };
    const dismiss = el("button", "", "Dismiss");
    dismiss.type = "button";
    dismiss.onclick = async () => {
      try { await api("POST", "/sessions/" + current + "/questions/" + q.question_id + ":dismiss", {}); }
      catch (e) { say("error", e.message); }
    };
    actions.appendChild(submit);
    actions.appendChild(dismiss);
    box.appendChild(actions);
    append(box);
  }

  // ---- session state: chips, todo list, goal, plan -----------------------------------

  function chip(text, on, title) {
    const c = el("span", "chip" + (on ? " on" : ""), text);
    if (title) c.title = title;
    return c;
  }

  function scheduleStatus() {
    clearTimeout(statusTimer);
    statusTimer = setTimeout(refreshStatus, 150);
  }

  async function refreshStatus() {
    if (!current) return;
    const id = current;
    let s;
    try { s = await api("GET", "/sessions/" + id + "/status"); } catch (e) { return; }
    if (id !== current) return;
    setBusy(s.busy);
    const chips = $("chips");
    chips.replaceChildren();
    if (s.model) chips.appendChild(chip(s.model, false, "model"));
    chips.appendChild(chip("permission: " + s.permission, s.permission !== "manual"));
    chips.appendChild(chip(s.plan_mode ? "plan mode" : "plan off", s.plan_mode));
    if (s.swarm_mode) chips.appendChild(chip("swarm", true));
    if (s.max_context_tokens) {
      const pct = Math.round((s.context_tokens / s.max_context_tokens) * 100);
      chips.appendChild(chip("context " + pct + "%", false, s.context_tokens + " of " + s.max_context_tokens + " tokens"));
    }
    chips.dataset.plan = String(!!s.plan_mode);
    chips.dataset.swarm = String(!!s.swarm_mode);

    const todos = s.todos || [];
    $("todo-box").hidden = todos.length === 0;
    $("todos").replaceChildren(...todos.map((t) => {
      const li = el("li", t.status);
      li.appendChild(el("span", "", t.status === "done" ? "☑" : t.status === "in_progress" ? "◐" : "☐"));
      li.appendChild(el("span", "", t.title));
      return li;
    }));

    const goal = s.goal;
    $("goal-box").hidden = !goal;
    $("goal").replaceChildren();
    if (goal) {
      $("goal").appendChild(el("div", "", goal.objective));
      $("goal").appendChild(el("div", "muted small", goal.status + " · " + goal.turns_used + " turns · " + goal.tokens_used + " tokens"));
    }

    const planText = s.plan_text || "";
    $("plan-box").hidden = !s.plan_mode;
    $("plan").replaceChildren();
    if (s.plan_mode) {
      if (planText.trim()) $("plan").appendChild(window.KimiMarkdown.render(planText));
      else $("plan").appendChild(el("div", "muted small", "Plan mode is on; no plan written yet."));
    }
    $("panel").hidden = $("todo-box").hidden && $("goal-box").hidden && $("plan-box").hidden;
  }

  function setBusy(value) {
    busy = !!value;
    $("abort").disabled = !busy || !current;
  }

  // ---- sessions ----------------------------------------------------------------------

  function ago(iso) {
    if (!iso) return "";
    const s = (Date.now() - Date.parse(iso)) / 1000;
    if (s < 60) return "just now";
    if (s < 3600) return Math.floor(s / 60) + " min ago";
    if (s < 86400) return Math.floor(s / 3600) + " h ago";
    return new Date(iso).toLocaleDateString();
  }

  async function listSessions() {
    const q = $("search").value.trim();
    try {
      const data = await api("GET", "/sessions" + (q ? "?q=" + encodeURIComponent(q) : ""));
      const box = $("sessions");
      box.replaceChildren();
      if (!data.items.length) box.appendChild(el("div", "muted small", q ? "No session matches." : "No sessions yet."));
      for (const s of data.items) {
        const item = el("div", "session" + (s.id === current ? " current" : ""));
        item.dataset.id = s.id;
        item.title = s.id;
        const name = el("div", "name", s.title || "Untitled session");
        if (s.busy) name.prepend(el("span", "busy", "● "));
        item.appendChild(name);
        item.appendChild(el("div", "where", s.metadata.cwd + " · " + ago(s.updated_at)));
        item.onclick = () => open(s.id, s);
        box.appendChild(item);
        if (s.id === current) {
          $("session-title").textContent = s.title || "Untitled session";
          $("session-cwd").textContent = s.metadata.cwd;
        }
      }
    } catch (e) { conn(e.message); }
  }

  function partsText(content) {
    return content.filter((p) => p.type === "text").map((p) => p.text).join("");
  }

  function replay(m) {
    if (m.role === "user") {
      const text = partsText(m.content);
      if (text) userMessage(text);
      return;
    }
    for (const p of m.content) {
      if (p.type === "thinking" && p.thinking) { onThinking(p.thinking); thinking = null; }
      else if (p.type === "text" && p.text) finalAnswer(p.text);
      else if (p.type === "tool_use") toolCard(p.id, p.name, p.input);
      else if (p.type === "tool_result") {
        toolResult(p.tool_use_id, p.content.filter((c) => c.type === "text").map((c) => c.text).join(""), p.is_error);
      }
    }
  }

  async function open(id, summary) {
    current = id;
    cards = new Map();
    answer = null;
    thinking = null;
    $("log").replaceChildren();
    $("prompt").disabled = false;
    $("send").disabled = false;
    $("session-title").textContent = (summary && summary.title) || "Untitled session";
    $("session-cwd").textContent = summary ? summary.metadata.cwd : "";
    try {
      const page = await api("GET", "/sessions/" + id + "/messages?page_size=100");
      if (id !== current) return;
      if (page.has_more) say("notice", "Older messages are not shown.");
      for (const m of page.items.reverse()) replay(m);
      const pending = await api("GET", "/sessions/" + id + "/approvals?status=pending");
      for (const a of pending.items) approval(a);
      const asked = await api("GET", "/sessions/" + id + "/questions?status=pending");
      for (const q of asked.items) question(q);
    } catch (e) { say("error", e.message); }
    subscribe(id);
    refreshStatus();
    listSessions();
    $("log").scrollTop = $("log").scrollHeight;
    $("prompt").focus();
  }

  // ---- WebSocket ---------------------------------------------------------------------

  function connect() {
    // Not without a token, and not twice (a retry timer may still be pending).
    if (!token || (socket && socket.readyState <= WebSocket.OPEN)) return;
    socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/api/v1/ws",
      ["kimi-code.bearer." + token]);
    // After a reconnect the session is reloaded: events sent while the socket was down are
    // in the history.
    socket.onopen = () => { conn("online", true); if (current) open(current); };
    socket.onclose = () => { conn("offline, retrying…"); setTimeout(connect, 2000); };
    socket.onmessage = (e) => onFrame(JSON.parse(e.data));
  }

  function subscribe(id) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({ type: "subscribe", id: String(nextId++), payload: { session_ids: [id] } }));
    }
  }

  function onFrame(f) {
    if (f.type === "ack" && f.code !== 0) { say("error", f.msg); return; }
    if (f.type === "resync_required" && f.session_id === current) { open(current); return; }
    if (!f.session_id || f.session_id !== current) return;
    const p = f.payload || {};
    switch (f.type) {
      case "prompt.submitted": userMessage(partsText(p.content || [])); break;
      case "turn.started": setBusy(true); break;
      case "thinking.delta": onThinking(p.text); break;
      case "assistant.delta": onDelta(p.text); break;
      case "assistant.message": finalAnswer(p.text); break;
      case "tool.call.started": toolCard(p.tool_call_id, p.tool_name, p.arguments); break;
      case "tool.diff": toolDiff(p.tool_call_id, p.diff); break;
      case "tool.progress": toolProgress(p.tool_call_id, p.text); break;
      case "tool.result": toolResult(p.tool_call_id, p.output, p.is_error); break;
      case "event.approval.requested": approval(p); break;
      case "event.approval.resolved": approvalResolved(p); break;
      case "event.question.requested": question(p); break;
      case "event.question.answered": resolved("question-" + p.question_id, "✓ Answered", true); break;
      case "event.question.dismissed": resolved("question-" + p.question_id, "Dismissed", false); break;
      case "turn.step.retrying": say("warning", "The model request failed; retrying…"); break;
      case "compaction.started": say("notice", "Compacting the context…"); break;
      case "compaction.completed": say("notice", "Context compacted."); scheduleStatus(); break;
      case "context.undone": open(current); break;
      case "goal.updated": scheduleStatus(); break;
      case "flow.updated": say(p.update.state.kind === "stopped" ? "warning" : "notice", p.text); break;
      case "swarm_mode.updated": scheduleStatus(); break;
      case "turn.ended":
        endStream();
        setBusy(false);
        if (p.reason === "cancelled") say("notice", "Stopped.");
        if (p.error) say("error", p.error);
        scheduleStatus();
        listSessions();
        break;
      case "error": say("error", p.message); break;
      case "warning": say("warning", p.message); break;
    }
  }

  // ---- composer ----------------------------------------------------------------------

  async function send() {
    const text = $("prompt").value;
    if (!current || !text.trim()) return;
    try {
      await api("POST", "/sessions/" + current + "/prompts", { content: [{ type: "text", text }] });
      $("prompt").value = "";
    } catch (e) { say("error", e.message); }
  }

  $("composer").onsubmit = (e) => { e.preventDefault(); send(); };
  $("prompt").onkeydown = (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  };
  $("abort").onclick = () => current && api("POST", "/sessions/" + current + ":abort").catch((e) => say("error", e.message));
  $("search").oninput = () => { clearTimeout(searchTimer); searchTimer = setTimeout(listSessions, 200); };
  $("new-session").onsubmit = async (e) => {
    e.preventDefault();
    try {
      const s = await api("POST", "/sessions", { metadata: { cwd: $("cwd").value.trim() } });
      open(s.id, s);
    } catch (err) { say("error", err.message); }
  };
  $("login").onsubmit = (e) => {
    e.preventDefault();
    token = stored($("token").value.trim());
    if (!token) return;
    $("token").value = "";
    $("login").hidden = true;
    start();
  };

  async function start() {
    connect();
    listSessions();
    if (wanted) { open(wanted); wanted = ""; }
    try {
      const meta = await api("GET", "/meta");
      if (!$("cwd").value && meta.default_cwd) $("cwd").value = meta.default_cwd;
    } catch (e) { conn(e.message); }
  }

  if (token) start(); else askForToken("");
})();

// toolhall console: live call feed, approval queue and stats. Hand-written, no dependencies.
// Every value that comes from a tool call is put in the page as text (textContent / text nodes),
// never as HTML; the server's Content-Security-Policy forbids inline scripts besides.
"use strict";

(function () {
  const STATUSES = ["pending", "running", "ok", "error", "denied", "timeout", "cancelled"];
  const MAX_ROWS = 500;
  const LONG_LINES = 40;
  const LONG_CHARS = 6000;

  const state = {
    calls: new Map(),        // id -> summary
    approvals: new Map(),    // call_id -> request
    stats: null,
    filters: { session: "", tool: "", status: "" },
    offsetMs: 0,             // server clock minus ours, for deadlines
    fresh: new Set(),        // ids to flash once
    openId: null,
    source: null,
  };
  const csrf = document.querySelector('meta[name="toolhall-csrf"]').content;
  const $ = (id) => document.getElementById(id);

  // -- DOM helpers: text only ----------------------------------------------------------------------
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    if (props) {
      for (const [key, value] of Object.entries(props)) {
        if (value === null || value === undefined || value === false) continue;
        if (key === "class") node.className = value;
        else if (key === "text") node.textContent = String(value);
        else if (key === "on") for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
        else if (key === "css") Object.assign(node.style, value);  // CSSOM: allowed by the CSP, unlike style=""
        else if (key === "data") for (const [k, v] of Object.entries(value)) node.dataset[k] = String(v);
        else node.setAttribute(key, String(value));
      }
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const clear = (node) => { while (node.firstChild) node.removeChild(node.firstChild); };

  // -- formatting ----------------------------------------------------------------------------------
  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "";
    if (ms < 10) return ms.toFixed(1) + " ms";
    if (ms < 1000) return Math.round(ms) + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(2) + " s";
    return Math.floor(ms / 60000) + "m " + Math.round((ms % 60000) / 1000) + "s";
  }
  function fmtTime(iso) {
    if (!iso) return "";
    const d = new Date(iso);
    return d.toLocaleTimeString([], { hour12: false });
  }
  function fmtWhen(iso) {
    if (!iso) return "";
    return new Date(iso).toLocaleString([], { hour12: false });
  }
  const shortId = (id) => (id && id.length > 14 ? id.slice(0, 14) + "…" : id || "");
  const sessionLabel = (worker, id) => (worker ? worker + " · " + (id || "").slice(-6) : shortId(id));
  const statusClass = (s) => "status status-" + (STATUSES.includes(s) ? s : "unknown");
  function subjectText(call) {
    const subjects = call.subjects || [];
    if (subjects.length) return subjects[0] + (subjects.length > 1 ? "  +" + (subjects.length - 1) : "");
    return call.input_preview || "";
  }
  function pretty(value) {
    if (typeof value === "string") {
      const trimmed = value.trim();
      if ((trimmed.startsWith("{") || trimmed.startsWith("[")) && trimmed.length < 2000000) {
        try { return JSON.stringify(JSON.parse(trimmed), null, 2); } catch (e) { /* plain text */ }
      }
      return value;
    }
    return JSON.stringify(value, null, 2);
  }

  // A <pre> that shows the first lines of a long text and expands on demand.
  function textBlock(text, label) {
    const full = text === null || text === undefined ? "" : String(text);
    const lines = full.split("\n");
    const long = lines.length > LONG_LINES || full.length > LONG_CHARS;
    const head = long ? lines.slice(0, LONG_LINES).join("\n").slice(0, LONG_CHARS) : full;
    const pre = el("pre", { class: "block", "aria-label": label }, long ? head + "\n…" : full);
    if (!long) return pre;
    let open = false;
    const button = el("button", { class: "btn more", type: "button" });
    const setLabel = () => {
      button.textContent = open ? "Show less" : `Show all (${lines.length} lines, ${full.length} characters)`;
    };
    button.addEventListener("click", () => {
      open = !open;
      pre.textContent = open ? full : head + "\n…";
      setLabel();
    });
    setLabel();
    return el("div", null, pre, button);
  }

  // -- API -----------------------------------------------------------------------------------------
  async function api(path, options) {
    const response = await fetch(path, Object.assign({ credentials: "same-origin" }, options || {}));
    let body = null;
    try { body = await response.json(); } catch (e) { body = null; }
    if (response.status === 401) signedOut();
    return { status: response.status, body };
  }
  function signedOut() {
    const banner = $("banner");
    banner.hidden = false;
    banner.textContent = "Signed out: open the link toolhall serve printed (…/?token=…) to sign in again.";
    setConn("down", "signed out");
    if (state.source) state.source.close();
  }
  function setConn(kind, text) {
    const conn = $("conn");
    conn.dataset.state = kind;
    conn.textContent = text;
  }

  // -- live events ---------------------------------------------------------------------------------
  function connect() {
    const source = new EventSource("/console/api/events");
    state.source = source;
    source.addEventListener("snapshot", (e) => {
      const snap = JSON.parse(e.data);
      state.offsetMs = new Date(snap.server_time).getTime() - Date.now();
      state.approvals = new Map(snap.approvals.map((a) => [a.call_id, a]));
      for (const call of snap.calls) state.calls.set(call.id, call);
      state.stats = snap.stats;
      setConn("live", "live");
      $("banner").hidden = true;
      renderAll();
    });
    source.addEventListener("call", (e) => {
      const call = JSON.parse(e.data);
      if (!state.calls.has(call.id)) state.fresh.add(call.id);
      state.calls.set(call.id, call);
      if (state.openId === call.id) openDetail(call.id, true);
      schedule();
    });
    source.addEventListener("approval", (e) => {
      const request = JSON.parse(e.data);
      state.approvals.set(request.call_id, request);
      renderApprovals();
    });
    source.addEventListener("approval_done", (e) => {
      state.approvals.delete(JSON.parse(e.data).call_id);
      renderApprovals();
    });
    source.addEventListener("stats", (e) => { state.stats = JSON.parse(e.data); renderStats(); });
    source.addEventListener("store_error", (e) => {
      setConn("down", "store error: " + JSON.parse(e.data).message);
    });
    // Streams end every few seconds by design and the browser resumes them at once (with Last-Event-ID):
    // only a reconnection that takes a while is worth showing.
    let slow = null;
    source.onopen = () => {
      clearTimeout(slow);
      slow = null;
      setConn("live", "live");
    };
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        clearTimeout(slow);
        // The server refused the stream (signed out, or gone): check which, then retry.
        setConn("down", "reconnecting…");
        api("/console/api/stats").then((r) => {
          if (r.status !== 401) setTimeout(connect, 1000);
        }, () => setTimeout(connect, 2000));
      } else if (slow === null) {
        slow = setTimeout(() => setConn("connecting", "reconnecting…"), 1500);
      }
    };
  }

  let scheduled = false;
  function schedule() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => { scheduled = false; renderCalls(); renderFilters(); });
  }
  function renderAll() { renderApprovals(); renderCalls(); renderFilters(); renderStats(); }

  // -- call feed -----------------------------------------------------------------------------------
  function matches(call) {
    const f = state.filters;
    return (!f.session || call.session_id === f.session) && (!f.tool || call.tool === f.tool)
      && (!f.status || call.status === f.status);
  }
  function renderCalls() {
    const rows = [...state.calls.values()].filter(matches)
      .sort((a, b) => (a.started_at < b.started_at ? 1 : a.started_at > b.started_at ? -1 : 0))
      .slice(0, MAX_ROWS);
    const body = $("calls-body");
    clear(body);
    for (const call of rows) body.append(callRow(call));
    state.fresh.clear();
    $("calls-empty").hidden = rows.length > 0;
    $("calls-empty").textContent = state.calls.size ? "No calls match these filters." : "No calls yet. They appear here as the agent makes them.";
    trimCalls();
  }
  function callRow(call) {
    const status = el("span", { class: statusClass(call.status) }, call.status);
    const flags = [];
    if (call.truncated) flags.push(el("span", { class: "flag", title: "the model saw a truncated output" }, "truncated"));
    if (call.error_message && call.status !== "ok") status.title = call.error_message;
    const row = el("tr", {
      class: state.fresh.has(call.id) ? "fresh" : null,
      data: { id: call.id, status: call.status },
      tabindex: "0",
      on: {
        click: () => openDetail(call.id),
        keydown: (e) => { if (e.key === "Enter") openDetail(call.id); },
      },
    },
      el("td", { class: "time", title: fmtWhen(call.started_at) }, fmtTime(call.started_at)),
      el("td", { class: "tool" }, call.tool, call.parent_id ? el("span", { class: "flag", title: "nested call" }, "nested") : null),
      el("td", { class: "subject-cell", title: subjectText(call) }, subjectText(call)),
      el("td", null, status, flags),
      el("td", { class: "num" }, fmtMs(call.duration_ms)),
      el("td", { class: "session", title: call.session_id || "" }, sessionLabel(call.worker, call.session_id)),
    );
    return row;
  }
  function trimCalls() {
    // Keep memory bounded: the newest calls, plus whatever the current filters show.
    if (state.calls.size <= 4 * MAX_ROWS) return;
    const keep = [...state.calls.values()].sort((a, b) => (a.started_at < b.started_at ? 1 : -1)).slice(0, 2 * MAX_ROWS);
    state.calls = new Map(keep.map((c) => [c.id, c]));
  }
  function renderFilters() {
    const sessions = new Set(), tools = new Set();
    for (const call of state.calls.values()) {
      if (call.session_id) sessions.add(call.session_id);
      tools.add(call.tool);
    }
    if (state.stats) for (const s of state.stats.sessions) if (s.session_id !== "(no session)") sessions.add(s.session_id);
    fillSelect($("f-session"), [...sessions].sort(), state.filters.session, shortId);
    fillSelect($("f-tool"), [...tools].sort(), state.filters.tool, (t) => t);
  }
  function fillSelect(select, values, current, label) {
    const wanted = ["", ...values];
    if (current && !values.includes(current)) wanted.push(current);
    const have = [...select.options].map((o) => o.value);
    if (have.length === wanted.length && have.every((v, i) => v === wanted[i])) return;
    clear(select);
    for (const value of wanted) {
      const option = el("option", { value }, value ? label(value) : "all");
      if (value) option.title = value;
      select.append(option);
    }
    select.value = current;
  }
  async function applyFilters() {
    state.filters = { session: $("f-session").value, tool: $("f-tool").value, status: $("f-status").value };
    renderCalls();
    // Older matching calls come from the store itself, not only what this page has seen.
    const q = new URLSearchParams({ limit: "500" });
    if (state.filters.session) q.set("session", state.filters.session);
    if (state.filters.tool) q.set("tool", state.filters.tool);
    if (state.filters.status) q.set("status", state.filters.status);
    const r = await api("/console/api/calls?" + q.toString());
    if (r.status === 200) {
      for (const call of r.body.calls) if (!state.calls.has(call.id)) state.calls.set(call.id, call);
      renderCalls();
    }
  }

  // -- approvals -----------------------------------------------------------------------------------
  function renderApprovals() {
    const box = $("approvals");
    const items = [...state.approvals.values()].sort((a, b) => (a.requested_at < b.requested_at ? -1 : 1));
    const existing = new Map([...box.children].map((card) => [card.dataset.id, card]));
    for (const [id, card] of existing) if (!state.approvals.has(id)) card.remove();
    for (const request of items) if (!existing.has(request.call_id)) box.append(approvalCard(request));
    $("approval-count").textContent = String(items.length);
    $("approvals-empty").hidden = items.length > 0;
    $("approvals-section").classList.toggle("has-pending", items.length > 0);
    tickDeadlines();
  }
  function badges(annotations) {
    const a = annotations || {};
    const out = [];
    if (a.read_only) out.push(el("span", { class: "badge read-only" }, "read-only"));
    else if (a.destructive !== false) out.push(el("span", { class: "badge destructive" }, "destructive"));
    if (a.open_world !== false) out.push(el("span", { class: "badge open-world" }, "open world"));
    if (a.idempotent) out.push(el("span", { class: "badge" }, "idempotent"));
    return out;
  }
  function approvalCard(request) {
    const reason = el("input", { type: "text", placeholder: "reason for a denial (the agent sees it)", maxlength: "2000", "aria-label": "reason" });
    const error = el("p", { class: "answer-error", role: "alert" });
    const buttons = [];
    const send = async (decision, scope) => {
      for (const b of buttons) b.disabled = true;
      error.textContent = "";
      const who = $("who").value.trim();
      const payload = { decision, scope, reason: reason.value.trim() || null };
      if (who) payload.by = who;
      const r = await api("/console/api/approvals/" + encodeURIComponent(request.call_id), {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Toolhall-CSRF": csrf },
        body: JSON.stringify(payload),
      });
      if (r.status === 200 || r.status === 409) {
        state.approvals.delete(request.call_id);
        renderApprovals();
        return;
      }
      error.textContent = (r.body && r.body.message) || "the answer was not accepted (HTTP " + r.status + ")";
      for (const b of buttons) b.disabled = false;
    };
    const button = (label, cls, decision, scope, title) => {
      const b = el("button", { class: "btn " + cls, type: "button", title, on: { click: () => send(decision, scope) } }, label);
      buttons.push(b);
      return b;
    };
    const subjects = request.subjects || [];
    return el("article", { class: "approval", data: { id: request.call_id } },
      el("div", { class: "approval-head" },
        el("span", { class: "tool" }, request.tool), badges(request.annotations),
        el("span", { class: "deadline", data: { expires: request.expires_at || "" } })),
      el("div", { class: "meta" },
        "session ", el("span", { title: request.session_id || "" }, shortId(request.session_id) || "–"),
        " · requested ", fmtTime(request.requested_at),
        request.reason ? " · " + request.reason : ""),
      subjects.length ? el("div", { class: "subjects" }, subjects.map((s) => el("span", { class: "subject" }, s))) : null,
      textBlock(pretty(request.arguments), "arguments"),
      el("div", { class: "actions" },
        button("Approve", "approve", "approve", "call", "run this call"),
        button("Approve for session", "", "approve", "tool", "run this tool without asking for the rest of the session"),
        subjects.length ? button("Approve these subjects", "", "approve", "subject", "run this tool on these subjects without asking for the rest of the session") : null),
      el("div", { class: "actions" },
        reason,
        button("Deny", "deny", "deny", "call", "refuse this call; the agent gets the reason")),
      error);
  }
  function tickDeadlines() {
    const now = Date.now() + state.offsetMs;
    for (const node of document.querySelectorAll(".deadline")) {
      if (!node.dataset.expires) { node.textContent = ""; continue; }
      const left = Math.max(0, Math.round((new Date(node.dataset.expires).getTime() - now) / 1000));
      node.textContent = left > 0 ? "denied automatically in " + Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0") : "timing out…";
    }
  }

  // -- stats ---------------------------------------------------------------------------------------
  function renderStats() {
    const stats = state.stats;
    if (!stats) return;
    const t = stats.totals;
    $("totals").textContent = `${t.calls} calls · ${t.errors} errors · ${t.denied} denied · ${t.running} running · ${t.pending} waiting`;
    const chart = $("chart");
    clear(chart);
    const max = Math.max(1, ...stats.per_minute.map((m) => m.calls));
    for (const minute of stats.per_minute) {
      const ok = minute.calls - minute.errors;
      chart.append(el("div", { class: "bar", title: `${fmtTime(minute.minute)}: ${minute.calls} calls, ${minute.errors} errors` },
        el("span", { css: { height: `${(100 * ok) / max}%` } }),
        el("span", { class: "err", css: { height: `${(100 * minute.errors) / max}%` } })));
    }
    $("chart-max").textContent = "max " + max + "/min";
    const sessions = $("sessions-body");
    clear(sessions);
    for (const s of stats.sessions.slice(0, 12)) {
      const row = el("tr", { class: "clickable", title: `${s.session_id}${s.worker ? " · " + s.worker : ""}${s.role ? " · " + s.role : ""}`,
        on: { click: () => { $("f-session").value = s.session_id; applyFilters(); } } },
        el("td", { class: "tool" }, sessionLabel(s.worker, s.session_id)),
        el("td", { class: "num" }, s.calls),
        el("td", { class: "num" }, (100 * s.error_rate).toFixed(0) + "%"),
        el("td", { class: "num" }, fmtMs(s.total_ms)));
      sessions.append(row);
    }
    const slowest = $("slowest-body");
    clear(slowest);
    for (const tool of stats.slowest_tools) {
      slowest.append(el("tr", null,
        el("td", { class: "tool" }, tool.tool), el("td", { class: "num" }, tool.calls),
        el("td", { class: "num" }, fmtMs(tool.avg_ms)), el("td", { class: "num" }, fmtMs(tool.p95_ms)),
        el("td", { class: "num" }, fmtMs(tool.max_ms))));
    }
  }

  // -- call detail ---------------------------------------------------------------------------------
  async function openDetail(id, quiet) {
    state.openId = id;
    const r = await api("/console/api/calls/" + encodeURIComponent(id));
    if (state.openId !== id) return;
    const drawer = $("detail"), body = $("detail-body");
    if (r.status !== 200) {
      if (quiet) return;
      clear(body);
      body.append(el("p", { class: "answer-error" }, (r.body && r.body.message) || "could not load the call"));
      drawer.hidden = false;
      return;
    }
    const call = r.body;
    $("detail-title").textContent = call.tool;
    clear(body);
    const kv = el("dl", { class: "kv" });
    const add = (k, v) => { if (v !== null && v !== undefined && v !== "") kv.append(el("dt", null, k), el("dd", null, v)); };
    add("status", el("span", { class: statusClass(call.status) }, call.status));
    add("call id", call.id);
    if (call.parent_id) add("parent", el("a", { href: "#", on: { click: (e) => { e.preventDefault(); openDetail(call.parent_id); } } }, call.parent_id));
    add("session", call.session_id); add("worker", call.worker); add("role", call.role);
    add("started", fmtWhen(call.started_at)); add("ended", fmtWhen(call.ended_at));
    add("duration", fmtMs(call.duration_ms)); add("allowed by", call.approval);
    add("output", call.output_chars !== null ? call.output_chars + " characters" + (call.truncated ? " (the model saw a truncated output)" : "") : null);
    add("tool version", call.tool_version);
    add("subjects", (call.subjects || []).join("\n"));
    body.append(kv);
    const request = call.approval_request;
    if (request) {
      body.append(el("h3", null, "Approval"));
      const akv = el("dl", { class: "kv" });
      const a = (k, v) => { if (v) akv.append(el("dt", null, k), el("dd", null, v)); };
      a("requested", fmtWhen(request.requested_at)); a("why", request.reason);
      a("answer", request.decision ? request.decision + (request.scope !== "call" ? " (for the session: " + request.scope + ")" : "") : "waiting");
      a("answered by", request.answered_by); a("answered at", fmtWhen(request.answered_at)); a("reason", request.answer_reason);
      body.append(akv);
    }
    if (call.error_code) {
      body.append(el("h3", null, "Error"), el("div", { class: "error-box" },
        el("p", null, el("strong", null, call.error_code), " ", call.error_message || ""),
        call.error_details ? textBlock(pretty(call.error_details), "error details") : null));
    }
    body.append(el("h3", null, "Input"), textBlock(pretty(call.input), "input"));
    if (call.output !== null && call.output !== undefined) body.append(el("h3", null, "Output"), textBlock(pretty(call.output), "output"));
    if (call.data !== null && call.data !== undefined && call.data !== call.output) {
      body.append(el("h3", null, "Data"), textBlock(pretty(call.data), "data"));
    }
    drawer.hidden = false;
  }
  function closeDetail() { state.openId = null; $("detail").hidden = true; }

  // -- start ---------------------------------------------------------------------------------------
  function start() {
    const who = $("who");
    try { who.value = localStorage.getItem("toolhall.who") || ""; } catch (e) { /* storage blocked */ }
    who.addEventListener("change", () => { try { localStorage.setItem("toolhall.who", who.value.trim()); } catch (e) { /* ignore */ } });
    for (const id of ["f-session", "f-tool", "f-status"]) $(id).addEventListener("change", applyFilters);
    $("detail-close").addEventListener("click", closeDetail);
    document.addEventListener("keydown", (e) => { if (e.key === "Escape") closeDetail(); });
    setInterval(tickDeadlines, 1000);
    connect();
  }
  start();
})();

// The dashboard page: hash routes to panels, reads through the dashboard's
// JSON API, re-reads what it shows when the event stream says something
// changed, and sends admin actions with the admin token in a header.
"use strict";

const API = "api/";
const state = { route: "", view: null, stream: null, pending: false };

// --- small DOM helpers -----------------------------------------------------

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "style") Object.assign(e.style, v); // CSSOM: the page's CSP forbids style attributes
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) {
    if (k === undefined || k === null) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

function table(id, heads, rows) {
  return el("table", { id }, el("thead", {}, el("tr", {}, heads.map((h) => el("th", {}, h)))), el("tbody", {}, rows));
}

function ago(secs) {
  if (secs === null || secs === undefined) return "–";
  if (secs < 1) return (secs * 1000).toFixed(0) + " ms";
  if (secs < 120) return secs.toFixed(1) + " s";
  return (secs / 60).toFixed(1) + " min";
}

function when(t) {
  if (!t || t.startsWith("0001-")) return "–";
  return new Date(t).toISOString().replace("T", " ").replace("Z", "");
}

function json(v) {
  return v === undefined || v === null ? "null" : JSON.stringify(v, null, 2);
}

function notice(text, ok) {
  const n = document.getElementById("notice");
  n.hidden = !text;
  n.textContent = text || "";
  n.className = ok ? "ok" : "error";
}

// --- the API ---------------------------------------------------------------

function token(name) {
  return sessionStorage.getItem("voltro." + name) || "";
}

function headers(tok) {
  const h = {};
  if (tok) h.Authorization = "Bearer " + tok;
  return h;
}

async function get(path) {
  const r = await fetch(API + path, { headers: headers(token("inspect")), cache: "no-store" });
  const body = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(r.status + ": " + (body.error || r.statusText));
  return body;
}

// act runs an admin action; the token travels in the Authorization header
// only (no cookie is ever set), and a refusal is shown, not hidden.
async function act(path, payload) {
  const r = await fetch(API + path, {
    method: "POST",
    headers: Object.assign({ "Content-Type": "application/json" }, headers(token("admin"))),
    body: JSON.stringify(payload || {}),
  });
  const body = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) {
    notice("refused (" + r.status + "): " + (body.error || r.statusText), false);
    return null;
  }
  notice(body.message || "done", true);
  refresh();
  return body;
}

// --- the event stream ------------------------------------------------------

// stream reads text/event-stream with fetch, so that the inspect token can
// travel in a header (EventSource cannot send one). It streams the topic of
// the panel shown (the run page follows the workflows topic); route()
// aborts it when the topic changes, and it reconnects at once to the new one.
async function stream() {
  const live = document.getElementById("live");
  for (;;) {
    if (document.hidden) {
      live.dataset.mode = "hidden";
      live.textContent = "paused: the tab is hidden";
      await new Promise((ok) => (state.wake = ok)); // a hidden tab holds no stream
    }
    const topic = topicOf(state.view);
    const ctl = new AbortController();
    state.stream = { topic, ctl };
    try {
      const r = await fetch(API + "stream?panel=" + topic, { headers: headers(token("inspect")), cache: "no-store", signal: ctl.signal });
      if (!r.ok) throw new Error("stream: " + r.status);
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const chunk = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = chunk.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
          if (!data) continue;
          const ev = JSON.parse(data);
          if (ev.kind === "hello") {
            live.dataset.mode = ev.mode;
            live.dataset.topic = topic;
            live.textContent = "live: " + ev.mode;
            refresh(); // what changed before the stream (re)joined
          } else {
            onChange(ev);
          }
        }
      }
    } catch (e) {
      if (ctl.signal.aborted) continue; // the page moved to another topic
      live.dataset.mode = "off";
      live.textContent = "offline: " + e.message;
    }
    if (ctl.signal.aborted) continue;
    live.dataset.mode = "off";
    await new Promise((ok) => setTimeout(ok, 1000));
  }
}

// topicOf is the stream topic of a view: its panel, the run page's is the
// workflows list's.
function topicOf(v) {
  return !v || v.name === "run" ? "workflows" : v.name;
}

// onChange re-reads the panel shown when the change may concern it: the
// stream is of its topic, and a change of another run does not concern a
// run's page.
function onChange(ev) {
  const v = state.view;
  if (!v || topicOf(v) !== (state.stream && state.stream.topic)) return;
  if (ev.kind === "change" && v.runID && ev.run && ev.run !== v.runID) return;
  refresh();
}

// minRefresh is the least time (ms) between two reads of the view: the
// changes of a busy cluster fold into one read per interval.
const minRefresh = 500;

// refresh re-renders the current view, at most one read at a time and
// one per minRefresh.
async function refresh() {
  if (state.pending) {
    state.again = true;
    return;
  }
  state.pending = true;
  try {
    do {
      state.again = false;
      const wait = (state.lastRead || 0) + minRefresh - Date.now();
      if (wait > 0) await new Promise((ok) => setTimeout(ok, wait));
      if (document.hidden) break; // shown again, the stream's hello re-reads
      state.lastRead = Date.now();
      await render();
    } while (state.again);
  } finally {
    state.pending = false;
  }
}

// --- panels ----------------------------------------------------------------

// Every panel is live: it re-reads when its stream says what it shows
// changed (the server decides, from the change feed or its own cadence).
const panels = {
  cluster: { load: () => get("cluster"), draw: drawCluster },
  workflows: { load: loadRuns, draw: drawRuns },
  run: { load: (v) => get("runs/" + encodeURIComponent(v.runID)), draw: drawRun },
  schedules: { load: () => get("schedules"), draw: drawSchedules },
  messages: { load: () => get("messages"), draw: drawMessages },
  logs: { load: () => get("logs"), draw: drawLogs },
};

function route() {
  const h = location.hash.replace(/^#\/?/, "") || "cluster";
  const [name, ...rest] = h.split("/");
  const [path, query] = name.split("?");
  const view = { name: panels[path] ? path : "cluster", params: new URLSearchParams(query || h.split("?")[1] || "") };
  if (path === "run") view.runID = decodeURIComponent(rest.join("/").split("?")[0]);
  state.view = view;
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", a.dataset.panel === (view.name === "run" ? "workflows" : view.name));
  }
  if (state.stream && state.stream.topic !== topicOf(view)) state.stream.ctl.abort();
  document.getElementById("main").replaceChildren(el("p", { class: "muted" }, "loading…"));
  refresh();
}

async function render() {
  const v = state.view;
  const p = panels[v.name];
  const main = document.getElementById("main");
  try {
    const data = await p.load(v);
    if (state.view !== v) return;
    // a redraw of the view shown keeps what the operator is typing
    const typed = state.drawn === v ? formState(main) : null;
    main.replaceChildren(p.draw(data, v));
    if (typed) restoreForms(typed);
    state.drawn = v;
    main.dataset.panel = v.name;
    main.dataset.loaded = String(Date.now());
  } catch (e) {
    if (state.view !== v) return;
    if (state.drawn !== v) {
      main.replaceChildren(el("p", { class: "bad", id: "load-error" }, "could not read: " + e.message));
      return;
    }
    // the last answer stays, under a banner saying how old it is
    let banner = document.getElementById("load-error");
    if (!banner) {
      banner = el("p", { class: "bad banner", id: "load-error" });
      main.prepend(banner);
    }
    banner.dataset.error = e.message;
    staleAge();
  }
}

// staleAge writes the age of the answer under the read-error banner.
function staleAge() {
  const banner = document.getElementById("load-error");
  const main = document.getElementById("main");
  if (!banner || !banner.dataset.error || !main.dataset.loaded) return;
  const secs = Math.round((Date.now() - Number(main.dataset.loaded)) / 1000);
  banner.textContent = "could not read: " + banner.dataset.error + " · showing what was read " + secs + " s ago";
}
setInterval(staleAge, 1000);

// formState is what the fields of node hold (by id), and which has the
// focus where.
function formState(node) {
  const values = {};
  for (const f of node.querySelectorAll("input[id], select[id], textarea[id]")) values[f.id] = f.value;
  const a = document.activeElement;
  const focus = a && a.id && node.contains(a) ? { id: a.id, start: a.selectionStart, end: a.selectionEnd } : null;
  return { values, focus };
}

function restoreForms(st) {
  for (const [id, value] of Object.entries(st.values)) {
    const f = document.getElementById(id);
    if (f && f.value !== value) f.value = value;
  }
  const f = st.focus && document.getElementById(st.focus.id);
  if (!f) return;
  f.focus();
  if (st.focus.start !== null && st.focus.start !== undefined && f.setSelectionRange) {
    try { f.setSelectionRange(st.focus.start, st.focus.end); } catch (e) { /* not a text field */ }
  }
}

// Cluster: the `voltro cluster status` rows, the shared footer, the shard map.
function drawCluster(c) {
  const rep = c.report || {};
  const rows = (rep.instances || []).map((i) => {
    const bad = i.stale || !i.reachable;
    const health = i.stale ? "stale: " + (i.staleReason || "") : !i.reachable ? "unreachable: " + (i.unreachableReason || "") : "live";
    const problems = (i.problems || []).map((p) => p.kind + ": " + p.detail).join("; ");
    const notes = (i.notes || []).map((p) => el("div", { class: "bad" }, "sees " + p.kind + ": " + p.detail));
    return el("tr", { class: "instance" + (bad ? " bad" : "") + (i.localhostRisk ? " localhost-risk" : ""),
      "data-replica": i.replicaId, "data-runner": i.runnerAddress, "data-health": i.stale ? "stale" : !i.reachable ? "unreachable" : "live" },
      el("td", {}, i.replicaId), el("td", { class: i.localhostRisk ? "risk" : "" }, i.runnerAddress, i.localhostRisk ? el("div", { class: "risk" }, "localhost risk: " + (i.localhostFix || "")) : null),
      el("td", {}, i.dialect), el("td", {}, i.tier), el("td", {}, i.cdcFlavor, i.cdcProblem ? el("div", { class: "bad" }, i.cdcProblem) : null),
      el("td", {}, i.coordination), el("td", { class: "shard-lock" }, i.shardLock || "–", i.shardLockReason ? el("div", { class: "why" }, i.shardLockReason) : null), el("td", {}, i.binlogServerId ?? "–"),
      el("td", {}, String(i.ownedShards)), el("td", {}, ago(i.heartbeatAgeSeconds)),
      el("td", { class: i.ready === false ? "bad" : "" }, i.ready === null ? "–" : i.ready ? "ready" : "not ready", problems ? el("div", {}, problems) : null, notes),
      el("td", { class: "health " + (bad ? "bad" : "ok") }, health, i.tokenWithheld ? el("div", {}, "token withheld: " + i.tokenWithheld) : null));
  });
  const footer = drawShared(rep);
  const dups = (rep.duplicates || []).map((d) => el("p", { class: "bad" }, "duplicate " + d.kind + " " + d.value + ": " + d.instances.map((x) => x.replicaId + "@" + x.runnerAddress).join(", ")));
  const owners = {};
  for (const i of rep.instances || []) owners[i.runnerAddress] = i.replicaId;
  const shards = c.shards.map((s) => el("span", { class: "shard" + (!s.owner || s.expired ? " free" : ""), "data-shard": s.shard, title: "epoch " + s.epoch },
    s.shard + " → " + (s.owner ? owners[s.owner] || s.owner : "free") + " · e" + s.epoch));
  return el("section", { id: "cluster" },
    el("h2", {}, "Instances (" + rows.length + ") · stale after " + ago(rep.staleAfterSeconds)),
    table("instances", ["replica", "runner address", "dialect", "tier", "CDC", "coordination", "shard lock", "server_id", "shards", "heartbeat", "readiness", "health"], rows),
    dups, el("h2", {}, "Shared state"), footer,
    el("h2", {}, "Shard map"), c.shardsError ? el("p", { class: "bad" }, c.shardsError) : null, el("div", { class: "shardmap", id: "shards" }, shards));
}

// replicaRuns lists replicas with their counts ("none" without one).
function replicaRuns(rs) {
  return (rs || []).length ? rs.map((r) => r.replicaId + " (" + r.runs + ")").join(", ") : "none";
}

// drawShared is the shared-state footer of `voltro cluster status`: the
// schedule activity, claims and runs per replica, the workflow runs, the
// messages and the retention in force.
function drawShared(rep) {
  const sh = rep.shared;
  if (!sh) return el("p", { class: "muted", id: "shared" }, "no readable database");
  const win = ago(sh.activeWindowSeconds);
  const s = sh.schedules;
  const sched = s
    ? [el("p", { id: "shared-active" }, "active replicas (schedule runs in the last " + win + "): " + replicaRuns(s.activeReplicas)),
      el("p", { id: "shared-claims" }, "schedule claims (last " + win + "): " + s.recentClaims +
        ((s.latestClaims || []).length ? "; latest: " + s.latestClaims.map((c) => c.schedule + " → " + c.replicaId + " " + ago(c.ageSeconds) + " ago").join(", ") : "")),
      el("p", { id: "shared-running" }, "schedule runs running: " + s.running + (s.running ? " (" + replicaRuns(s.runningByReplica) + ")" : ""))]
    : [el("p", { id: "shared-active" }, "schedules: none has run on this database")];
  const wf = sh.workflows ? "workflow runs: " + sh.workflows.running + " running, " + sh.workflows.suspended + " suspended" : "workflow runs: no workflow tables";
  const msg = sh.messages;
  const unhosted = (msg.unhostedBacklog || []).map((u) => el("p", { class: "bad unhosted", "data-type": u.entityType },
    "unhosted backlog: " + u.messages + " message(s) for " + u.entityType + " (oldest " + ago(u.oldestSeconds) + "): no live runner hosts it; deploy one, or dead-letter them"));
  return el("div", { id: "shared" }, sched, el("p", { id: "shared-workflows" }, wf),
    el("p", { class: msg.deadLetters ? "bad" : "" }, "dead letters: " + msg.deadLetters),
    el("p", {}, "oldest undelivered message: " + (msg.oldestUndeliveredSeconds > 0 ? ago(msg.oldestUndeliveredSeconds) : "none")),
    unhosted.length ? unhosted : el("p", {}, "unhosted backlog: none"),
    (sh.errors || []).map((e) => el("p", { class: "bad" }, "could not read " + e)),
    drawRetention(rep.retention));
}

// drawRetention is the retention line of `voltro cluster status`.
function drawRetention(rt) {
  if (!rt) return el("p", { id: "retention", class: "muted" }, "retention: unknown (no instance asked reported it)");
  let text = "retention: finished runs and processed messages " + rt.runs + ", dead letters " + rt.deadLetters;
  if (!rt.sweptBy) text += "; no instance asked holds the retention shard now (whichever does sweeps)";
  else {
    text += "; swept by " + rt.sweptBy.replicaId + " (" + rt.sweptBy.runnerAddress + ")" + (rt.lastPassAgeSeconds === null ? ", no pass yet" : ", last pass " + ago(rt.lastPassAgeSeconds) + " ago");
    const kept = [["runs", "finished run"], ["processed", "processed message"], ["dead", "dead letter"]].filter(([k]) => k in (rt.oldestSeconds || {})).map(([k, n]) => n + " " + ago(rt.oldestSeconds[k]));
    if (kept.length) text += "; oldest kept: " + kept.join(", ");
  }
  return el("div", { id: "retention" }, el("p", {}, text),
    (rt.differ || []).map((d) => el("p", { class: "bad" }, d.replicaId + " (" + d.runnerAddress + ") is set otherwise: its setting applies only while it holds the retention shard")));
}

// Workflows: filters, a page, and the keyset "older" link.
function loadRuns(v) {
  const q = new URLSearchParams();
  for (const k of ["status", "name", "since", "until", "after", "limit"]) if (v.params.get(k)) q.set(k, v.params.get(k));
  return get("runs?" + q.toString());
}

function go(params) {
  const q = new URLSearchParams();
  for (const [k, val] of Object.entries(params)) if (val) q.set(k, val);
  location.hash = "#/workflows?" + q.toString();
}

function isoOrEmpty(s) {
  if (!s) return "";
  const d = new Date(s);
  return isNaN(d) ? s : d.toISOString();
}

function drawRuns(page, v) {
  const p = v.params;
  const filters = el("form", { class: "filters", id: "run-filters", onsubmit: (e) => {
    e.preventDefault();
    const f = e.target;
    go({ status: f.status.value, name: f.name.value.trim(), since: isoOrEmpty(f.since.value), until: isoOrEmpty(f.until.value) });
  } },
  el("label", {}, "status", el("select", { name: "status", id: "f-status" }, ["", "running", "suspended", "completed", "failed", "cancelled"].map((s) => el("option", { value: s, selected: p.get("status") === s }, s || "any")))),
  el("label", {}, "name", el("input", { name: "name", id: "f-name", value: p.get("name") || "", placeholder: "workflow name" })),
  el("label", {}, "created since", el("input", { name: "since", id: "f-since", value: p.get("since") || "", placeholder: "2026-01-02T15:04:05Z" })),
  el("label", {}, "created before", el("input", { name: "until", id: "f-until", value: p.get("until") || "", placeholder: "RFC 3339" })),
  el("button", { type: "submit", id: "f-apply" }, "filter"));
  const rows = page.runs.map((r) => el("tr", { "data-id": r.id, "data-status": r.status },
    el("td", {}, el("a", { href: "#/run/" + encodeURIComponent(r.id) }, r.id)), el("td", {}, r.name),
    el("td", { class: "status-" + r.status }, r.status), el("td", {}, r.waitingOn || ""), el("td", {}, r.runner || ""),
    el("td", {}, when(r.createdAt)), el("td", {}, when(r.finishedAt))));
  const nav = el("p", {},
    p.get("after") ? el("a", { href: "#/workflows?" + new URLSearchParams([...p].filter(([k]) => k !== "after")).toString(), id: "first-page" }, "« newest") : null, " ",
    page.next ? el("a", { id: "next-page", href: "#", onclick: (e) => { e.preventDefault(); go(Object.assign(Object.fromEntries(p), { after: page.next })); } }, "older »") : el("span", { class: "muted" }, "end of list"));
  return el("section", { id: "workflows" }, el("h2", {}, "Workflow runs"), filters,
    table("runs", ["id", "name", "status", "waiting on", "runner", "created", "finished"], rows), nav);
}

// A run: its data, the attempts as a timeline, events, signals, family.
function drawRun(r) {
  const attempts = r.attempts || [];
  const t0 = attempts.reduce((m, a) => Math.min(m, Date.parse(a.startedAt)), Date.parse(r.createdAt)); // no spread: a long run has too many attempts for one call
  const end = (a) => (a.finishedAt ? Date.parse(a.finishedAt) : Date.now());
  const t1 = Math.max(...attempts.map(end), t0 + 1);
  const span = t1 - t0;
  const bars = attempts.map((a) => {
    const left = ((Date.parse(a.startedAt) - t0) / span) * 100;
    const width = Math.max(((end(a) - Date.parse(a.startedAt)) / span) * 100, 0.3);
    const dur = a.finishedAt ? ((end(a) - Date.parse(a.startedAt)) / 1000).toFixed(3) + " s" : "running";
    return el("div", { class: "attempt", "data-seq": a.seq, "data-attempt": a.attempt, "data-status": a.status, "data-replica": a.replicaId },
      el("div", { class: "bar", style: { left: left + "%", width: width + "%" } }),
      el("span", { class: "label" }, "#" + a.seq + " " + a.name + " · attempt " + a.attempt + " · " + a.status + " · " + (a.replicaId || "?") + " (" + a.runner + ") · " + dur + (a.error ? " · " + a.error : "")));
  });
  const events = (r.events || []).map((e) => el("tr", { "data-kind": e.kind }, el("td", {}, when(e.at)), el("td", {}, e.kind), el("td", {}, e.detail || ""), el("td", {}, e.replicaId), el("td", {}, e.runner)));
  const signals = (r.signals || []).map((s) => el("tr", { "data-signal": s.name, "data-state": s.state, class: s.state === "pending" ? "pending" : "" },
    el("td", {}, s.name), el("td", { class: "signal-state" }, s.state), el("td", {}, el("pre", {}, json(s.payload))),
    el("td", {}, when(s.sentAt)), el("td", { class: "signal-sender" }, s.sentBy ? s.sentBy + (s.sentFrom ? " (" + s.sentFrom + ")" : "") : "–"),
    el("td", {}, when(s.receivedAt)), el("td", {}, s.receivedBy || "")));
  const pending = (r.signals || []).filter((s) => s.state === "pending").length;
  const kids = (r.children || []).map((k) => el("li", {}, el("a", { href: "#/run/" + encodeURIComponent(k.id) }, k.id), " " + k.name + " · " + k.status));
  const running = r.status === "running" || r.status === "suspended";
  const actions = el("div", { id: "run-actions" },
    el("button", { id: "cancel-run", disabled: !running, onclick: () => act("runs/" + encodeURIComponent(r.id) + "/cancel") }, "cancel run"), " ",
    el("form", { id: "signal-form", style: { display: "inline" }, onsubmit: (e) => {
      e.preventDefault();
      let payload;
      try { payload = JSON.parse(e.target.payload.value || "null"); } catch (err) { notice("payload is not JSON: " + err.message, false); return; }
      act("runs/" + encodeURIComponent(r.id) + "/signal", { name: e.target.signal.value, payload }).then((ok) => {
        const f = document.getElementById("signal-form");
        if (ok && f) f.reset(); // sent: the redraws no longer carry it
      });
    } }, el("input", { name: "signal", id: "signal-name", placeholder: "signal name" }), " ",
    el("input", { name: "payload", id: "signal-payload", placeholder: '{"approved":true}' }), " ", el("button", { type: "submit" }, "send signal")));
  return el("section", { id: "run", "data-id": r.id, "data-status": r.status },
    el("h2", {}, "Run " + r.id + " · " + r.name + " · ", el("span", { class: "status-" + r.status, id: "run-status" }, r.status), r.waitingOn ? " · waiting on " + r.waitingOn : ""),
    el("p", { class: "muted" }, "shard " + r.shard + " · runner " + (r.runner || "–") + " · created " + when(r.createdAt) + " · finished " + when(r.finishedAt) +
      (r.start ? " · source " + r.start.Source + (r.start.Subject ? " · by " + r.start.Subject : "") : "") + (r.cancelRequested ? " · cancel requested" : "")),
    actions,
    r.parent ? el("p", { id: "parent" }, "parent: ", el("a", { href: "#/run/" + encodeURIComponent(r.parent.id) }, r.parent.id), " " + r.parent.name + " · " + r.parent.status) : null,
    el("div", { class: "grid" },
      el("div", {}, el("h2", {}, "Input"), el("pre", { id: "run-input" }, json(r.input))),
      el("div", {}, el("h2", {}, r.error ? "Error" : "Output"), r.error ? el("pre", { id: "run-error", class: "bad" }, r.error.code + ": " + r.error.message) : el("pre", { id: "run-output" }, json(r.output)))),
    el("h2", {}, "Step attempts (" + attempts.length + ")"), el("div", { class: "timeline", id: "timeline" }, bars.length ? bars : el("p", { class: "muted" }, "no step has started")),
    el("h2", {}, "Events"), table("events", ["at", "kind", "detail", "replica", "runner"], events),
    el("h2", {}, "Signals (" + signals.length + (pending ? ", " + pending + " not yet received" : "") + ")"),
    signals.length ? table("signals", ["name", "state", "payload", "sent", "sent by", "received", "received by"], signals) : el("p", { class: "muted", id: "signals" }, "none sent"),
    el("h2", {}, "Children"), kids.length ? el("ul", { id: "children" }, kids) : el("p", { class: "muted", id: "children" }, "none"),
    (r.missing || []).map((m) => el("p", { class: "bad" }, "could not read " + m)));
}

// Schedules: policy, next firing, recent firings, live runs, claims.
function drawSchedules(s) {
  const rows = s.schedules.map((x) => el("tr", { "data-schedule": x.name },
    el("td", {}, x.name), el("td", {}, x.spec || "–"), el("td", {}, x.coordination || "–"), el("td", {}, x.overlap || "–"),
    el("td", {}, when(x.nextFireAt)), el("td", {}, String(x.live.length)),
    el("td", {}, Object.entries(x.counts || {}).map(([k, n]) => k + "=" + n).join(" "))));
  const firings = s.schedules.flatMap((x) => x.recent.map((f) => el("tr", { class: f.status === "failed" || f.status === "abandoned" ? "bad" : "" },
    el("td", {}, x.name), el("td", {}, when(f.scheduledAt)), el("td", {}, f.replicaId), el("td", {}, f.coordinationOutcome), el("td", {}, f.status), el("td", {}, f.error || ""))));
  const claims = s.claims.map((c) => el("tr", {}, el("td", {}, c.schedule), el("td", {}, c.replicaId), el("td", {}, when(c.claimedAt))));
  return el("section", { id: "schedules" }, el("h2", {}, "Schedules"),
    table("schedule-list", ["name", "spec", "coordination", "overlap", "next firing", "live", "outcomes"], rows),
    el("h2", {}, "Recent firings"), table("firings", ["schedule", "scheduled at", "replicaId", "coordinationOutcome", "status", "error"], firings),
    el("h2", {}, "Latest claims"), table("claims", ["schedule", "replicaId", "claimed at"], claims));
}

// Messages: backlog per type and shard, oldest undelivered, dead letters.
function drawMessages(m) {
  const types = m.types.map((t) => el("tr", { "data-type": t.entityType }, el("td", {}, t.entityType), el("td", {}, String(t.pending)), el("td", {}, ago(t.oldestDeliverableSeconds)),
    el("td", {}, el("button", { class: "dead-backlog", onclick: () => confirm("dead-letter the pending messages of " + t.entityType + "?") && act("backlog/dead", { entityType: t.entityType }) }, "dead-letter backlog"))));
  const shards = m.shards.map((s) => el("tr", { "data-shard": s.shard }, el("td", {}, s.shard), el("td", {}, s.owner || "–"), el("td", {}, String(s.pending)), el("td", {}, String(s.claimed)), el("td", {}, String(s.dead)), el("td", {}, ago(s.oldestDeliverableSeconds))));
  const typeNames = m.types.map((t) => t.entityType);
  const matrix = m.shards.filter((s) => (s.types || []).length).map((s) => el("tr", { "data-shard": s.shard }, el("th", {}, s.shard),
    typeNames.map((ty) => {
      const c = (s.types || []).find((x) => x.entityType === ty);
      return el("td", { "data-shard": s.shard, "data-type": ty, "data-pending": c ? c.pending : 0, class: c ? "" : "muted" }, c ? c.pending + " (oldest " + ago(c.oldestDeliverableSeconds) + ")" : "–");
    })));
  const dead = m.deadLetters.map((d) => el("tr", { "data-message": d.id }, el("td", {}, String(d.id)), el("td", {}, d.entityType), el("td", {}, d.entityId), el("td", {}, d.shard), el("td", {}, String(d.attempts)), el("td", { class: "bad" }, d.lastError || ""),
    el("td", {}, el("button", { class: "replay", onclick: () => act("messages/" + d.id + "/replay") }, "replay"))));
  return el("section", { id: "messages" }, el("h2", {}, "Backlog · oldest undelivered " + ago(m.oldestUndeliveredSeconds) + " · " + m.dead + " dead letters"),
    table("backlog-types", ["entity type", "pending", "oldest", ""], types),
    table("backlog-shards", ["shard", "owner", "pending", "claimed", "dead", "oldest"], shards),
    el("h2", {}, "Backlog by shard and entity type"),
    matrix.length ? table("backlog-matrix", ["shard"].concat(typeNames), matrix) : el("p", { class: "muted", id: "backlog-matrix" }, "no deliverable message"),
    el("h2", {}, "Dead letters"), table("dead-letters", ["id", "entity type", "entity", "shard", "attempts", "last error", ""], dead));
}

// Logs: the merged tail of every instance, as `voltro logs` prints it.
function drawLogs(l) {
  const rows = l.records.map((r) => el("tr", { class: r.level === "ERROR" || r.level === "WARN" ? "bad" : "" },
    el("td", {}, when(r.time)), el("td", {}, r.replicaId || ""), el("td", {}, r.level || ""), el("td", {}, r.msg || r.message || ""),
    el("td", {}, Object.entries(r.attrs || {}).map(([k, v]) => k + "=" + (typeof v === "string" ? v : JSON.stringify(v))).join(" "))));
  return el("section", { id: "logs" }, el("h2", {}, "Merged log tail"), l.notes ? el("pre", { class: "muted" }, l.notes) : null,
    table("log-records", ["time", "replica", "level", "message", "attributes"], rows));
}

// --- boot ------------------------------------------------------------------

function bindTokens() {
  for (const name of ["inspect", "admin"]) {
    const input = document.getElementById(name + "-token");
    input.value = token(name);
    input.addEventListener("change", () => {
      input.value = input.value.trim(); // a pasted token often ends with a newline or a space
      sessionStorage.setItem("voltro." + name, input.value);
      if (name === "inspect") refresh();
    });
  }
}

window.addEventListener("hashchange", route);
// A hidden tab closes its stream; shown again it reopens it, whose hello
// refreshes the view once.
document.addEventListener("visibilitychange", () => {
  if (document.hidden) {
    if (state.stream) state.stream.ctl.abort();
  } else if (state.wake) {
    const wake = state.wake;
    state.wake = null;
    wake();
  }
});
window.addEventListener("DOMContentLoaded", () => {
  bindTokens();
  route();
  stream();
});

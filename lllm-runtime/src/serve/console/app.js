// The console of `lllm serve`: the run list and a run's page, drawn from the server's API.
// Every piece of text a run holds (answers, tool arguments and results, names) is set as text,
// never as markup: nothing a model or a tool wrote can become part of the page.
"use strict";

const main = document.getElementById("main");
const live = document.getElementById("live");
const FINAL = new Set(["completed", "failed", "cancelled"]);

// el("td", {class: "num"}, "12", child...): an element with attributes and children; strings become
// text nodes.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const number = (n) => (n === undefined || n === null ? "–" : Number(n).toLocaleString("en-US"));
const share = (part, whole) => (whole ? `${Math.round((100 * (part || 0)) / whole)} %` : "–");
const status = (s) => el("span", { class: `status ${s}`, "data-status": s }, s.replace("_", " "));
const calls = (n) => `${number(n)} ${n === 1 ? "call" : "calls"}`;
const runLink = (id) => `#/runs/${encodeURIComponent(id)}`;

// "3 tasks, 1 running": a run's background subagents, as the run list shows them.
function taskCount(tasks) {
  if (!tasks || !tasks.started) return null;
  const started = `${number(tasks.started)} ${tasks.started === 1 ? "task" : "tasks"}`;
  return el("span", { class: "tasks muted", "data-tasks": tasks.running },
    tasks.running ? `${started}, ${number(tasks.running)} running` : started);
}

// A date the server sent, as text; a bad one (a hand-edited record) is shown as it is.
function when(created) {
  const date = new Date(Number(created) * 1000);
  return Number.isNaN(date.getTime()) ? String(created) : date.toISOString();
}

function age(created) {
  const seconds = Math.max(0, Math.round(Date.now() / 1000 - created));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86400)} d ago`;
}

async function api(path, options) {
  const response = await fetch(path, { credentials: "same-origin", ...options });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const message = (body.error && body.error.message) || `HTTP ${response.status}`;
    throw new Error(message);
  }
  return body;
}

// One stream of the server's runs, shared by both views: the list draws it, a run's page reads
// its run's revision from it and fetches the run again when it changed.
const watchers = new Set();
let latest = null;
function watchRuns() {
  const source = new EventSource("/v1/runs?stream=true&limit=1000");
  source.addEventListener("open", () => { live.textContent = "live"; live.className = "live on"; });
  source.addEventListener("error", () => { live.textContent = "reconnecting"; live.className = "live off"; });
  source.addEventListener("runs", (event) => {
    latest = JSON.parse(event.data).data;
    for (const watcher of watchers) watcher(latest);
  });
}

function showList() {
  document.title = "Runs · lllm serve";
  const body = el("tbody", { id: "runs" });
  const table = el("table", { class: "runs" },
    el("thead", {}, el("tr", {},
      el("th", {}, "Run"), el("th", {}, "Tactic"), el("th", {}, "Via"), el("th", {}, "Status"),
      el("th", {}, "Started"), el("th", {}, "Session"), el("th", { class: "num" }, "Calls"),
      el("th", { class: "num" }, "Tokens in"), el("th", { class: "num" }, "Tokens out"),
      el("th", { class: "num" }, "Cached"))),
    body);
  const empty = el("div", { class: "empty", id: "no-runs" },
    "No runs yet. Start one with POST /v1/runs, a chat completion or a response; it shows here by itself.");
  main.replaceChildren(el("h1", {}, "Runs"), table, empty);
  const draw = (runs) => {
    empty.hidden = runs.length > 0;
    table.hidden = runs.length === 0;
    body.replaceChildren(...runs.map((run) => {
      const usage = run.usage || {};
      return el("tr", { "data-run": run.id },
        el("td", {}, el("a", { href: runLink(run.id), class: "mono" }, run.id)),
        el("td", {}, run.model),
        el("td", { class: "muted" }, run.source || "runs"),
        el("td", {}, status(run.status), taskCount(run.tasks)),
        el("td", { title: when(run.created_at) }, age(run.created_at)),
        el("td", { class: "mono" }, run.session_id),
        el("td", { class: "num" }, number(usage.calls)),
        el("td", { class: "num" }, number(usage.prompt_tokens)),
        el("td", { class: "num" }, number(usage.completion_tokens)),
        el("td", { class: "num", title: `${number(usage.cached_tokens)} of ${number(usage.prompt_tokens)} prompt tokens` },
          share(usage.cached_tokens, usage.prompt_tokens)));
    }));
  };
  if (latest) draw(latest);
  return draw;
}

// The view on screen: a load that ends after the user went elsewhere draws nothing.
let view = 0;
let retry = null;

function showRun(id) {
  document.title = `${id} · lllm serve`;
  main.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  const mine = view;
  let shown = -1;
  let loading = false;
  let again = false;
  const load = async () => {
    if (loading) { again = true; return; }
    loading = true;
    try {
      const [run, dialogs] = await Promise.all([
        api(`/v1/runs/${encodeURIComponent(id)}`),
        api(`/v1/runs/${encodeURIComponent(id)}/dialogs`),
      ]);
      if (mine !== view) return;
      // What is drawn is as new as the older of the two reads.
      shown = Math.min(run.revision, dialogs.revision);
      drawRun(run, dialogs, load);
      // A run too old for the stream's list is looked at again until it ends.
      clearTimeout(retry);
      const listed = latest === null || latest.some((r) => r.id === id);
      if (!FINAL.has(run.status) && !listed) retry = setTimeout(load, 2000);
    } catch (error) {
      if (mine === view) main.replaceChildren(el("h1", {}, id), el("p", { class: "error" }, error.message));
    } finally {
      loading = false;
      if (again && mine === view) { again = false; load(); }
    }
  };
  load();
  return (runs) => {
    const run = runs.find((r) => r.id === id);
    if (!run || run.revision !== shown) load();
  };
}

function drawRun(run, log, reload) {
  const usage = run.usage || {};
  const parts = [
    el("h1", {}, "Run ", el("span", { class: "mono" }, run.id), " ", status(run.status)),
    el("dl", { class: "facts" },
      el("dt", {}, "Tactic"), el("dd", {}, run.model),
      el("dt", {}, "Session"), el("dd", { class: "mono", id: "run-session" }, run.session_id),
      el("dt", {}, "Started"), el("dd", {}, `${when(run.created_at)} (${age(run.created_at)})`),
      el("dt", {}, "Tokens"), el("dd", {},
        `${number(usage.prompt_tokens)} in, ${number(usage.completion_tokens)} out, ` +
        `${number(usage.cached_tokens)} cached (${share(usage.cached_tokens, usage.prompt_tokens)}) over ${calls(usage.calls)}`)),
  ];
  if (run.pending && run.pending.length) parts.push(pendingCalls(run, reload));
  if (run.question) parts.push(question(run, reload));
  if (run.output !== undefined) parts.push(el("h2", {}, "Answer"), el("div", { class: "answer", id: "answer" }, run.output));
  if (run.error) parts.push(el("h2", {}, "Error"), el("div", { class: "answer error", id: "error" }, run.error.message));
  if (run.status === "running" || run.status === "queued" || run.status === "requires_action") {
    parts.push(el("p", {}, el("button", { class: "reject", id: "cancel", onclick: () => act(run.id, "cancel", null, reload) }, "Cancel the run")));
  }
  parts.push(el("h2", {}, "Dialogs"));
  if (log.restored) {
    parts.push(el("p", { class: "muted", id: "restored" },
      "This run began before the server last started: its earlier requests are in its journal, not shown here."));
  }
  const tasks = log.tasks || [];
  parts.push(dialogTree(log.dialogs, tasks));
  if (tasks.length) parts.push(el("h2", {}, "Tasks"), taskTable(tasks));
  parts.push(el("h2", {}, "Tool calls"), toolCalls(log.tool_calls));
  main.replaceChildren(...parts);
}

function pendingCalls(run, reload) {
  const cards = run.pending.map((call) => el("div", { class: "pending", "data-call": call.id },
    el("div", {}, el("strong", {}, call.tool), " asked by ", el("strong", {}, call.agent || "an agent"),
      call.source ? el("span", { class: "muted" }, ` (${call.source})`) : null),
    el("pre", { class: "arguments" }, pretty(call.arguments)),
    el("div", { class: "actions" },
      el("button", { class: "approve", onclick: (e) => decide(e, run.id, "approve", call.id, reload) }, "Approve"),
      el("button", { class: "reject", onclick: (e) => decide(e, run.id, "reject", call.id, reload) }, "Reject"))));
  return el("section", { id: "pending" }, el("h2", {}, "Waiting for your decision"), ...cards);
}

// A server's question (MCP elicitation): its message, then a field per property of the requested
// schema, or the URL as text (never opened by the console). The server's words are text nodes.
function question(run, reload) {
  const q = run.question;
  const schema = q.requested_schema || {};
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).map(([name, p]) => field(name, p, required.has(name)));
  const send = () => {
    const content = {};
    for (const { name, read } of fields) {
      const value = read();
      if (value !== undefined) content[name] = value;
    }
    for (const button of document.querySelectorAll("#question button")) button.disabled = true;
    act(run.id, "approval", { decision: "approve", question: q.id, content: q.url ? undefined : content }, reload);
  };
  const decline = () => act(run.id, "approval", { decision: "reject", question: q.id }, reload);
  return el("section", { id: "question" }, el("h2", {}, "A question for you"),
    el("div", {}, el("strong", {}, q.source || "A server"), " asks for ", el("strong", {}, q.agent || "an agent")),
    el("pre", { class: "arguments" }, q.message),
    q.url ? el("p", {}, "Open this address yourself: ", el("code", { id: "question-url" }, q.url)) : null,
    ...fields.map((f) => f.row),
    el("div", { class: "actions" },
      el("button", { class: "approve", id: "question-send", onclick: send }, q.url ? "Done" : "Send"),
      el("button", { class: "reject", id: "question-decline", onclick: decline }, "Decline")));
}

// One form field: its row, and how its value is read (undefined: left out).
function field(name, p, required) {
  const choices = p.enum || (p.oneOf || p.anyOf || []).map((c) => c.const);
  const items = p.items || {};
  const many = p.type === "array";
  const options = many ? (items.enum || (items.anyOf || items.oneOf || []).map((c) => c.const)) : choices;
  const labels = many ? (items.anyOf || items.oneOf || []).map((c) => c.title) : (p.enumNames || (p.oneOf || []).map((c) => c.title));
  let input;
  if (p.type === "boolean") input = el("input", { type: "checkbox", name, checked: p.default === true });
  else if (options && options.length) {
    input = el("select", { name, multiple: many, required },
      many || required ? null : el("option", { value: "" }, ""),
      ...options.map((v, i) => el("option", { value: v, selected: many ? (p.default || []).includes(v) : p.default === v }, (labels && labels[i]) || v)));
  } else {
    input = el("input", { type: p.type === "number" || p.type === "integer" ? "number" : "text", name,
      step: p.type === "integer" ? "1" : "any", value: p.default === undefined ? "" : p.default });
  }
  const read = () => {
    if (p.type === "boolean") return input.checked;
    if (many) return [...input.selectedOptions].map((o) => o.value);
    if (input.value === "") return undefined;
    return p.type === "number" || p.type === "integer" ? Number(input.value) : input.value;
  };
  const label = `${p.title || name}${required ? " *" : ""}`;
  const row = el("label", { class: "field", "data-field": name }, el("span", {}, label), " ", input,
    p.description ? el("span", { class: "muted" }, ` ${p.description}`) : null);
  return { name, read, row };
}

async function decide(event, runId, decision, callId, reload) {
  for (const button of document.querySelectorAll("#pending button")) button.disabled = true;
  await act(runId, "approval", { decision, calls: [callId] }, reload);
}

async function act(runId, action, body, reload) {
  try {
    await api(`/v1/runs/${encodeURIComponent(runId)}/${action}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body || {}),
    });
  } catch (error) {
    alert(`${action}: ${error.message}`);
  }
  reload();
}

function dialogTree(dialogs, tasks) {
  if (!dialogs.length) return el("p", { class: "muted" }, "No model call yet.");
  // A dialog hangs under its parent when the parent is shown (and is not itself); each is drawn once.
  // A task's dialog hangs under the dialog that started it, an isolated one too (its requests name
  // no parent; the run knows who started it).
  const known = new Set(dialogs.map((d) => d.id));
  const taskOf = new Map(tasks.map((t) => [t.dialog, t]));
  const roots = [];
  const children = new Map();
  for (const dialog of dialogs) {
    const task = taskOf.get(dialog.id);
    const parent = dialog.parent || (task && task.parent_dialog);
    if (parent && parent !== dialog.id && known.has(parent)) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(dialog);
    } else {
      roots.push(dialog);
    }
  }
  const drawn = new Set();
  const branch = (list) => el("ul", { class: "tree" }, list.filter((d) => !drawn.has(d)).map((dialog) => {
    drawn.add(dialog);
    return el("li", {}, dialogCard(dialog, taskOf.get(dialog.id)), branch(children.get(dialog.id) || []));
  }));
  const tree = branch(roots);
  // Dialogs in a loop of parents (no root) are shown at the top level too.
  const lost = dialogs.filter((d) => !drawn.has(d));
  return el("div", { id: "dialogs" }, tree, lost.length ? branch(lost) : null);
}

// What a task is, in words: "task t1: researcher, answered by scout, fork, in the background".
function taskWords(task) {
  const by = task.agent === task.parent_agent ? "" : `, answered by ${task.agent}`;
  return `${task.subagent}${by}, ${task.mode}, ${task.background ? "in the background" : "answered at once"}`;
}

function dialogCard(dialog, task) {
  const usage = dialog.usage || {};
  const rows = dialog.calls.map((call) => el("tr", {},
    el("td", { class: "num" }, number(call.prompt_tokens)),
    el("td", { class: "num" }, number(call.completion_tokens)),
    el("td", { class: "num" }, `${number(call.cached_tokens)} (${share(call.cached_tokens, call.prompt_tokens)})`),
    el("td", { class: "num" }, call.priority === null ? "–" : String(call.priority)),
    el("td", { class: "num" }, String(call.tier)),
    el("td", { class: "mono" }, call.worker || "–"),
    el("td", { class: "num" }, `${call.queue_ms} ms`),
    el("td", { class: "num" }, `${call.took_ms} ms`),
    el("td", {}, call.fallback ? `fallback ${call.fallback}` : "own"),
    el("td", { class: "num" }, String(call.window))));
  return el("div", { class: "dialog", "data-dialog": dialog.id },
    el("div", {},
      el("span", { class: "title" }, `${dialog.agent} / ${dialog.alias || "?"}`),
      el("span", { class: "session mono", title: "the session id its requests carried" }, dialog.session_id || "–"),
      dialog.parent ? el("span", { class: "muted" }, ` forked from ${dialog.parent_session_id || dialog.parent}`) : null),
    task ? el("div", { class: "task", "data-task": task.id },
      `task ${task.id}: ${taskWords(task)} `, status(task.status)) : null,
    el("div", { class: "muted" },
      `${calls(usage.calls)} · ${number(usage.prompt_tokens)} in · ${number(usage.completion_tokens)} out · ` +
      `${number(usage.cached_tokens)} cached (${share(usage.cached_tokens, usage.prompt_tokens)})`),
    el("table", { class: "calls" },
      el("thead", {}, el("tr", {},
        el("th", { class: "num" }, "In"), el("th", { class: "num" }, "Out"), el("th", { class: "num" }, "Cached"),
        el("th", { class: "num" }, "Priority"), el("th", { class: "num" }, "Tier"), el("th", {}, "Worker"),
        el("th", { class: "num" }, "Queue wait"), el("th", { class: "num" }, "Took"), el("th", {}, "Endpoint"),
        el("th", { class: "num" }, "Window"))),
      el("tbody", {}, rows)));
}

// The run's tasks in the order they started, each with who started it and where it is; a task
// whose dialog has no answered call yet is listed here only.
function taskTable(tasks) {
  return el("table", { id: "tasks" },
    el("thead", {}, el("tr", {},
      el("th", {}, "Task"), el("th", {}, "Subagent"), el("th", {}, "Answered by"), el("th", {}, "Started by"),
      el("th", {}, "Mode"), el("th", {}, "Background"), el("th", {}, "Status"))),
    el("tbody", {}, tasks.map((task) => el("tr", { "data-task": task.id },
      el("td", { class: "mono" }, task.id),
      el("td", {}, task.subagent),
      el("td", {}, task.agent),
      el("td", {}, task.parent_agent),
      el("td", {}, task.mode),
      el("td", {}, task.background ? "yes" : "no"),
      el("td", {}, status(task.status))))));
}

// Arguments are JSON text (as OpenAI's tool calls carry them): shown indented when they parse.
function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return String(text);
  }
}

function toolCalls(calls) {
  if (!calls.length) return el("p", { class: "muted" }, "No tool call.");
  return el("table", { id: "tools" },
    el("thead", {}, el("tr", {}, el("th", {}, "Agent"), el("th", {}, "Tool"), el("th", {}, "Arguments"), el("th", {}, "Result"))),
    el("tbody", {}, calls.map((call) => el("tr", { "data-call": call.id },
      el("td", {}, call.agent),
      el("td", {}, call.tool),
      el("td", {}, el("pre", {}, call.arguments)),
      el("td", {}, call.result === null
        ? el("span", { class: "muted" }, "not answered")
        : el("pre", { class: call.is_error ? "error result" : "result" }, call.result))))));
}

function route() {
  watchers.clear();
  view += 1;
  clearTimeout(retry);
  const match = /^#\/runs\/([^/]+)$/.exec(location.hash);
  let id = null;
  try {
    id = match ? decodeURIComponent(match[1]) : null;
  } catch {
    id = null;
  }
  watchers.add(id ? showRun(id) : showList());
}

window.addEventListener("hashchange", route);
watchRuns();
route();

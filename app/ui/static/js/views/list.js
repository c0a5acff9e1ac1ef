// /ui/ — one row per workload of every known kind, in a namespace or in all of them, a page at a
// time.  The server filters (kind, phases, label selector, minimum GPUs), sorts (`sort=`) and
// pages (`limit`, key-based `continue` tokens: a stack of them gives "Previous"); the page URL
// carries the filters and the order (shareable; each change is a history entry).  The free-text
// filter only narrows the rows of the page on screen.
//
// After the read the page follows the list's stream, with the same filters, from the token of
// its read (`metadata.resumeFrom`: only what changed since, never every row).  Page 1 holds
// every matching row up to its last one: rows are updated, inserted in order and removed in
// place.  A later page updates its rows in place only; a row that comes into (or leaves) its
// range says "the list changed" with a button that reads the page again.  Without streams,
// Refresh and Auto-refresh remain.
// A service that reads several clusters (its rows carry `cluster`): a Cluster column, a selector
// of one cluster or all (`?cluster=` of the page, of the read and of the stream), and the rows of
// a cluster that does not answer dimmed, as the stream of the clusters says.

import { api, ApiError, failure } from "../api.js";
import {
  FLEET, PHASES, age, clear, definitionHref, groupOf, h, phaseChip, place, prune, put, readyBar, setTitle, ui,
  workloadHref,
} from "../dom.js";
import { liveIndicator } from "../live.js";
import { SORTS, compareRows } from "../order.js";
import { openStream } from "../stream.js";

const COLUMNS = [
  // key, label, numeric, the server's sorts [ascending, descending] (first click: descending
  // for numbers); none: not sortable (the server cannot order by it)
  ["name", "Name", false, ["name", null]],
  ["namespace", "Namespace", false, ["namespace", null]],
  ["kind", "Kind", false, null],
  ["phase", "Phase", false, ["phase", "-phase"]],
  ["ready", "Ready", true, null],
  ["gpus", "GPUs", true, ["gpus", "-gpus"]],
  ["age", "Age", true, ["age", "-age"]],
  ["definition", "Definition", false, null],
];
const CLUSTER_COLUMN = ["cluster", "Cluster", false, null];
const NS_KEY = "wlmap.namespaces";
const KINDS_KEY = "wlmap.kinds";
const REFRESH_MS = 15000;
const PAGE_SIZES = [25, 50, 100, 200, 500];
const LIMIT = 50;
const MAX_LIMIT = 5000; // the server's (app/cluster/listing.py)
const GPU = "nvidia.com/gpu"; // what the GPUs column counts by default: other accelerators are named under it

/** What identifies a row in the stream: (cluster,) group, kind, namespace, name. */
function keyOf(r) {
  const w = r.workload || {};
  return [r.cluster || "", groupOf(w.apiVersion), w.kind, w.namespace || "", w.name].join("\u0000");
}

/** The list's filters and order as a page URL says them (old `sort=gpus&order=desc` links too). */
function fromUrl(params) {
  let sort = params.get("sort") || "namespace";
  if (params.get("order") === "desc" && !sort.startsWith("-")) sort = "-" + sort;
  if (!SORTS.includes(sort)) sort = SORTS.includes(sort.replace(/^-/, "")) ? sort.replace(/^-/, "") : "namespace";
  const limit = Number.parseInt(params.get("limit") || "", 10);
  return {
    cluster: params.get("cluster") || "",
    namespace: params.get("namespace") || "",
    kind: params.get("kind") || "",
    phases: (params.get("phase") || "").split(",").map((p) => p.trim()).filter(Boolean),
    selector: params.get("labelSelector") || "",
    minGpus: /^\d+$/.test(params.get("minGpus") || "") ? params.get("minGpus") : "",
    q: params.get("q") || "",
    sort,
    limit: limit >= 1 && limit <= MAX_LIMIT ? limit : LIMIT,
  };
}

function remembered(key) {
  try {
    return JSON.parse(sessionStorage.getItem(key) || "[]");
  } catch {
    return [];
  }
}

function remember(key, values) {
  const all = [...new Set([...remembered(key), ...values.filter(Boolean)])].sort();
  try {
    sessionStorage.setItem(key, JSON.stringify(all.slice(0, 500)));
  } catch { /* ignore */ }
  return all;
}

/** "8 × nvidia.com/mig-1g.10gb": the accelerators a row requests beyond nvidia.com/gpu. */
function acceleratorsOf(r) {
  return Object.entries(r.accelerators || {}).filter(([name, n]) => name !== GPU && n > 0)
    .sort(([a], [b]) => (a < b ? -1 : 1));
}

export function renderList(view) {
  const state = {
    ...fromUrl(new URLSearchParams(location.search)),
    fleet: FLEET || !!new URLSearchParams(location.search).get("cluster"), // rows carry their cluster
    items: [], // the rows of this page, in the server's order
    warnings: [],
    loaded: false,
    token: null, // the continue token this page was read with (null: the first page)
    after: null, // the last row of the page before (this page holds the rows after it)
    back: [], // {token, after} of the pages before, for Previous
    next: null, // the continue token of the next page (null: this is the last)
    bound: null, // with a next page: this page's last row as read (the next page begins after it)
    resume: null, // the stream token of the read
    changed: false, // a later page: rows came into or left its range since it was read
  };
  let timer = null;
  const ages = setInterval(() => later(), 60000); // rows kept on screen: their age moves on
  let stream = null;
  let clusterStream = null; // fleet: which clusters answer (their rows are dimmed when not)
  let streamsOff = false;
  let staleReads = 0; // reads again because the stream's token was too old (bounded: no loop)
  let loads = 0; // the answer of the latest load only is shown
  let frame = 0; // a render is pending (coalesces a burst of events)
  const shown = new Map(); // key -> {row, tr}: the rows on screen
  const flashing = new Set(); // keys of rows a stream event changed since the last render
  const texts = new WeakMap(); // row -> its JSON (to tell a change from a repeat)
  const live = liveIndicator();
  const clusters = new Map(); // fleet: name -> {available, lastError} as last heard
  let clustersLive = false; // … from the stream of the clusters (else from the list's answer)
  let definedKinds = [];
  const cols = () => (state.fleet ? [CLUSTER_COLUMN, ...COLUMNS] : COLUMNS);

  // -- controls ------------------------------------------------------------------------
  const clusterSelect = h("select", { id: "cluster" });
  const clusterField = h("label", { class: ["field", !state.fleet && "hidden"], id: "cluster-field" }, "Cluster",
    clusterSelect);
  const nsInput = h("input", { type: "text", id: "namespace", list: "namespaces", value: state.namespace,
    placeholder: "all namespaces", spellcheck: "false", autocomplete: "off" });
  const nsList = h("datalist", { id: "namespaces" });
  const kindSelect = h("select", { id: "kind" });
  const phaseBoxes = PHASES.map((p) => h("input", { type: "checkbox", value: p, dataset: { phase: p } }));
  const phaseSummary = h("summary", { id: "phase-summary" });
  const phasePicker = h("details", { class: "multi", id: "phase" }, phaseSummary,
    h("div", { class: "multi-menu" }, phaseBoxes.map((box) => h("label", { class: "check" }, box, box.value))));
  const selectorInput = h("input", { type: "text", id: "label-selector", value: state.selector,
    placeholder: "app=web,tier in (gpu,cpu),!canary", spellcheck: "false", autocomplete: "off",
    "aria-describedby": "label-selector-error" });
  const selectorError = h("span", { class: "field-error hidden", id: "label-selector-error", role: "alert" });
  const minGpusInput = h("input", { type: "number", id: "min-gpus", min: 0, step: 1, value: state.minGpus,
    placeholder: "0", "aria-describedby": "min-gpus-error" });
  const minGpusError = h("span", { class: "field-error hidden", id: "min-gpus-error", role: "alert" });
  const search = h("input", { type: "search", id: "filter", value: state.q, placeholder: "name, kind, phase, node…",
    spellcheck: "false", autocomplete: "off" });
  const refresh = h("button", { type: "button", class: "secondary", id: "refresh" }, "Refresh");
  const auto = h("input", { type: "checkbox", id: "auto-refresh" });
  const autoLabel = h("label", { class: "check hidden", id: "auto-refresh-label",
    title: `Reload the list every ${REFRESH_MS / 1000} s (live updates are not available)` }, auto, "Auto-refresh");

  const first = h("button", { type: "button", class: "secondary small", id: "page-first" }, "First page");
  const prev = h("button", { type: "button", class: "secondary small", id: "page-prev" }, "← Previous");
  const next = h("button", { type: "button", class: "secondary small", id: "page-next" }, "Next page →");
  const pageSize = h("select", { id: "page-size", "aria-label": "Rows per page" },
    [...new Set([...PAGE_SIZES, state.limit])].sort((a, b) => a - b)
      .map((n) => h("option", { value: String(n) }, `${n} per page`)));
  pageSize.value = String(state.limit);
  const pageInfo = h("span", { class: "muted", id: "page-info" });
  const pager = h("div", { class: "pager", id: "pager" }, first, prev, pageInfo, next, pageSize);
  const changedNote = h("div", { class: "notice info hidden", id: "list-changed", role: "status" },
    "The list changed since this page was read: workloads came into or left its range. ",
    h("button", { type: "button", class: "small", id: "reread", onclick: () => load() }, "Refresh this page"));

  const stats = h("div", { class: "stats", id: "stats" });
  const notices = h("div", { id: "notices" });
  const tbody = h("tbody");
  const thead = h("thead");
  const table = h("table", { class: "workloads", id: "workloads" }, thead, tbody);
  const body = h("div", { id: "list-body" }, changedNote, table, pager);

  const root = table; // gone from the document: the page was left
  view.append(
    h("div", { class: "page-head" },
      h("div", { class: "title" }, h("h1", {}, "Workloads"),
        h("div", { class: "sub" }, "Every workload of a kind that has a definition, read live from the " +
          (state.fleet ? "clusters." : "cluster."), live.el))),
    notices,
    stats,
    h("div", { class: "card" },
      h("div", { class: "toolbar" },
        clusterField,
        h("label", { class: "field" }, "Namespace", nsInput, nsList),
        h("label", { class: "field" }, "Kind", kindSelect),
        h("div", { class: "field" }, h("span", {}, "Phase"), phasePicker),
        h("label", { class: "field" }, "Label selector", selectorInput, selectorError),
        h("label", { class: "field narrow" }, "Min GPUs", minGpusInput, minGpusError),
        h("label", { class: "field grow", title: "Narrows the rows of the page shown; the other filters ask the server" },
          "Filter this page", search),
        autoLabel,
        refresh),
      body));

  function closePicker(e) { // the phase menu closes on a click elsewhere, as a select does
    if (phasePicker.open && !phasePicker.contains(e.target)) phasePicker.open = false;
  }
  phasePicker.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && phasePicker.open) {
      phasePicker.open = false;
      phaseSummary.focus();
    }
  });

  // -- state <-> URL ---------------------------------------------------------------------
  function urlOf() {
    const q = new URLSearchParams();
    if (state.cluster) q.set("cluster", state.cluster);
    if (state.namespace) q.set("namespace", state.namespace);
    if (state.kind) q.set("kind", state.kind);
    if (state.phases.length) q.set("phase", state.phases.join(","));
    if (state.selector) q.set("labelSelector", state.selector);
    if (state.minGpus) q.set("minGpus", state.minGpus);
    if (state.q) q.set("q", state.q);
    if (state.sort !== "namespace") q.set("sort", state.sort);
    if (state.limit !== LIMIT) q.set("limit", String(state.limit));
    const qs = q.toString();
    return location.pathname + (qs ? "?" + qs : "");
  }

  /** A new query is a history entry (Back returns to the one before); typing in the page filter is not. */
  function syncUrl(entry = true) {
    const url = urlOf();
    if (url === location.pathname + location.search) return;
    if (entry) history.pushState(null, "", url);
    else history.replaceState(null, "", url);
  }

  function showControls() {
    nsInput.value = state.namespace;
    selectorInput.value = state.selector;
    minGpusInput.value = state.minGpus;
    search.value = state.q;
    for (const box of phaseBoxes) box.checked = state.phases.includes(box.value);
    phaseSummary.textContent = state.phases.length ? state.phases.join(", ") : "All phases";
    pageSize.value = String(state.limit);
    renderKinds();
    renderClusters();
    clusterSelect.value = state.cluster;
  }

  function rememberNamespaces(items) {
    const all = remember(NS_KEY, items.map((r) => r.workload.namespace));
    put(nsList, ...all.map((n) => h("option", { value: n })));
  }

  // -- rendering -------------------------------------------------------------------------
  function visible() {
    const words = state.q.toLowerCase().split(/\s+/).filter(Boolean);
    if (!words.length) return state.items;
    return state.items.filter((r) => {
      const hay = [r.workload.name, r.workload.namespace, r.workload.kind, r.workload.apiVersion, r.phase,
        r.reason, r.definition, r.cluster, ...(r.matched || [])].join(" ").toLowerCase();
      return words.every((w) => hay.includes(w));
    });
  }

  function renderKinds() {
    const kinds = new Set([...definedKinds, ...remember(KINDS_KEY, state.items.map((r) => r.workload.kind))]);
    if (state.kind) kinds.add(state.kind);
    const sorted = [...kinds].sort();
    const have = [...kindSelect.options].map((o) => o.value);
    if (have.length !== sorted.length + 1 || sorted.some((k, i) => have[i + 1] !== k)) {
      put(kindSelect, h("option", { value: "" }, "All kinds"), ...sorted.map((k) => h("option", { value: k }, k)));
    }
    kindSelect.value = state.kind;
  }

  function renderClusters() {
    const names = [...clusters.keys()].sort();
    if (state.cluster && !names.includes(state.cluster)) names.push(state.cluster);
    const have = [...clusterSelect.options].map((o) => o.value);
    if (have.length === names.length + 1 && names.every((n, i) => have[i + 1] === n)) return; // as it is
    put(clusterSelect, h("option", { value: "" }, "All clusters"), ...names.map((n) => h("option", { value: n }, n)));
    clusterSelect.value = state.cluster;
  }

  /** The row's cluster does not answer (the row is its last state seen): its error, or "". */
  function unavailable(r) {
    const c = r.cluster ? clusters.get(r.cluster) : null;
    if (c && c.available === false) return c.lastError || "the cluster does not answer";
    if (r.unavailable && !(c && c.available)) return "the cluster does not answer";
    return "";
  }

  function renderHead() {
    put(thead, h("tr", {}, cols().map(([key, label, numeric, sorts]) => {
      if (!sorts) return h("th", { class: [numeric && "num", `col-${key}`] }, label);
      const [asc, desc] = sorts;
      const active = state.sort === asc || state.sort === desc;
      const down = state.sort === desc;
      const th = h("th", { class: ["sortable", numeric && "num", `col-${key}`], dataset: { sort: key }, tabindex: 0,
        "aria-sort": active ? (down ? "descending" : "ascending") : "none",
        title: `Sort by ${label.toLowerCase()}` + (desc ? "" : " (A to Z)") },
      label, h("span", { class: "arrow" }, active ? (down ? "↓" : "↑") : ""));
      const sortBy = () => {
        const to = !active ? (numeric && desc ? desc : asc) : (down ? asc : desc || asc);
        if (to === state.sort) return;
        state.sort = to;
        renderHead();
        thead.querySelector(`th[data-sort="${key}"]`).focus();
        query();
      };
      th.addEventListener("click", sortBy);
      th.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          sortBy();
        }
      });
      return th;
    })));
  }

  function row(r, off) {
    const w = r.workload;
    const ready = r.pods?.ready;
    const desired = r.pods?.desired;
    const dataset = { name: w.name, namespace: w.namespace || "", kind: w.kind };
    if (r.cluster) dataset.cluster = r.cluster;
    const acc = acceleratorsOf(r);
    return h("tr", { class: ["workload-row", off && "unavailable"], dataset },
      state.fleet ? h("td", { class: "cluster" }, r.cluster || "—",
        off ? h("span", { class: "tag warn unavailable-badge", title: `Last state seen: ${off}` }, "unavailable") : null)
        : null,
      h("td", { class: "name" }, h("a", { href: workloadHref(w, r.cluster), class: "workload-link" }, w.name),
        r.error ? h("span", { class: "err" }, r.error) : null,
        r.complete === false ? h("span", { class: "err incomplete", title: (r.errors || []).map((e) => e.message).join("\n") },
          `incomplete: ${(r.errors || []).map((e) => e.component || e.part).filter((x, i, a) => a.indexOf(x) === i).join(", ")} could not be read`) : null),
      h("td", { class: "namespace" }, w.namespace || "—"),
      h("td", { class: "kind-cell" }, h("span", { class: "kind" }, h("span", {}, w.kind),
        h("span", { class: "group" }, w.apiVersion))),
      h("td", { class: "phase" }, r.error ? phaseChip("Error") : phaseChip(r.phase),
        (r.matched || []).length > 1 ? h("span", { class: "faint" }, " +", r.matched.filter((m) => m !== r.phase).join(", ")) : null,
        r.reason ? h("div", { class: "reason faint", title: "why it is not (fully) running" }, r.reason) : null),
      h("td", { class: "ready-cell num" }, desired === null || desired === undefined ? h("span", { class: "faint" }, "—")
        : h("span", { class: "ready" }, h("span", { class: "ready-text" }, `${ready ?? "?"}/${desired}`), readyBar(ready || 0, desired))),
      h("td", { class: "gpus num", title: Object.entries(r.accelerators || {}).map(([k, n]) => `${n} × ${k}`).join("\n") },
        h("span", { class: "gpu-count" }, r.gpus ?? (r.complete === false ? h("span", { class: "faint" }, "unknown") : "—")),
        acc.length ? h("div", { class: "accelerators" }, acc.map(([k, n]) => h("span", { class: "acc", dataset: { resource: k } },
          `${n} × ${k}`))) : null),
      h("td", { class: "age num", title: r.createdAt || "" }, age(r.createdAt)),
      h("td", { class: "definition" }, r.definition
        ? h("a", { href: definitionHref(r.definition), class: "muted" }, r.definition) : h("span", { class: "faint" }, "—")));
  }

  function renderStats(rows) {
    const sum = (f) => rows.reduce((n, r) => n + (f(r) || 0), 0);
    const running = rows.filter((r) => r.phase === "Running" && !r.error).length;
    const trouble = rows.filter((r) => r.error || ["Failed", "Degraded"].includes(r.phase)).length;
    const paged = state.token !== null || state.next !== null;
    const stat = (id, label, value, small) => h("div", { class: "stat", id }, h("div", { class: "label" }, label),
      h("div", { class: "value" }, value, small ? [" ", h("small", {}, small)] : null));
    put(stats,
      stat("stat-workloads", paged ? "Workloads on this page" : "Workloads", rows.length,
        rows.length !== state.items.length ? `of ${state.items.length}` : ""),
      stat("stat-running", "Running", running),
      stat("stat-trouble", "Failed or degraded", trouble),
      stat("stat-pods", "Pods ready", sum((r) => r.pods?.ready), `/ ${sum((r) => r.pods?.desired)}`),
      stat("stat-gpus", "GPUs requested", sum((r) => r.gpus)));
  }

  function renderPager() {
    const page = state.back.length + 1;
    first.disabled = prev.disabled = page === 1;
    next.disabled = !state.next;
    pager.classList.toggle("hidden", page === 1 && !state.next);
    pageInfo.textContent = `Page ${page}` + (state.next ? "" : page > 1 ? " (the last)" : "");
    changedNote.classList.toggle("hidden", !state.changed);
  }

  /** The rows of the page (those the page filter keeps), in the order of `state.items`. */
  function renderRows() {
    cancelAnimationFrame(frame);
    frame = 0;
    const rows = visible();
    renderStats(rows);
    renderPager();
    const flash = new Set(flashing);
    flashing.clear();
    if (!rows.length) {
      shown.clear();
      const where = [state.namespace && `namespace “${state.namespace}”`, state.cluster && `cluster “${state.cluster}”`]
        .filter(Boolean).join(" of ");
      const filtered = state.kind || state.phases.length || state.selector || state.minGpus;
      put(tbody, h("tr", {}, h("td", { colspan: cols().length, class: "empty" }, state.items.length
        ? "No workload on this page matches the filter."
        : filtered ? "No workload matches the filters." : where ? `No workloads in ${where}.` : "No workloads found.")));
      return;
    }
    for (const tr of [...tbody.children]) if (!tr.classList.contains("workload-row")) tr.remove(); // "Loading…", "No …"
    // Rows keep their element while their data is the same; new or changed rows get a new one;
    // then the elements are put in order, moving only those out of place.
    const want = new Set();
    let at = null;
    for (const r of rows) {
      const key = keyOf(r);
      want.add(key);
      let s = shown.get(key);
      const off = unavailable(r);
      if (!s || s.row !== r || s.off !== off) {
        const tr = row(r, off);
        if (flash.has(key)) tr.classList.add("changed");
        if (s) s.tr.replaceWith(tr);
        s = { row: r, tr, off };
        shown.set(key, s);
      } else {
        const cell = s.tr.querySelector("td.age");
        const now = age(r.createdAt);
        if (cell && cell.textContent !== now) cell.textContent = now; // a kept row grows older
      }
      at = place(tbody, at, s.tr);
    }
    prune(shown, (key) => want.has(key), (s) => s.tr);
  }

  function later() {
    if (!frame) frame = requestAnimationFrame(() => {
      frame = 0;
      renderRows();
    });
  }

  // -- the stream ------------------------------------------------------------------------
  const json = (r) => {
    let t = texts.get(r);
    if (t === undefined) texts.set(r, (t = JSON.stringify(r)));
    return t;
  };

  /** The row belongs on this page: after the page before it, up to this page's last row (when
   * a next page exists: that one begins after it, as its token says). */
  function inRange(r) {
    if (state.after && compareRows(state.sort, r, state.after) <= 0) return false;
    return !(state.bound && compareRows(state.sort, r, state.bound) > 0);
  }

  /** One row as the stream tells it (`gone`: deleted, or no longer matching the filters). */
  function upsert(r, gone) {
    const key = keyOf(r);
    const i = state.items.findIndex((x) => keyOf(x) === key);
    const firstPage = state.token === null;
    if (gone) {
      if (i < 0) return false;
      state.items.splice(i, 1);
      return true;
    }
    if (i >= 0 && json(state.items[i]) === json(r)) return false;
    const fits = inRange(r);
    if (!firstPage) { // a later page: in place only; coming or going is told, not done
      if (i >= 0) state.items[i] = r;
      if (fits !== i >= 0) state.changed = true;
      if (i >= 0) flashing.add(key);
      return i >= 0 || state.changed;
    }
    if (i >= 0 && !fits) state.items.splice(i, 1); // its new place is on a later page
    else if (!fits) return false; // it belongs to a later page
    else {
      if (i >= 0) state.items[i] = r;
      else state.items.push(r);
      state.items.sort((a, b) => compareRows(state.sort, a, b));
      flashing.add(key);
    }
    return true;
  }

  /** The stream began with every row (it was opened without a token): the page's rows follow it. */
  function replaceRows(rows) {
    const keys = new Set(rows.map(keyOf));
    let any = false;
    for (const r of [...state.items]) if (!keys.has(keyOf(r))) any = upsert(r, true) || any;
    for (const r of rows) any = upsert(r, false) || any;
    if (any) touched();
  }

  function applyEvent(ev) {
    const r = ev.object;
    if (!r || !r.workload) return;
    if (upsert(r, ev.type === "DELETED")) touched();
  }

  /** The rows changed: kinds, namespaces, rows and figures follow, on the next frame. */
  function touched() {
    const kinds = [...kindSelect.options].map((o) => o.value).filter(Boolean);
    if (state.items.some((r) => r.workload.kind && !kinds.includes(r.workload.kind))) renderKinds();
    const known = new Set([...nsList.options].map((o) => o.value));
    if (state.items.some((r) => r.workload.namespace && !known.has(r.workload.namespace))) rememberNamespaces(state.items);
    live.updated();
    later();
  }

  function scope(q = new URLSearchParams()) {
    if (state.cluster) q.set("cluster", state.cluster);
    if (state.namespace) q.set("namespace", state.namespace);
    if (state.kind) q.set("kind", state.kind);
    if (state.phases.length) q.set("phase", state.phases.join(","));
    if (state.selector) q.set("labelSelector", state.selector);
    if (state.minGpus) q.set("minGpus", state.minGpus);
    return q;
  }

  function follow(fresh = false) {
    stopFollowing();
    if (!root.isConnected || streamsOff) return;
    stream = openStream("/workloads?" + scope(), {
      resumeFrom: fresh ? null : state.resume,
      onSnapshot: replaceRows,
      onEvent: applyEvent,
      onStale: () => { // the service cannot resume from the read's token (restarted, another replica)
        if (++staleReads <= 2) load();
        else follow(true); // twice in a row: a stream from a snapshot, rather than reading for ever
      },
      onStatus: (st, why) => {
        if (!root.isConnected) return dispose();
        live.status(st, why);
        if (st === "live") staleReads = 0;
        if (st === "off") streamsOff = true; // this service has none: Refresh and Auto-refresh it is
        const streaming = st !== "off" && st !== "paused";
        autoLabel.classList.toggle("hidden", streaming);
        if (streaming && auto.checked) { // the stream does better than a timer
          auto.checked = false;
          auto.dispatchEvent(new Event("change"));
        }
      },
    });
  }

  function stopFollowing() {
    if (stream) stream.close();
    stream = null;
  }

  /** Fleet: the stream of the clusters, for the selector and for the rows of a cluster that is down. */
  function followClusters() {
    if (clusterStream || !state.fleet || !root.isConnected) return;
    const heard = (c) => {
      const before = clusters.get(c.name);
      clusters.set(c.name, { available: c.available, lastError: c.lastError });
      // the cluster chosen is back: read its rows again (its read failed while it was down)
      if (c.available && before && !before.available && c.name === state.cluster && !state.loaded) load();
    };
    clusterStream = openStream("/clusters", {
      onSnapshot: (items) => {
        clustersLive = true;
        clusters.clear();
        for (const c of items) heard(c);
        renderClusters();
        later();
      },
      onEvent: (ev) => {
        const c = ev.object;
        if (!c || !c.name) return;
        if (ev.type === "DELETED") clusters.delete(c.name);
        else heard(c);
        renderClusters();
        later();
      },
      onStatus: () => {
        if (!root.isConnected) dispose();
      }, // (this one is not what the live indicator tells; without the right to /clusters it pauses)
    });
  }

  function dispose() {
    stopFollowing();
    if (clusterStream) clusterStream.close();
    clusterStream = null;
    clearInterval(timer);
    clearInterval(ages);
    cancelAnimationFrame(frame);
    window.removeEventListener("popstate", popped);
    document.removeEventListener("click", closePicker);
  }

  // -- loading ---------------------------------------------------------------------------
  /** A 400 about one of the filters goes next to its field; true when it was one of those. */
  function fieldProblem(err) {
    if (!(err instanceof ApiError) || err.status !== 400) return false;
    const detail = String(err.problem.detail || "");
    const field = detail.startsWith("labelSelector") ? [selectorInput, selectorError]
      : detail.startsWith("minGpus") ? [minGpusInput, minGpusError] : null;
    if (!field) return false;
    field[0].setAttribute("aria-invalid", "true");
    field[1].textContent = detail.replace(/^\w+:\s*/, "");
    field[1].title = err.problem.title || "";
    field[1].classList.remove("hidden");
    return true;
  }

  function clearFieldProblems() {
    for (const [input, error] of [[selectorInput, selectorError], [minGpusInput, minGpusError]]) {
      input.removeAttribute("aria-invalid");
      error.textContent = "";
      error.classList.add("hidden");
    }
  }

  async function load() {
    const mine = ++loads;
    const q = scope();
    if (state.sort !== "namespace") q.set("sort", state.sort);
    q.set("limit", String(state.limit));
    if (state.token) q.set("continue", state.token);
    refresh.disabled = true;
    if (!state.loaded) put(tbody, h("tr", {}, h("td", { colspan: cols().length, class: "loading" }, "Loading…")));
    try {
      const data = await api("/workloads?" + q);
      if (mine !== loads) return;
      clearFieldProblems();
      state.items = data.items || [];
      state.warnings = data.warnings || [];
      state.next = data.metadata?.continue || null;
      state.bound = state.next ? state.items[state.items.length - 1] || null : null;
      state.resume = data.metadata?.resumeFrom || null;
      state.changed = false;
      state.loaded = true;
      const fleet = state.fleet || Array.isArray(data.clusters) || state.items.some((r) => r.cluster);
      if (fleet !== state.fleet) {
        state.fleet = fleet;
        clusterField.classList.toggle("hidden", !fleet);
        renderHead();
      }
      for (const c of data.clusters || []) {
        if (!clustersLive || !clusters.has(c.name)) clusters.set(c.name, { available: c.available, lastError: null });
      }
      renderClusters();
      followClusters();
      flashing.clear(); // a reload is not a change to point at
      clear(notices);
      if (state.warnings.length) {
        notices.append(h("div", { class: "notice warn", id: "warnings" }, h("h2", {}, "Some workloads may be missing"),
          h("ul", {}, state.warnings.map((w) => h("li", {}, w)))));
      }
      body.classList.remove("hidden");
      stats.classList.remove("hidden");
      rememberNamespaces(state.items);
      renderKinds();
      renderRows();
      live.updated();
      follow(); // from the read's token: what changed since the read, nothing missed in between
    } catch (err) {
      if (mine !== loads) return;
      stopFollowing();
      live.status("paused", err.message);
      state.loaded = false;
      state.items = [];
      if (fieldProblem(err)) { // the page stays; the field says what the server objects to
        clear(notices);
        body.classList.remove("hidden");
        stats.classList.add("hidden");
        shown.clear();
        pager.classList.add("hidden");
        put(tbody, h("tr", {}, h("td", { colspan: cols().length, class: "empty" }, "Correct the filter to list workloads.")));
        return;
      }
      clearFieldProblems();
      body.classList.add("hidden");
      stats.classList.add("hidden");
      put(notices, explain(err, load));
    } finally {
      if (mine === loads) refresh.disabled = false;
    }
  }

  /** Back to page 1; the stream of the page left stops (the next one opens after its read). */
  function toFirstPage() {
    state.token = null;
    state.after = null;
    state.back = [];
    stopFollowing();
  }

  /** The query changed (scope, filters, order, page size): its first page, a history entry. */
  function query() {
    toFirstPage(); // nothing more of the old query; the new one's stream opens after its read
    syncUrl();
    title();
    load();
  }

  /** Back or Forward between this page's own entries: the query the URL says. */
  function popped() {
    Object.assign(state, fromUrl(new URLSearchParams(location.search)));
    showControls();
    renderHead();
    toFirstPage();
    title();
    load();
  }

  const title = () => setTitle(state.namespace || "All namespaces", state.cluster && `cluster ${state.cluster}`,
    "Workloads");
  /** A text field asks the server on change, and on Enter. */
  const committed = (input, apply) => {
    input.addEventListener("change", () => {
      apply(input.value.trim());
      query();
    });
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") input.dispatchEvent(new Event("change"));
    });
  };
  committed(nsInput, (v) => { state.namespace = v; });
  committed(selectorInput, (v) => { state.selector = v; });
  committed(minGpusInput, (v) => { state.minGpus = v && v !== "0" ? v : ""; });
  clusterSelect.addEventListener("change", () => {
    state.cluster = clusterSelect.value;
    query();
  });
  kindSelect.addEventListener("change", () => {
    state.kind = kindSelect.value;
    query();
  });
  for (const box of phaseBoxes) {
    box.addEventListener("change", () => {
      state.phases = phaseBoxes.filter((b) => b.checked).map((b) => b.value);
      phaseSummary.textContent = state.phases.length ? state.phases.join(", ") : "All phases";
      query();
    });
  }
  pageSize.addEventListener("change", () => {
    state.limit = Number(pageSize.value) || LIMIT;
    query();
  });
  search.addEventListener("input", () => {
    state.q = search.value.trim();
    syncUrl(false);
    renderRows();
  });
  next.addEventListener("click", () => {
    if (!state.next) return;
    state.back.push({ token: state.token, after: state.after });
    state.token = state.next;
    state.after = state.bound;
    stopFollowing();
    load();
  });
  prev.addEventListener("click", () => {
    if (!state.back.length) return;
    ({ token: state.token, after: state.after } = state.back.pop());
    stopFollowing();
    load();
  });
  first.addEventListener("click", () => {
    toFirstPage();
    load();
  });
  refresh.addEventListener("click", () => load());
  auto.addEventListener("change", () => {
    clearInterval(timer);
    timer = auto.checked ? setInterval(() => { if (!document.hidden) load(); }, REFRESH_MS) : null;
  });
  window.addEventListener("popstate", popped);
  document.addEventListener("click", closePicker);

  api("/definitions").then((list) => { // every kind that has a definition, for the Kind filter
    definedKinds = (list.items || []).filter((d) => d.state === "active" && d.kind).map((d) => d.kind);
    if (root.isConnected) renderKinds();
  }).catch(() => { /* the kinds seen in the rows do */ });

  title();
  rememberNamespaces([]);
  showControls();
  renderClusters();
  followClusters();
  renderHead();
  load();
  return dispose;
}

function explain(err, retry) {
  if (err instanceof ApiError && err.status === 501) {
    return h("div", { class: "notice info", id: "no-cluster" },
      h("h2", {}, "No cluster configured"),
      h("p", {}, "This service runs without cluster access, so there are no live workloads to list. Start it with ",
        h("code", {}, "wlmap serve --kubeconfig ~/.kube/config"), " (or run it in a cluster) to see them here."),
      h("p", {}, "You can still ", h("a", { href: ui("/interpret"), id: "to-interpret" }, "interpret a manifest"),
        ": paste a workload (and optionally a definition) and see its tree."));
  }
  return failure(err, retry, "Could not list workloads");
}

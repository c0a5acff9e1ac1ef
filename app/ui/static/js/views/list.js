// /ui/ — one row per workload of every known kind, in a namespace or in all of them.  After the
// first answer the page follows the list's stream: rows are updated, inserted and removed in
// place (sort, filters and figures kept); without streams, Refresh and Auto-refresh remain.
// A service that reads several clusters (its rows carry `cluster`): a Cluster column, a selector
// of one cluster or all (`?cluster=` of the page, of the read and of the stream), and the rows of
// a cluster that does not answer dimmed, as the stream of the clusters says.

import { api, ApiError, failure } from "../api.js";
import {
  FLEET, PHASES, age, clear, definitionHref, groupOf, h, phaseChip, place, prune, put, readyBar, setTitle, ui,
  workloadHref,
} from "../dom.js";
import { liveIndicator } from "../live.js";
import { openStream } from "../stream.js";

const COLUMNS = [
  // key, label, numeric (first click sorts descending), value for sorting
  ["name", "Name", false, (r) => r.workload.name || ""],
  ["namespace", "Namespace", false, (r) => r.workload.namespace || ""],
  ["kind", "Kind", false, (r) => r.workload.kind || ""],
  ["phase", "Phase", false, (r) => phaseRank(r)],
  ["ready", "Ready", true, (r) => [r.pods?.ready ?? -1, r.pods?.desired ?? -1]],
  ["gpus", "GPUs", true, (r) => r.gpus ?? -1],
  ["age", "Age", true, (r) => (r.createdAt ? -Date.parse(r.createdAt) : -Infinity)],
  ["definition", "Definition", false, (r) => r.definition || ""],
];
const CLUSTER_COLUMN = ["cluster", "Cluster", false, (r) => r.cluster || ""];
const NS_KEY = "wlmap.namespaces";
const REFRESH_MS = 15000;

function phaseRank(r) {
  if (r.error) return -1;
  const i = PHASES.indexOf(r.phase);
  return i < 0 ? PHASES.length : i;
}

/** What identifies a row in the stream: (cluster,) group, kind, namespace, name. */
function keyOf(r) {
  const w = r.workload || {};
  return [r.cluster || "", groupOf(w.apiVersion), w.kind, w.namespace || "", w.name].join("\u0000");
}

function cmp(a, b) {
  if (Array.isArray(a)) {
    for (let i = 0; i < a.length; i++) {
      const c = cmp(a[i], b[i]);
      if (c) return c;
    }
    return 0;
  }
  if (typeof a === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true, sensitivity: "base" });
}

export function renderList(view) {
  const params = new URLSearchParams(location.search);
  const state = {
    cluster: params.get("cluster") || "",
    fleet: FLEET || !!params.get("cluster"), // rows carry their cluster
    namespace: params.get("namespace") || "",
    kind: params.get("kind") || "",
    phase: params.get("phase") || "",
    q: params.get("q") || "",
    sort: params.get("sort") || "namespace",
    desc: params.get("order") === "desc",
    items: [],
    warnings: [],
    loaded: false,
  };
  let timer = null;
  const ages = setInterval(() => later(), 60000); // rows kept on screen: their age moves on
  let stream = null;
  let clusterStream = null; // fleet: which clusters answer (their rows are dimmed when not)
  let streamsOff = false;
  let loads = 0; // the answer of the latest load only is shown
  let frame = 0; // a render is pending (coalesces a burst of events)
  const shown = new Map(); // key -> {row, tr}: the rows on screen
  const changed = new Set(); // keys of rows a stream event changed since the last render
  const texts = new WeakMap(); // row -> its JSON (to tell a change from a repeat)
  const live = liveIndicator();
  const clusters = new Map(); // fleet: name -> {available, lastError} as last heard
  let clustersLive = false; // … from the stream of the clusters (else from the list's answer)
  const cols = () => (state.fleet ? [CLUSTER_COLUMN, ...COLUMNS] : COLUMNS);

  // -- controls ------------------------------------------------------------------------
  const clusterSelect = h("select", { id: "cluster" });
  const clusterField = h("label", { class: ["field", !state.fleet && "hidden"], id: "cluster-field" }, "Cluster",
    clusterSelect);
  const nsInput = h("input", { type: "text", id: "namespace", list: "namespaces", value: state.namespace,
    placeholder: "all namespaces", spellcheck: "false", autocomplete: "off" });
  const nsList = h("datalist", { id: "namespaces" });
  const kindSelect = h("select", { id: "kind" });
  const phaseSelect = h("select", { id: "phase" }, h("option", { value: "" }, "All phases"),
    [...PHASES, "Error"].map((p) => h("option", { value: p }, p)));
  phaseSelect.value = state.phase;
  const search = h("input", { type: "search", id: "filter", value: state.q, placeholder: "name, kind, phase, node…",
    spellcheck: "false", autocomplete: "off" });
  const refresh = h("button", { type: "button", class: "secondary", id: "refresh" }, "Refresh");
  const auto = h("input", { type: "checkbox", id: "auto-refresh" });
  const autoLabel = h("label", { class: "check hidden", id: "auto-refresh-label",
    title: `Reload the list every ${REFRESH_MS / 1000} s (live updates are not available)` }, auto, "Auto-refresh");

  const stats = h("div", { class: "stats", id: "stats" });
  const notices = h("div", { id: "notices" });
  const tbody = h("tbody");
  const thead = h("thead");
  const table = h("table", { class: "workloads", id: "workloads" }, thead, tbody);
  const body = h("div", { id: "list-body" }, table);

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
        h("label", { class: "field" }, "Phase", phaseSelect),
        h("label", { class: "field grow" }, "Filter", search),
        autoLabel,
        refresh),
      body));

  // -- state <-> URL ---------------------------------------------------------------------
  function syncUrl() {
    const q = new URLSearchParams();
    if (state.cluster) q.set("cluster", state.cluster);
    if (state.namespace) q.set("namespace", state.namespace);
    if (state.kind) q.set("kind", state.kind);
    if (state.phase) q.set("phase", state.phase);
    if (state.q) q.set("q", state.q);
    if (state.sort !== "namespace" || state.desc) {
      q.set("sort", state.sort);
      if (state.desc) q.set("order", "desc");
    }
    const qs = q.toString();
    history.replaceState(null, "", location.pathname + (qs ? "?" + qs : ""));
  }

  function rememberNamespaces(items) {
    let known = [];
    try {
      known = JSON.parse(sessionStorage.getItem(NS_KEY) || "[]");
    } catch { /* ignore */ }
    const all = [...new Set([...known, ...items.map((r) => r.workload.namespace).filter(Boolean)])].sort();
    try {
      sessionStorage.setItem(NS_KEY, JSON.stringify(all.slice(0, 500)));
    } catch { /* ignore */ }
    put(nsList, ...all.map((n) => h("option", { value: n })));
  }

  // -- rendering -------------------------------------------------------------------------
  function visible() {
    const words = state.q.toLowerCase().split(/\s+/).filter(Boolean);
    return state.items.filter((r) => {
      if (state.kind && r.workload.kind !== state.kind) return false;
      if (state.phase && (r.error ? "Error" : r.phase) !== state.phase) return false;
      if (!words.length) return true;
      const hay = [r.workload.name, r.workload.namespace, r.workload.kind, r.workload.apiVersion, r.phase,
        r.definition, r.cluster, ...(r.matched || [])].join(" ").toLowerCase();
      return words.every((w) => hay.includes(w));
    });
  }

  function renderKinds() {
    const kinds = [...new Set(state.items.map((r) => r.workload.kind).filter(Boolean))].sort();
    if (state.kind && !kinds.includes(state.kind)) kinds.push(state.kind);
    put(kindSelect, h("option", { value: "" }, "All kinds"), ...kinds.map((k) => h("option", { value: k }, k)));
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
    put(thead, h("tr", {}, cols().map(([key, label, numeric]) => {
      const active = state.sort === key;
      const th = h("th", { class: ["sortable", numeric && "num", `col-${key}`], dataset: { sort: key }, tabindex: 0,
        "aria-sort": active ? (state.desc ? "descending" : "ascending") : "none", title: `Sort by ${label.toLowerCase()}` },
      label, h("span", { class: "arrow" }, active ? (state.desc ? "↓" : "↑") : ""));
      const sortBy = () => {
        if (state.sort === key) state.desc = !state.desc;
        else {
          state.sort = key;
          state.desc = numeric;
        }
        syncUrl();
        renderRows();
        thead.querySelector(`th[data-sort="${key}"]`).focus();
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
        (r.matched || []).length > 1 ? h("span", { class: "faint" }, " +", r.matched.filter((m) => m !== r.phase).join(", ")) : null),
      h("td", { class: "ready-cell num" }, desired === null || desired === undefined ? h("span", { class: "faint" }, "—")
        : h("span", { class: "ready" }, h("span", { class: "ready-text" }, `${ready ?? "?"}/${desired}`), readyBar(ready || 0, desired))),
      h("td", { class: "gpus num" }, r.gpus ?? (r.complete === false ? h("span", { class: "faint" }, "unknown") : "—")),
      h("td", { class: "age num", title: r.createdAt || "" }, age(r.createdAt)),
      h("td", { class: "definition" }, r.definition
        ? h("a", { href: definitionHref(r.definition), class: "muted" }, r.definition) : h("span", { class: "faint" }, "—")));
  }

  function renderStats(rows) {
    const sum = (f) => rows.reduce((n, r) => n + (f(r) || 0), 0);
    const running = rows.filter((r) => r.phase === "Running" && !r.error).length;
    const trouble = rows.filter((r) => r.error || ["Failed", "Degraded"].includes(r.phase)).length;
    const stat = (id, label, value, small) => h("div", { class: "stat", id }, h("div", { class: "label" }, label),
      h("div", { class: "value" }, value, small ? [" ", h("small", {}, small)] : null));
    put(stats, 
      stat("stat-workloads", "Workloads", rows.length, rows.length !== state.items.length ? `of ${state.items.length}` : ""),
      stat("stat-running", "Running", running),
      stat("stat-trouble", "Failed or degraded", trouble),
      stat("stat-pods", "Pods ready", sum((r) => r.pods?.ready), `/ ${sum((r) => r.pods?.desired)}`),
      stat("stat-gpus", "GPUs requested", sum((r) => r.gpus)));
  }

  /** The rows as the filters and the order say; `head`: the header too (a new order). */
  function renderRows(head = true) {
    cancelAnimationFrame(frame);
    frame = 0;
    if (head) renderHead();
    const col = cols().find((c) => c[0] === state.sort) || COLUMNS[1];
    const rows = visible();
    const key = col[3];
    rows.sort((a, b) => {
      const c = cmp(key(a), key(b)) || cmp(a.workload.namespace || "", b.workload.namespace || "") ||
        cmp(a.workload.name, b.workload.name) || cmp(a.cluster || "", b.cluster || "");
      return state.desc ? -c : c;
    });
    renderStats(rows);
    const flash = new Set(changed);
    changed.clear();
    if (!rows.length) {
      shown.clear();
      const where = [state.namespace && `namespace “${state.namespace}”`, state.cluster && `cluster “${state.cluster}”`]
        .filter(Boolean).join(" of ");
      put(tbody, h("tr", {}, h("td", { colspan: cols().length, class: "empty" }, state.items.length
        ? "No workload matches the filter."
        : where ? `No workloads in ${where}.` : "No workloads found.")));
      return;
    }
    for (const tr of [...tbody.children]) if (!tr.classList.contains("workload-row")) tr.remove(); // "Loading…", "No …"
    // Rows keep their element while their data is the same; new or changed rows get a new one;
    // then the elements are put in order, moving only those out of place.
    const want = new Set();
    let prev = null;
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
      prev = place(tbody, prev, s.tr);
    }
    prune(shown, (key) => want.has(key), (s) => s.tr);
  }

  function later() {
    if (!frame) frame = requestAnimationFrame(() => {
      frame = 0;
      renderRows(false);
    });
  }

  // -- the stream ------------------------------------------------------------------------
  const json = (r) => {
    let t = texts.get(r);
    if (t === undefined) texts.set(r, (t = JSON.stringify(r)));
    return t;
  };

  /** `rows` replaces the rows in the stream's scope (all, or those of the kind filtered). */
  function replaceRows(rows) {
    const before = new Map(state.items.map((r) => [keyOf(r), r]));
    const inScope = (r) => !state.kind || r.workload.kind === state.kind;
    const next = state.items.filter((r) => !inScope(r));
    for (const r of rows) {
      const old = before.get(keyOf(r));
      if (old && json(old) === json(r)) next.push(old); // the same: keep its row on screen
      else {
        changed.add(keyOf(r));
        next.push(r);
      }
    }
    const keys = new Set(rows.map(keyOf));
    const gone = state.items.some((r) => inScope(r) && !keys.has(keyOf(r)));
    const same = next.length === state.items.length && !changed.size && !gone;
    state.items = next;
    if (!same) touched();
  }

  function applyEvent(ev) {
    const r = ev.object;
    if (!r || !r.workload) return;
    const key = keyOf(r);
    const i = state.items.findIndex((x) => keyOf(x) === key);
    if (ev.type === "DELETED") {
      if (i >= 0) state.items.splice(i, 1);
    } else if (i >= 0) {
      if (json(state.items[i]) === json(r)) return;
      state.items[i] = r;
      changed.add(key);
    } else {
      state.items.push(r);
      changed.add(key);
    }
    touched();
  }

  /** The items changed: kinds, namespaces, rows and figures follow, on the next frame. */
  function touched() {
    const kinds = [...kindSelect.options].map((o) => o.value).filter(Boolean);
    if (state.items.some((r) => r.workload.kind && !kinds.includes(r.workload.kind))) renderKinds();
    const known = new Set([...nsList.options].map((o) => o.value));
    if (state.items.some((r) => r.workload.namespace && !known.has(r.workload.namespace))) rememberNamespaces(state.items);
    live.updated();
    later();
  }

  function streamPath() {
    const q = new URLSearchParams();
    if (state.cluster) q.set("cluster", state.cluster);
    if (state.namespace) q.set("namespace", state.namespace);
    if (state.kind) q.set("kind", state.kind);
    return "/workloads" + (q.toString() ? "?" + q : "");
  }

  function follow() {
    stopFollowing();
    if (!root.isConnected || streamsOff) return;
    stream = openStream(streamPath(), {
      onSnapshot: replaceRows,
      onEvent: applyEvent,
      onStatus: (st, why) => {
        if (!root.isConnected) return dispose();
        live.status(st, why);
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
  }

  // -- loading ---------------------------------------------------------------------------
  async function load() {
    const mine = ++loads;
    const q = new URLSearchParams();
    if (state.cluster) q.set("cluster", state.cluster);
    if (state.namespace) q.set("namespace", state.namespace);
    refresh.disabled = true;
    if (!state.loaded) put(tbody, h("tr", {}, h("td", { colspan: cols().length, class: "loading" }, "Loading…")));
    try {
      const data = await api("/workloads" + (q.toString() ? "?" + q : ""));
      if (mine !== loads) return;
      state.items = data.items || [];
      state.warnings = data.warnings || [];
      state.loaded = true;
      const fleet = state.fleet || Array.isArray(data.clusters) || state.items.some((r) => r.cluster);
      if (fleet !== state.fleet) {
        state.fleet = fleet;
        clusterField.classList.toggle("hidden", !fleet);
      }
      for (const c of data.clusters || []) {
        if (!clustersLive || !clusters.has(c.name)) clusters.set(c.name, { available: c.available, lastError: null });
      }
      renderClusters();
      followClusters();
      changed.clear(); // a reload is not a change to point at
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
      follow(); // from a fresh state (its snapshot replaces this answer: nothing is missed in between)
    } catch (err) {
      if (mine !== loads) return;
      stopFollowing();
      live.status("paused", err.message);
      state.loaded = false;
      body.classList.add("hidden");
      stats.classList.add("hidden");
      put(notices, explain(err, load));
    } finally {
      if (mine === loads) refresh.disabled = false;
    }
  }

  const title = () => setTitle(state.namespace || "All namespaces", state.cluster && `cluster ${state.cluster}`,
    "Workloads");
  nsInput.addEventListener("change", () => {
    state.namespace = nsInput.value.trim();
    stopFollowing(); // nothing more of the namespace left; the new one's stream opens after its list
    syncUrl();
    title();
    load();
  });
  clusterSelect.addEventListener("change", () => {
    state.cluster = clusterSelect.value;
    stopFollowing(); // as for a namespace: the cluster's stream opens after its list
    syncUrl();
    title();
    load();
  });
  nsInput.addEventListener("keydown", (e) => {
    if (e.key === "Enter") nsInput.dispatchEvent(new Event("change"));
  });
  kindSelect.addEventListener("change", () => {
    state.kind = kindSelect.value;
    syncUrl();
    renderRows();
    if (state.loaded) follow(); // the stream of that kind (or of all)
  });
  phaseSelect.addEventListener("change", () => {
    state.phase = phaseSelect.value;
    syncUrl();
    renderRows();
  });
  search.addEventListener("input", () => {
    state.q = search.value.trim();
    syncUrl();
    renderRows();
  });
  refresh.addEventListener("click", load);
  auto.addEventListener("change", () => {
    clearInterval(timer);
    timer = auto.checked ? setInterval(() => { if (!document.hidden) load(); }, REFRESH_MS) : null;
  });

  title();
  rememberNamespaces([]);
  renderKinds();
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

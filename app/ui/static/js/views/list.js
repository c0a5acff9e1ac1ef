// /ui/ — one row per workload of every known kind, in a namespace or in all of them.

import { api, ApiError, failure } from "../api.js";
import {
  PHASES, age, clear, definitionHref, h, phaseChip, put, readyBar, setTitle, ui, workloadHref,
} from "../dom.js";

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
const NS_KEY = "wlmap.namespaces";
const REFRESH_MS = 15000;

function phaseRank(r) {
  if (r.error) return -1;
  const i = PHASES.indexOf(r.phase);
  return i < 0 ? PHASES.length : i;
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

  // -- controls ------------------------------------------------------------------------
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
  const updated = h("span", { class: "faint", id: "updated" });

  const stats = h("div", { class: "stats", id: "stats" });
  const notices = h("div", { id: "notices" });
  const tbody = h("tbody");
  const thead = h("thead");
  const table = h("table", { class: "workloads", id: "workloads" }, thead, tbody);
  const body = h("div", { id: "list-body" }, table);

  view.append(
    h("div", { class: "page-head" },
      h("div", { class: "title" }, h("h1", {}, "Workloads"),
        h("div", { class: "sub" }, "Every workload of a kind that has a definition, read live from the cluster.", updated))),
    notices,
    stats,
    h("div", { class: "card" },
      h("div", { class: "toolbar" },
        h("label", { class: "field" }, "Namespace", nsInput, nsList),
        h("label", { class: "field" }, "Kind", kindSelect),
        h("label", { class: "field" }, "Phase", phaseSelect),
        h("label", { class: "field grow" }, "Filter", search),
        h("label", { class: "check" }, auto, "Auto-refresh"),
        refresh),
      body));

  // -- state <-> URL ---------------------------------------------------------------------
  function syncUrl() {
    const q = new URLSearchParams();
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
        r.definition, ...(r.matched || [])].join(" ").toLowerCase();
      return words.every((w) => hay.includes(w));
    });
  }

  function renderKinds() {
    const kinds = [...new Set(state.items.map((r) => r.workload.kind).filter(Boolean))].sort();
    if (state.kind && !kinds.includes(state.kind)) kinds.push(state.kind);
    put(kindSelect, h("option", { value: "" }, "All kinds"), ...kinds.map((k) => h("option", { value: k }, k)));
    kindSelect.value = state.kind;
  }

  function renderHead() {
    put(thead, h("tr", {}, COLUMNS.map(([key, label, numeric]) => {
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

  function row(r) {
    const w = r.workload;
    const ready = r.pods?.ready;
    const desired = r.pods?.desired;
    return h("tr", { class: "workload-row", dataset: { name: w.name, namespace: w.namespace || "", kind: w.kind } },
      h("td", { class: "name" }, h("a", { href: workloadHref(w), class: "workload-link" }, w.name),
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

  function renderRows() {
    renderHead();
    const col = COLUMNS.find((c) => c[0] === state.sort) || COLUMNS[1];
    const rows = visible();
    const key = col[3];
    rows.sort((a, b) => {
      const c = cmp(key(a), key(b)) || cmp(a.workload.namespace || "", b.workload.namespace || "") ||
        cmp(a.workload.name, b.workload.name);
      return state.desc ? -c : c;
    });
    renderStats(rows);
    clear(tbody);
    if (!rows.length) {
      tbody.append(h("tr", {}, h("td", { colspan: COLUMNS.length, class: "empty" }, state.items.length
        ? "No workload matches the filter."
        : state.namespace ? `No workloads in namespace “${state.namespace}”.` : "No workloads found.")));
      return;
    }
    tbody.append(...rows.map(row));
  }

  // -- loading ---------------------------------------------------------------------------
  async function load() {
    const q = new URLSearchParams();
    if (state.namespace) q.set("namespace", state.namespace);
    refresh.disabled = true;
    if (!state.loaded) put(tbody, h("tr", {}, h("td", { colspan: COLUMNS.length, class: "loading" }, "Loading…")));
    try {
      const data = await api("/workloads" + (q.toString() ? "?" + q : ""));
      state.items = data.items || [];
      state.warnings = data.warnings || [];
      state.loaded = true;
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
      updated.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    } catch (err) {
      state.loaded = false;
      body.classList.add("hidden");
      stats.classList.add("hidden");
      put(notices, explain(err, load));
    } finally {
      refresh.disabled = false;
    }
  }

  nsInput.addEventListener("change", () => {
    state.namespace = nsInput.value.trim();
    syncUrl();
    setTitle(state.namespace || "All namespaces", "Workloads");
    load();
  });
  nsInput.addEventListener("keydown", (e) => {
    if (e.key === "Enter") nsInput.dispatchEvent(new Event("change"));
  });
  kindSelect.addEventListener("change", () => {
    state.kind = kindSelect.value;
    syncUrl();
    renderRows();
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

  setTitle(state.namespace || "All namespaces", "Workloads");
  rememberNamespaces([]);
  renderKinds();
  renderHead();
  load();
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

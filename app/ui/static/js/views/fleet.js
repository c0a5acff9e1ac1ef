// /ui/fleet — every cluster the service reads: its server and version, whether it answers and has
// synced (else its last error), its workloads and the GPUs they request, by phase, and every
// accelerator resource they request (MIG slices, other vendors' devices).  After the
// first answer the page follows the stream of the clusters (`GET /clusters?watch=true`), so a
// cluster that goes down, comes back or whose counts change is redrawn in place, without Refresh.
// Free capacity (accelerators free of allocatable, per node pool) is not on the stream: it is
// read with GET /clusters every CAPACITY_EVERY ms, and shown only where the caller may list nodes.

import { api, ApiError, failure } from "../api.js";
import { FLEET, PHASES, age, h, listHref, phaseClass, place, prune, put, setTitle, ui } from "../dom.js";
import { liveIndicator } from "../live.js";
import { openStream } from "../stream.js";

const STATES = { // data-state: chip text, chip class
  ready: ["available · synced", "phase-running"],
  syncing: ["available · syncing", "phase-initializing"],
  unavailable: ["unavailable", "phase-failed"],
};

function stateOf(c) {
  if (!c.available) return "unavailable";
  return c.synced ? "ready" : "syncing";
}

/** The phases of a cluster in the usual order of phases (others after them, by name). */
function phasesOf(c) {
  const rank = (p) => (PHASES.includes(p) ? PHASES.indexOf(p) : PHASES.length);
  return Object.entries(c.phases || {}).sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b));
}

const fmt = (n) => (n === null || n === undefined ? "—" : String(n));
const CAPACITY_EVERY = 10000;
const ACCELERATOR = /gpu|mig-|neuron|gaudi|tpu/; // the resources shown as accelerators

/** The accelerator resources of figures (`allocatableValues`), by name. */
function acceleratorsOf(values) {
  return Object.keys(values || {}).filter((r) => ACCELERATOR.test(r)).sort();
}

/** Free capacity: per accelerator, free of allocatable; per node pool, the same and the most
 * free on one node; or why there is none. */
function capacity(c) {
  if (c.capacityVisible === undefined) return null; // not read yet
  const box = h("div", { class: "c-capacity", dataset: { state: c.capacityState || "" } });
  if (!c.capacityVisible) {
    box.append(h("p", { class: "faint capacity-hidden" }, "Capacity hidden: your account may not list nodes here."));
    return box;
  }
  const cap = c.capacity;
  if (!cap) {
    box.append(h("p", { class: "faint capacity-none" }, `Capacity ${c.capacityState}: ${c.capacityReason || ""}`));
    return box;
  }
  const accs = acceleratorsOf(cap.allocatableValues);
  box.append(h("div", { class: "label" }, "Free now"),
    h("ul", { class: "c-free", "aria-label": "Accelerators free" },
      accs.length
        ? accs.map((r) => h("li", { dataset: { resource: r } },
          h("b", { class: "free" }, String(cap.freeValues[r] ?? 0)), ` of ${cap.allocatableValues[r]} ${r}`))
        : h("li", { class: "faint" }, "no accelerators"),
      h("li", { class: "c-nodes" }, `${cap.nodes.schedulable} of ${cap.nodes.total} nodes schedulable`)));
  const pools = (cap.pools || []).filter((p) => acceleratorsOf(p.allocatableValues).length);
  if (pools.length) {
    box.append(h("table", { class: "pools" },
      h("thead", {}, h("tr", {}, h("th", {}, "Pool"), h("th", { class: "num" }, "Nodes"),
        h("th", {}, "Free"), h("th", {}, "Most on one node"))),
      h("tbody", {}, pools.map((p) => h("tr", { class: "pool-row", dataset: { pool: p.value || "" } },
        h("td", { title: p.label || "" }, p.value || "(no pool label)"),
        h("td", { class: "num" }, `${p.nodeCounts.ready}/${p.nodes}`),
        h("td", { class: "pool-free" }, acceleratorsOf(p.allocatableValues)
          .map((r) => `${p.freeValues[r] ?? 0}/${p.allocatableValues[r]} ${r}`).join(", ")),
        h("td", { class: "pool-largest" }, acceleratorsOf(p.allocatableValues)
          .filter((r) => r in (p.largestFree || {}))
          .map((r) => `${p.largestFree[r]} (${p.largestFreeNodes[r]})`).join(", ") || "—"))))));
  }
  return box;
}

/** What changes a card (not the time of the last probe). */
function textOf(c) {
  const { checkedAt, ...rest } = c; // eslint-disable-line no-unused-vars
  return JSON.stringify(rest);
}

function card(c, scale) {
  const st = stateOf(c);
  const [label, cls] = STATES[st];
  const phases = phasesOf(c);
  const total = Number(c.gpus) || 0;
  const stack = h("div", { class: "gpu-stack", role: "img",
    "aria-label": `${total} GPUs requested` + phases.map(([p, v]) => `, ${v.gpus} ${p}`).join("") });
  for (const [p, v] of phases) {
    if (!(v.gpus > 0) || !(scale > 0)) continue;
    const seg = h("span", { class: ["seg", phaseClass(p)], dataset: { phase: p }, title: `${p}: ${v.gpus} GPUs` });
    seg.style.width = `${(100 * v.gpus) / scale}%`;
    stack.append(seg);
  }
  const source = c.origin === "home" ? "the service's own cluster"
    : c.origin === "context" ? `context ${c.context || c.source || ""}` : c.source || c.origin;
  return h("div", { class: ["card", "cluster-card", st === "unavailable" && "down"], dataset: { cluster: c.name, state: st } },
    h("div", { class: "card-head" },
      h("h2", {}, h("a", { href: listHref({ cluster: FLEET ? c.name : "" }), class: "cluster-name" }, c.name)),
      h("span", { class: ["chip", cls, "cluster-state"], title: c.since ? `since ${new Date(c.since).toLocaleString()}` : "" },
        label),
      c.origin ? h("span", { class: "tag", title: source }, c.origin) : null),
    h("div", { class: "card-body" },
      h("dl", { class: "kv" },
        h("dt", {}, "Server"), h("dd", { class: "c-server" }, c.server ? h("code", {}, c.server) : h("span", { class: "faint" }, "—")),
        h("dt", {}, "Version"), h("dd", { class: "c-version" }, c.version || h("span", { class: "faint" }, "—")),
        h("dt", {}, st === "unavailable" ? "Down for" : "Up for"),
        h("dd", { class: "c-since", title: c.since || "" }, c.since ? age(c.since) : "—")),
      c.lastError ? h("p", { class: "cluster-error", title: c.lastError }, c.lastError) : null,
      h("div", { class: "cluster-figures" },
        h("div", {}, h("div", { class: "label" }, "Workloads"), h("div", { class: "value c-workloads" }, fmt(c.workloads))),
        h("div", {}, h("div", { class: "label" }, "GPUs requested"), h("div", { class: "value c-gpus" }, fmt(c.gpus))),
        st === "unavailable" ? h("div", { class: "faint last-seen" }, "as last seen") : null),
      accelerators(c),
      stack,
      capacity(c),
      phases.length
        ? h("table", { class: "phases" },
          h("thead", {}, h("tr", {}, h("th", {}, "Phase"), h("th", { class: "num" }, "Workloads"), h("th", { class: "num" }, "GPUs"))),
          h("tbody", {}, phases.map(([p, v]) => h("tr", { class: "phase-row", dataset: { phase: p } },
            h("td", {}, h("i", { class: ["swatch", phaseClass(p)], "aria-hidden": "true" }), p),
            h("td", { class: "num p-workloads" }, fmt(v.workloads)),
            h("td", { class: "num p-gpus" }, fmt(v.gpus))))))
        : h("p", { class: "faint no-workloads" }, "No workloads.")));
}

/** What the GPUs count leaves out or lumps together: every accelerator resource, by name
 * (`8 × nvidia.com/mig-1g.10gb`, `16 × amd.com/gpu`). */
function accelerators(c) {
  const acc = Object.entries(c.accelerators || {}).filter(([, n]) => n > 0).sort(([a], [b]) => (a < b ? -1 : 1));
  if (!acc.length) return null;
  return h("ul", { class: "c-accelerators", "aria-label": "Accelerators requested" },
    acc.map(([name, n]) => h("li", { dataset: { resource: name } }, `${n} × ${name}`)));
}

export function renderFleet(view) {
  setTitle("Fleet");
  const live = liveIndicator();
  const refresh = h("button", { type: "button", class: "secondary", id: "refresh" }, "Refresh");
  const notices = h("div", { id: "notices" });
  const stats = h("div", { class: "stats", id: "fleet-stats" });
  const grid = h("div", { class: "cluster-grid", id: "clusters" }, h("div", { class: "loading" }, "Loading…"));
  view.append(
    h("div", { class: "page-head" },
      h("div", { class: "title" }, h("h1", {}, "Fleet"),
        h("div", { class: "sub" }, "Every cluster this service reads: whether it answers, its workloads and GPUs.",
          live.el)),
      h("div", { class: "head-tools" }, refresh)),
    notices, stats, grid);

  const items = new Map(); // name -> the cluster's item, as last heard
  const capacities = new Map(); // name -> its capacity fields, from the last GET /clusters
  const shown = new Map(); // name -> {text, el}: the cards on screen
  let stream = null;
  let streamsOff = false;
  let loads = 0;
  let frame = 0;
  const ages = setInterval(() => render(true), 30000); // "up for" moves on
  const polls = setInterval(() => { if (grid.isConnected) readCapacity(); else dispose(); }, CAPACITY_EVERY);

  function keepCapacity(list) {
    capacities.clear();
    for (const c of list || []) {
      capacities.set(c.name, { capacity: c.capacity, capacityVisible: c.capacityVisible,
        capacityState: c.capacityState, capacityReason: c.capacityReason });
    }
  }

  async function readCapacity() {
    try {
      const data = await api("/clusters");
      keepCapacity(data.items);
      later();
    } catch (err) {
      // the stream says whether the service answers; the figures stay as last read
    }
  }

  function render(all = false) {
    cancelAnimationFrame(frame);
    frame = 0;
    const list = [...items.values()].map((c) => ({ ...c, ...capacities.get(c.name) }))
      .sort((a, b) => a.name.localeCompare(b.name));
    const scale = Math.max(0, ...list.map((c) => Number(c.gpus) || 0));
    const sum = (f) => list.reduce((n, c) => n + (Number(f(c)) || 0), 0);
    const up = list.filter((c) => c.available).length;
    const stat = (id, label, value, small) => h("div", { class: "stat", id }, h("div", { class: "label" }, label),
      h("div", { class: "value" }, value, small ? [" ", h("small", {}, small)] : null));
    put(stats,
      stat("fleet-clusters", "Clusters", list.length),
      stat("fleet-available", "Available", up, `of ${list.length}`),
      stat("fleet-workloads", "Workloads", sum((c) => c.workloads)),
      stat("fleet-gpus", "GPUs requested", Math.round(sum((c) => c.gpus) * 1000) / 1000));
    if (!list.length) {
      shown.clear();
      put(grid, h("div", { class: "empty card" }, "No clusters."));
      return;
    }
    for (const el of [...grid.children]) if (!el.classList.contains("cluster-card")) el.remove();
    let prev = null;
    for (const c of list) {
      const text = textOf(c) + "\u0000" + scale;
      let s = shown.get(c.name);
      if (!s || s.text !== text || all) {
        const el = card(c, scale);
        if (s) {
          if (s.text !== text) el.classList.add("changed");
          s.el.replaceWith(el);
        }
        s = { text, el };
        shown.set(c.name, s);
      }
      prev = place(grid, prev, s.el);
    }
    prune(shown, (name) => items.has(name), (s) => s.el);
  }

  function later() {
    live.updated();
    if (!frame) frame = requestAnimationFrame(() => render());
  }

  function follow() {
    stopFollowing();
    if (!grid.isConnected || streamsOff) return;
    stream = openStream("/clusters", {
      onSnapshot: (objects) => {
        items.clear();
        for (const c of objects) if (c && c.name) items.set(c.name, c);
        later();
      },
      onEvent: (ev) => {
        const c = ev.object;
        if (!c || !c.name) return;
        if (ev.type === "DELETED") items.delete(c.name);
        else items.set(c.name, c);
        later();
      },
      onStatus: (st, why) => {
        if (!grid.isConnected) return dispose();
        if (st === "off") streamsOff = true;
        live.status(st, why);
      },
    });
  }

  function stopFollowing() {
    if (stream) stream.close();
    stream = null;
  }

  function dispose() {
    stopFollowing();
    clearInterval(ages);
    clearInterval(polls);
    cancelAnimationFrame(frame);
  }

  async function load() {
    const mine = ++loads;
    refresh.disabled = true;
    try {
      const data = await api("/clusters");
      if (mine !== loads) return;
      items.clear();
      for (const c of data.items || []) items.set(c.name, c);
      keepCapacity(data.items);
      put(notices);
      stats.classList.remove("hidden");
      render();
      live.updated();
      follow(); // its snapshot replaces this answer: nothing is missed in between
    } catch (err) {
      if (mine !== loads) return;
      stopFollowing();
      live.status("paused", err.message);
      stats.classList.add("hidden");
      shown.clear();
      put(grid);
      put(notices, explain(err, load));
    } finally {
      if (mine === loads) refresh.disabled = false;
    }
  }

  refresh.addEventListener("click", load);
  load();
  return dispose;
}

function explain(err, retry) {
  if (err instanceof ApiError && err.status === 501) {
    return h("div", { class: "notice info", id: "no-cluster" },
      h("h2", {}, "No cluster configured"),
      h("p", {}, "This service runs without cluster access, so there is no fleet to show. Start it with ",
        h("code", {}, "wlmap serve --cluster NAME=KUBECONFIG …"), " to read several clusters."),
      h("p", {}, "You can still ", h("a", { href: ui("/interpret") }, "interpret a manifest"), "."));
  }
  return failure(err, retry, "Could not list the clusters");
}

// The component tree of an interpretation drawn as an SVG picture, left to right:
// workload (root component) → components → instances → pods.  Boxes carry replicas,
// ready/desired, GPUs per pod and in total; pod boxes carry their node or why they are not
// ready.  Many pods of one instance are laid out as a grid inside a frame, sized to the width
// available, so 30+ pods stay legible; the picture scrolls when it is larger than the page.

import { s } from "./dom.js";

const BOX_W = 224;
const BOX_H = 86;
const POD_W = 226;
const POD_H = 46;
const COL_GAP = 52;
const ROW_GAP = 14;
const POD_GAP = 8;
const CELL_W = 204; // a pod in a grid
const GRID_PAD = 10;
const GRID_HEAD = 24;
const GRID_MIN = 7; // more pods than this under one box: a grid
const MARGIN = 4;
const TALL = 520; // children taller than this: the parent is aligned with the first child

// -- model ------------------------------------------------------------------------------

function addLive(a, b) {
  if (!b) return a;
  return { current: (a?.current || 0) + b.current, ready: (a?.ready || 0) + b.ready, desired: (a?.desired || 0) + b.desired };
}

function podKey(component, instance) {
  return `${component}\u0000${instance ?? ""}`;
}

/** The interpretation as nested nodes {type, ..., children}. */
export function buildModel(result) {
  const live = result.live || null;
  const pods = new Map();
  for (const p of live?.pods || []) {
    const k = podKey(p.component, p.instance);
    if (!pods.has(k)) pods.set(k, []);
    pods.get(k).push(p);
  }
  const podChildren = (component, instanceId, instLive) => {
    if (!live) return [];
    const list = (pods.get(podKey(component, instanceId)) || []).slice()
      .sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
    const out = list.length > GRID_MIN
      ? [{ type: "grid", pods: list, children: [] }]
      : list.map((p) => ({ type: "pod", pod: p, children: [] }));
    const missing = instLive ? instLive.desired - instLive.current : 0;
    if (missing > 0) out.push({ type: "ghost", missing, children: [] });
    return out;
  };

  function component(node, depth) {
    const single = node.instances.length === 1 && node.instances[0].id === null;
    let compLive = null;
    for (const i of node.instances) compLive = addLive(compLive, i.live);
    if (depth === 0 && !compLive && live) compLive = { current: live.current, ready: live.ready, desired: live.desired };
    const n = {
      type: "component", name: node.name, kind: node.kind, podBearing: node.podBearing, totals: node.totals, error: node.error || null,
      live: compLive, instance: single ? node.instances[0] : null, instances: node.instances.length,
      root: depth === 0, children: [],
    };
    if (single) {
      if (node.podBearing) n.children.push(...podChildren(node.name, null, node.instances[0].live));
    } else {
      for (const inst of node.instances) {
        n.children.push({
          type: "instance", component: node.name, id: inst.id, inst, podBearing: node.podBearing, live: inst.live || null,
          children: node.podBearing ? podChildren(node.name, inst.id, inst.live) : [],
        });
      }
    }
    for (const child of node.children || []) n.children.push(component(child, depth + 1));
    return n;
  }
  return component(result.tree, 0);
}

// -- layout -----------------------------------------------------------------------------

function walk(n, fn, depth = 0) {
  fn(n, depth);
  for (const c of n.children) walk(c, fn, depth + 1);
}

/** Sizes and positions (x, y, w, h) for every node; `width` is the room the picture has. */
export function layout(model, width) {
  const byDepth = [];
  walk(model, (n, d) => {
    n.depth = d;
    (byDepth[d] ||= []).push(n);
  });
  const colX = [MARGIN];
  const colW = [];
  byDepth.forEach((nodes, d) => {
    const x = colX[d];
    for (const n of nodes) {
      if (n.type === "pod") [n.w, n.h] = [POD_W, POD_H];
      else if (n.type === "ghost") [n.w, n.h] = [POD_W, POD_H];
      else if (n.type === "grid") {
        const room = Math.max(CELL_W + 2 * GRID_PAD, width - x - MARGIN);
        const fit = Math.max(1, Math.floor((room - 2 * GRID_PAD + POD_GAP) / (CELL_W + POD_GAP)));
        n.cols = Math.max(1, Math.min(fit, Math.max(2, Math.ceil(n.pods.length / 8)), n.pods.length));
        n.rows = Math.ceil(n.pods.length / n.cols);
        n.w = 2 * GRID_PAD + n.cols * CELL_W + (n.cols - 1) * POD_GAP;
        n.h = GRID_HEAD + GRID_PAD + n.rows * POD_H + (n.rows - 1) * POD_GAP;
      } else[n.w, n.h] = [BOX_W, BOX_H];
    }
    colW[d] = Math.max(...nodes.map((n) => n.w));
    colX[d + 1] = x + colW[d] + COL_GAP;
  });

  function block(n) { // height of the subtree
    const kids = n.children.map(block);
    n.kidsH = kids.length ? kids.reduce((a, b) => a + b, 0) + ROW_GAP * (kids.length - 1) : 0;
    n.blockH = Math.max(n.h, n.kidsH);
    return n.blockH;
  }
  function place(n, top) {
    n.x = colX[n.depth];
    let y = top + (n.blockH - n.kidsH) / 2;
    for (const c of n.children) {
      place(c, y);
      y += c.blockH + ROW_GAP;
    }
    // A parent sits in the middle of its children, unless they are many: then level with the
    // first one, so the boxes that matter stay at the top of a tall picture.
    n.y = n.kidsH > TALL ? n.children[0].y : top + (n.blockH - n.h) / 2;
  }
  block(model);
  place(model, MARGIN);
  let right = 0;
  walk(model, (n) => { right = Math.max(right, n.x + n.w); });
  return { width: right + MARGIN, height: model.blockH + 2 * MARGIN };
}

// -- drawing ----------------------------------------------------------------------------

function readiness(l) {
  if (!l) return "spec";
  if (l.desired === null || l.desired === undefined) return l.ready > 0 ? "partial" : "down"; // desired unknown
  if (l.desired === 0) return "zero";
  if (l.ready >= l.desired) return "ready";
  return l.ready > 0 ? "partial" : "down";
}

function gpuText(perPod, total) {
  if (perPod === null || perPod === undefined) return total ? `${total} GPUs` : "no GPUs";
  if (!perPod && !total) return "no GPUs";
  return `${perPod} GPU/pod · ${total} GPUs`;
}

function replicaText(inst) {
  if (!inst || inst.replicas === null || inst.replicas === undefined) return null;
  const min = inst.minReplicas ?? null;
  const max = inst.maxReplicas ?? null;
  const bounds = min !== null && max !== null ? `${min}–${max}` : min !== null ? `min ${min}` : max !== null ? `max ${max}` : "";
  return `${inst.replicas} ${inst.replicas === 1 ? "replica" : "replicas"}` + (bounds ? ` (${bounds})` : "");
}

function pods(n) {
  return `${n} ${n === 1 ? "pod" : "pods"}`;
}

function kindText(kind) {
  if (!kind) return "component";
  return kind.group ? `${kind.kind} · ${kind.group}` : `${kind.kind} · core`;
}

function text(x, y, cls, content, fit, middle = false) {
  const dataset = fit ? { fit: String(fit), ...(middle ? { fitMode: "middle" } : {}) } : undefined;
  return s("text", { x, y, class: cls, dataset }, content);
}

function metricLine(x, y, parts) {
  // parts: [strongText, normalText, ...] alternating emphasis
  const t = s("text", { x, y, class: "t-metric", dataset: { fit: String(BOX_W - 30) } });
  parts.forEach((p, i) => {
    if (p === null || p === undefined || p === "") return;
    t.append(s("tspan", { class: i % 2 === 0 ? "strong" : "" }, p));
  });
  return t;
}

function boxNode(n) {
  const g = s("g", { class: ["node", n.type], transform: `translate(${n.x},${n.y})` });
  const state = n.error ? "down" : readiness(n.live);
  g.dataset.type = n.type;
  if (n.error) {
    g.classList.add("failed");
    g.dataset.failed = "true";
  }
  g.dataset.state = state;
  const inst = n.type === "instance" ? n.inst : n.instance;
  const zero = inst && inst.replicas === 0;
  if (zero) g.classList.add("zero");
  g.append(s("rect", { class: "box", width: n.w, height: n.h, rx: 7 }),
    s("rect", { class: ["stripe", `s-${state}`], width: 5, height: n.h - 2, x: 1, y: 1, rx: 3 }));
  const x = 16;
  let title;
  let sub;
  let ready = null;
  let count;
  let gpus;
  if (n.type === "component") {
    g.dataset.name = n.name;
    title = n.name;
    sub = kindText(n.kind) + (n.instances > 1 || !n.instance ? ` · ${n.instances} instance${n.instances === 1 ? "" : "s"}` : "");
    if (n.root) sub = kindText(n.kind);
    const t = n.totals;
    if (n.error) { // could not be read: say why, count nothing
      sub = n.error.message;
      count = "could not be read";
      gpus = "GPUs: unknown";
    } else {
      count = (n.instance && replicaText(n.instance)) || (t ? pods(t.pods) : "pods: unknown");
      gpus = n.instance && n.podBearing ? gpuText(n.instance.pod?.gpus, n.instance.totals.gpus)
        : !t ? "GPUs: unknown" : (t.gpus ? `${t.gpus} GPUs in total` : "no GPUs");
    }
  } else {
    g.dataset.name = n.component;
    g.dataset.id = n.id ?? "";
    title = n.id ?? "(instance)";
    sub = `instance of ${n.component}`;
    count = replicaText(n.inst) || pods(n.inst.totals.pods);
    gpus = n.podBearing ? gpuText(n.inst.pod?.gpus, n.inst.totals.gpus) : (n.inst.totals.gpus ? `${n.inst.totals.gpus} GPUs` : "no GPUs");
  }
  if (n.live) ready = `${n.live.ready}/${n.live.desired ?? "?"} ready`;
  const tip = [title, sub, ready, count, gpus, n.error && n.error.message].filter(Boolean).join("\n");
  g.append(s("title", {}, tip),
    text(x, 22, "t-name", title, BOX_W - 28),
    text(x, 39, "t-sub", sub, BOX_W - 28),
    metricLine(x, 59, ready ? [ready, " · " + count] : ["", count]),
    text(x, 77, "t-metric gpus", gpus, BOX_W - 28));
  return g;
}

function podNode(p, x, y, w = POD_W) {
  const pending = !p.ready && !p.node;
  const g = s("g", { class: ["node", "pod", p.ready ? "ready" : pending ? "pending notready" : "notready"],
    transform: `translate(${x},${y})`, dataset: { type: "pod", pod: p.name, ready: String(!!p.ready) } });
  const why = p.reason || p.containerReason;
  let line;
  let cls = "t-podsub";
  if (p.ready) line = p.node ? `on ${p.node}` : (p.phase || "Ready");
  else {
    line = [why || p.phase || "Not ready", p.node].filter(Boolean).join(" · ");
    cls += pending ? " bad" : " warn";
  }
  const tip = [p.name, `phase: ${p.phase || "?"}`, `ready: ${p.ready ? "yes" : "no"}`, `node: ${p.node || "none"}`,
    p.reason ? `reason: ${p.reason}` : null, p.containerReason ? `container: ${p.containerReason}` : null]
    .filter(Boolean).join("\n");
  g.append(s("title", {}, tip),
    s("rect", { class: "box", width: w, height: POD_H, rx: 6 }),
    s("circle", { class: ["dot", p.ready ? "s-ready" : pending ? "s-down" : "s-partial"], cx: 13, cy: 16, r: 4.5 }),
    text(24, 20, "t-pod", p.name, w - 32, true),
    text(24, 36, cls, line, w - 32));
  return g;
}

function ghostNode(n) {
  const g = s("g", { class: "node ghost", transform: `translate(${n.x},${n.y})`, dataset: { type: "ghost", missing: n.missing } });
  g.append(s("title", {}, `${n.missing} desired ${n.missing === 1 ? "pod does" : "pods do"} not exist yet`),
    s("rect", { class: "box", width: n.w, height: n.h, rx: 6 }),
    text(14, 20, "t-pod", `+${n.missing} not created`),
    text(14, 36, "t-podsub", n.missing === 1 ? "desired, no Pod object yet" : "desired, no Pod objects yet", POD_W - 24));
  return g;
}

function gridNode(n) {
  const g = s("g", { class: "node grid", transform: `translate(${n.x},${n.y})`, dataset: { type: "grid", pods: n.pods.length } });
  const ready = n.pods.filter((p) => p.ready).length;
  g.append(s("rect", { class: "frame", width: n.w, height: n.h, rx: 8 }),
    text(GRID_PAD, 16, "t-frame", `${n.pods.length} pods · ${ready} ready`));
  n.pods.forEach((p, i) => {
    const col = i % n.cols;
    const row = Math.floor(i / n.cols);
    g.append(podNode(p, GRID_PAD + col * (CELL_W + POD_GAP), GRID_HEAD + row * (POD_H + POD_GAP), CELL_W));
  });
  return g;
}

function edge(a, b) {
  const x1 = a.x + a.w;
  const y1 = a.y + a.h / 2;
  const x2 = b.x;
  const y2 = b.y + (b.type === "grid" ? Math.min(b.h / 2, GRID_HEAD + POD_H / 2) : b.h / 2);
  const mx = x1 + (x2 - x1) / 2;
  return s("path", { class: "edge", d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}` });
}

/** An <svg> of the interpretation, laid out for `width` pixels. */
export function drawTree(result, width) {
  const model = buildModel(result);
  const size = layout(model, width);
  const edges = s("g", { class: "edges" });
  const nodes = s("g", { class: "nodes" });
  walk(model, (n) => {
    for (const c of n.children) edges.append(edge(n, c));
    if (n.type === "component" || n.type === "instance") nodes.append(boxNode(n));
    else if (n.type === "pod") nodes.append(podNode(n.pod, n.x, n.y));
    else if (n.type === "ghost") nodes.append(ghostNode(n));
    else if (n.type === "grid") nodes.append(gridNode(n));
  });
  return s("svg", { class: "tree", id: "tree", width: size.width, height: size.height,
    viewBox: `0 0 ${size.width} ${size.height}`, role: "img",
    "aria-label": `Component tree of ${result.workload?.kind || ""} ${result.workload?.name || ""}` }, edges, nodes);
}

/** Shorten texts marked data-fit to their width, with an ellipsis (needs the SVG on screen). */
export function fitTexts(svg) {
  for (const t of svg.querySelectorAll("text[data-fit]")) {
    const max = Number(t.dataset.fit);
    if (t.getComputedTextLength() <= max) continue;
    const spans = t.querySelectorAll("tspan");
    const target = spans.length ? spans[spans.length - 1] : t;
    const full = target.textContent;
    if (t.dataset.fitMode === "middle") { // pod names differ at the end: keep both ends
      for (let cut = 1; cut < full.length - 2 && t.getComputedTextLength() > max; cut++) {
        const keep = full.length - cut;
        const head = Math.ceil(keep * 0.45);
        target.textContent = full.slice(0, head) + "…" + full.slice(full.length - (keep - head));
      }
      continue;
    }
    let cut = full;
    while (cut.length > 1 && t.getComputedTextLength() > max) {
      cut = cut.slice(0, -1);
      target.textContent = cut.trimEnd() + "…";
    }
  }
}

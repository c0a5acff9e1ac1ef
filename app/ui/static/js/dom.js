// Small DOM helpers.  Every piece of API data goes in through textContent (never innerHTML).

export const BASE = document.documentElement.dataset.base || "";
/** The service reads several clusters: rows and workloads name theirs. */
export const FLEET = document.documentElement.dataset.fleet === "true";
const SVG_NS = "http://www.w3.org/2000/svg";

/** Keyed redraws: put `el` right after `prev` in `parent` (moving it only when out of place);
 * returns it, the next one's `prev`. */
export function place(parent, prev, el) {
  const at = prev ? prev.nextSibling : parent.firstChild;
  if (at !== el) parent.insertBefore(el, at);
  return el;
}

/** Drop the shown entries whose key is not kept (`elOf` gives an entry's element). */
export function prune(shown, keep, elOf) {
  for (const [key, s] of shown) {
    if (!keep(key)) {
      elOf(s).remove();
      shown.delete(key);
    }
  }
}

function fill(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.setAttribute("class", Array.isArray(v) ? v.filter(Boolean).join(" ") : v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else if (k === "value" && "value" in el) el.value = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** h("a", {href, class}, "text", child...) */
export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

export function s(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/** Replace the content of `el` (null/false children are skipped, as in h()). */
export function put(el, ...children) {
  return fill(clear(el), {}, children);
}

export const PHASES = ["Running", "Initializing", "Degraded", "Resuming", "Suspending", "Suspended", "Failed",
  "Completed", "Undefined"];

export function phaseClass(phase) {
  return "phase-" + String(phase || "unknown").toLowerCase();
}

export function phaseChip(phase, big = false) {
  return h("span", { class: ["chip", phaseClass(phase), big && "big"], dataset: { phase: phase || "" } },
    phase || "Unknown");
}

/** "/ui/..." links, under the service's root path. */
export function ui(path) {
  return BASE + "/ui" + path;
}

/** The page of a workload; with `cluster` (a fleet), the page of that cluster's workload. */
export function workloadHref(ref, cluster) {
  const q = new URLSearchParams();
  if (ref.kind) q.set("kind", ref.kind);
  if (ref.apiVersion) q.set("apiVersion", ref.apiVersion);
  const at = cluster ? `/clusters/${encodeURIComponent(cluster)}` : "";
  return ui(`${at}/workloads/${encodeURIComponent(ref.namespace || "")}/${encodeURIComponent(ref.name)}?${q}`);
}

/** The workloads list, filtered to a cluster and/or a namespace. */
export function listHref({ cluster, namespace } = {}) {
  const q = new URLSearchParams();
  if (cluster) q.set("cluster", cluster);
  if (namespace) q.set("namespace", namespace);
  return ui("/" + (q.toString() ? "?" + q : ""));
}

export function definitionHref(name) {
  return ui(`/definitions/${encodeURIComponent(name)}`);
}

export function groupOf(apiVersion) {
  const i = (apiVersion || "").indexOf("/");
  return i < 0 ? "core" : apiVersion.slice(0, i);
}

export function age(iso, now = Date.now()) {
  if (!iso) return "";
  const secs = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (!Number.isFinite(secs)) return "";
  if (secs < 120) return `${secs}s`;
  const mins = Math.floor(secs / 60);
  if (mins < 120) return `${mins}m`;
  const hours = Math.floor(mins / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}

export function plural(n, word, many = word + "s") {
  return `${n} ${n === 1 ? word : many}`;
}

export function readyBar(ready, desired) {
  const frac = desired > 0 ? Math.min(1, (ready || 0) / desired) : 0;
  const span = h("span");
  span.style.width = `${Math.round(frac * 100)}%`;
  const cls = desired > 0 && ready >= desired ? "" : ready > 0 ? "partial" : "none";
  return h("span", { class: ["bar", cls] }, span);
}

export function setTitle(...parts) {
  document.title = [...parts.filter(Boolean), "workload-map"].join(" · ");
}

/** Run `fn` when the user presses Ctrl/Cmd+Enter inside `el`. */
export function onSubmitKey(el, fn) {
  el.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      fn();
    }
  });
}

/**
 * Run `fn` (which replaces what `container` shows) without moving the reader: the page's and
 * the inner scroll positions, which <details> are open, and the focused element (by id) are
 * as they were, as far as the new content allows.
 */
export function keepPlace(container, fn) {
  const x = window.scrollX;
  const y = window.scrollY;
  const scrolled = [...container.querySelectorAll("[id]")].filter((e) => e.scrollTop || e.scrollLeft)
    .map((e) => [e.id, e.scrollLeft, e.scrollTop]);
  const open = [...container.querySelectorAll("details[id]")].map((d) => [d.id, d.open]);
  const focused = container.contains(document.activeElement) && document.activeElement.id ? document.activeElement.id : null;
  container.style.minHeight = `${container.offsetHeight}px`; // nothing shrinks under the reader meanwhile
  try {
    fn();
  } finally {
    const find = (id) => {
      const e = document.getElementById(id);
      return e && container.contains(e) ? e : null;
    };
    for (const [id, isOpen] of open) {
      const d = find(id);
      if (d) d.open = isOpen;
    }
    for (const [id, left, top] of scrolled) {
      const e = find(id);
      if (e) {
        e.scrollLeft = left;
        e.scrollTop = top;
      }
    }
    if (focused && find(focused)) find(focused).focus({ preventScroll: true });
    container.style.minHeight = "";
    window.scrollTo(x, y);
  }
}

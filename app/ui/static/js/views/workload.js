// /ui/workloads/{namespace}/{name} — one live workload: its tree with pods, status, gang, resources.
// After the first answer the page follows the workload's stream and draws each new state in
// place, keeping the reader's scroll position.  /ui/clusters/{cluster}/workloads/{namespace}/{name}:
// the workload of that cluster (a service reading several); either way the page names the cluster
// the answer comes from.

import { actionButtons } from "../actions.js";
import { api, failure } from "../api.js";
import { age, h, keepPlace, listHref, phaseChip, plural, put, setTitle, ui } from "../dom.js";
import { definitionLine, resultSections } from "../details.js";
import { liveIndicator } from "../live.js";
import { openStream } from "../stream.js";

export function downloadButton(result, name) {
  const button = h("button", { type: "button", class: "secondary", id: "download-json", title: "The API's answer, as JSON" },
    "Download JSON");
  button.addEventListener("click", () => {
    const url = URL.createObjectURL(new Blob([JSON.stringify(result, null, 2)], { type: "application/json" }));
    const a = h("a", { href: url, download: `${name}.json` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  });
  return button;
}

/** The API path of a workload (of `cluster`, when named). */
function apiPath(cluster, namespace, name) {
  return (cluster ? `/clusters/${encodeURIComponent(cluster)}` : "") +
    `/workloads/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
}

export function renderWorkload(view, namespace, name, cluster = "") {
  const params = new URLSearchParams(location.search);
  const q = new URLSearchParams();
  for (const k of ["kind", "apiVersion"]) if (params.get(k)) q.set(k, params.get(k));
  const path = apiPath(cluster, namespace, name) + (q.toString() ? "?" + q : "");
  let at = cluster; // the cluster of the answer (a fleet's: named by the URL, or by the answer)
  setTitle(`${namespace}/${name}`, at && `cluster ${at}`);

  const live = liveIndicator();
  const phase = h("span", { id: "head-phase" });
  const sub = h("div", { class: "sub", id: "head-sub" }, params.get("kind") || "");
  const refresh = h("button", { type: "button", class: "secondary", id: "refresh" }, "Refresh");
  let shownKind = {}; // the kind of the workload shown: an action acts on exactly that one
  const acts = actionButtons((which) => `${apiPath(at, namespace, name)}/${which}?` +
    new URLSearchParams({ kind: shownKind.kind, apiVersion: shownKind.apiVersion }), (result) => show(result));
  const tools = h("div", { class: "head-tools" }, live.el, acts.el, refresh);
  const gone = h("div", { id: "gone" });
  const why = h("div", { id: "why" });
  const body = h("div", { id: "workload-body" }, h("div", { class: "loading" }, "Loading…"));
  const crumbs = h("div", { class: "crumbs" });
  const drawCrumbs = () => put(crumbs, h("a", { href: ui("/") }, "Workloads"), " › ",
    at ? [h("a", { href: listHref({ cluster: at }), id: "crumb-cluster" }, at), " › "] : null,
    h("a", { href: listHref({ cluster: at, namespace }) }, namespace));
  drawCrumbs();
  view.append(
    h("div", { class: "page-head" },
      h("div", { class: "title" },
        crumbs,
        h("h1", { class: "workload-title" }, h("span", { id: "workload-name" }, name), " ", phase),
        sub),
      tools),
    acts.message,
    gone,
    why,
    body);

  let shown = null; // the JSON of what is on screen (a stream event that repeats it changes nothing)
  let stream = null;
  let streamsOff = false;
  let loads = 0;
  let frame = 0;
  let next = null; // the newest interpretation not drawn yet

  /** Draw an interpretation (the API's answer, or an event's object) in place of the last one. */
  function show(result) {
    const text = JSON.stringify(withoutFreshness(result));
    if (text === shown) return;
    shown = text;
    const w = result.workload || {};
    shownKind = { kind: w.kind || "", apiVersion: w.apiVersion || "" };
    acts.update(result);
    if (result.cluster && result.cluster !== at) {
      at = result.cluster;
      drawCrumbs();
    }
    setTitle(`${w.kind} ${namespace}/${name}`, at && `cluster ${at}`);
    put(phase, phaseChip(result.status?.phase, true));
    put(sub, at ? h("span", { class: "tag cluster-tag", id: "workload-cluster", title: "The cluster it runs in" },
      "cluster ", h("strong", {}, at)) : null,
    h("span", {}, h("strong", {}, w.kind), " ", h("span", { class: "faint" }, w.apiVersion)),
    definitionLine(result.definition));
    const download = downloadButton(result, name); // the newest answer
    const old = tools.querySelector("#download-json");
    if (old) old.replaceWith(download);
    else tools.insertBefore(download, refresh);
    const sections = resultSections(result);
    keepPlace(body, () => { // the banner too: a reason coming or going above does not move the reader
      put(why, diagnosisBanner(result.diagnosis));
      put(body, sections);
      sections.draw();
    });
    live.updated();
  }

  function later(result) {
    next = result;
    if (!frame) frame = requestAnimationFrame(() => {
      frame = 0;
      const r = next;
      next = null;
      if (r && body.isConnected) show(r);
    });
  }

  function markGone(isGone) {
    if (isGone === body.classList.contains("gone")) return;
    body.classList.toggle("gone", isGone);
    put(gone, isGone ? h("div", { class: "notice warn", id: "deleted", role: "status" },
      h("h2", {}, "This workload was deleted"),
      h("p", {}, `It went at ${new Date().toLocaleTimeString()}. Below is its last state; the page follows it again `,
        "if it comes back.")) : null);
    if (isGone) live.updated();
  }

  // -- the stream ------------------------------------------------------------------------
  function follow(w) {
    stopFollowing();
    if (!body.isConnected || streamsOff) return;
    const pin = new URLSearchParams({ kind: w.kind, apiVersion: w.apiVersion }); // the one shown, even if a twin appears
    stream = openStream(`${apiPath(at, namespace, name)}?${pin}`, { // (of its cluster, even if a twin appears elsewhere)
      onSnapshot: (objects) => {
        if (objects.length) {
          markGone(false);
          later(objects[0]);
        }
      },
      onEvent: (ev) => {
        if (ev.type === "DELETED") markGone(true);
        else if (ev.object) {
          markGone(false);
          later(ev.object);
        }
      },
      onError: (err) => {
        if (err.status === 404) markGone(true); // gone while the link was down; the stream keeps trying
      },
      onStatus: (st, why) => {
        if (!body.isConnected) return dispose();
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
    cancelAnimationFrame(frame);
  }

  async function load() {
    const mine = ++loads;
    refresh.disabled = true;
    try {
      const result = await api(path);
      if (mine !== loads) return;
      markGone(false);
      show(result);
      live.updated();
      follow(result.workload || {}); // from a fresh state: its first event is the same picture, or a newer one
    } catch (err) {
      if (mine !== loads) return;
      stopFollowing();
      live.status("paused", err.message);
      shown = null;
      put(body, failure(err, load, "Could not read the workload"));
    } finally {
      if (mine === loads) refresh.disabled = false;
    }
  }
  refresh.addEventListener("click", load);
  load();
  return dispose;
}

/** Why the workload is not (fully) running: one line per reason, most severe first, with the
 * message the scheduler, kubelet or controller wrote (none: no banner). */
export function diagnosisBanner(entries) {
  if (!entries || !entries.length) return null;
  const worst = entries[0].severity === "error" ? "error" : "warn";
  return h("div", { class: `notice ${worst} diagnosis`, id: "diagnosis", role: "status" },
    h("h2", {}, "Why it is not running"),
    h("ul", {}, entries.map((e) => {
      const where = [e.component, e.instances?.length ? `[${e.instances.join(", ")}]` : null].filter(Boolean).join(" ");
      const facts = [
        where || null,
        e.pods ? plural(e.pods, "pod") : null,
        e.insufficient?.length ? `short of ${e.insufficient.join(", ")}` : null,
        e.since ? `for ${age(e.since)}` : null,
      ].filter(Boolean);
      return h("li", { class: `diagnosis-entry ${e.severity}`, "data-reason": e.reason },
        h("strong", { class: "diagnosis-reason" }, e.reason),
        facts.length ? h("span", { class: "faint" }, " · ", facts.join(" · ")) : null,
        h("div", { class: "diagnosis-message" }, e.message));
    })));
}

function withoutFreshness(result) {
  const { freshness, ...rest } = result; // eslint-disable-line no-unused-vars
  return rest;
}

// /ui/interpret — paste a manifest (and optionally a definition and pods), see the tree; and
// "Where does it fit": the same manifest (and definition) sent to POST /fit, each cluster's
// verdict shown: the placement of one copy, or per component what is short.
// The server reads YAML, so pasted YAML is sent as it is; with a definition or pods, the
// envelope {object, definition, pods} is built as YAML text by indenting each part.

import { api, ApiError, failure, problemNotice } from "../api.js";
import { h, onSubmitKey, phaseChip, put, setTitle, ui } from "../dom.js";
import { definitionLine, resultSections } from "../details.js";
import { DRAFT_KEY } from "./definition.js";

// -- building the request ----------------------------------------------------------------

class InputError extends Error {}

function tryJson(text) {
  const t = text.trim();
  if (!/^[[{]/.test(t)) return undefined;
  try {
    return JSON.parse(t);
  } catch {
    return undefined;
  }
}

/** The YAML documents of a text (split on `---`), without empty ones and end markers. */
export function yamlDocs(text) {
  const docs = [[]];
  for (const line of text.replace(/\r\n?/g, "\n").split("\n")) {
    const m = line.match(/^---(?:\s+(.*))?$/);
    if (m) {
      docs.push(m[1] ? [m[1]] : []);
      continue;
    }
    if (/^\.\.\.\s*$/.test(line) || /^%/.test(line)) continue;
    docs[docs.length - 1].push(line);
  }
  return docs.filter((d) => d.some((l) => l.trim() && !/^\s*#/.test(l)));
}

function indent(lines, by) {
  const pad = " ".repeat(by);
  return lines.map((l) => (l.trim() ? pad + l : "")).join("\n");
}

function oneDoc(text, what) {
  const docs = yamlDocs(text);
  if (docs.length !== 1) {
    throw new InputError(docs.length ? `The ${what} holds ${docs.length} YAML documents: keep exactly one.`
      : `The ${what} is empty.`);
  }
  return docs[0];
}

/** Pods as YAML sequence lines: a stream of Pods, a List (kubectl get -o yaml), or a sequence. */
function podLines(text) {
  const out = [];
  for (const doc of yamlDocs(text)) {
    const json = tryJson(doc.join("\n"));
    if (json !== undefined) {
      const items = Array.isArray(json) ? json : Array.isArray(json.items) ? json.items : [json];
      out.push(...items.map((p) => "- " + JSON.stringify(p)));
      continue;
    }
    const first = doc.find((l) => l.trim() && !/^\s*#/.test(l)) || "";
    if (/^-(\s|$)/.test(first)) { // already a sequence
      out.push(...doc);
      continue;
    }
    const isList = doc.some((l) => /^kind:\s*["']?\w*List["']?\s*(#.*)?$/.test(l));
    const itemsAt = doc.findIndex((l) => /^items:\s*(#.*)?$/.test(l));
    if (isList && itemsAt >= 0) {
      const rest = doc.slice(itemsAt + 1);
      const end = rest.findIndex((l) => /^[^\s#-]/.test(l)); // the next top-level key
      out.push(...(end < 0 ? rest : rest.slice(0, end)));
      continue;
    }
    out.push("-", ...doc.map((l) => (l.trim() ? "  " + l : "")));
  }
  return out;
}

/** [body, content type] for POST /interpret. */
export function buildRequest(manifest, definition, pods) {
  if (!manifest.trim()) throw new InputError("Paste a workload manifest first.");
  if (!definition.trim() && !pods.trim()) {
    return tryJson(manifest) !== undefined ? [manifest, "application/json"] : [manifest, "application/yaml"];
  }
  const jm = tryJson(manifest);
  const jd = definition.trim() ? tryJson(definition) : null;
  const jp = pods.trim() ? tryJson(pods) : null;
  if (jm !== undefined && jd !== undefined && jp !== undefined) {
    const env = { object: jm };
    if (jd) env.definition = jd;
    if (jp) env.pods = Array.isArray(jp) ? jp : Array.isArray(jp.items) ? jp.items : [jp];
    return [JSON.stringify(env), "application/json"];
  }
  const parts = ["object:", indent(oneDoc(manifest, "manifest"), 2)];
  if (definition.trim()) parts.push("definition:", indent(oneDoc(definition, "definition"), 2));
  if (pods.trim()) parts.push("pods:", indent(podLines(pods), 2));
  return [parts.join("\n") + "\n", "application/yaml"];
}

function contentTypeOf(text) {
  return tryJson(text) !== undefined ? "application/json" : "application/yaml";
}

// -- the page ------------------------------------------------------------------------------

function editor(id, title, hint, placeholder, extra) {
  const area = h("textarea", { id, spellcheck: "false", autocomplete: "off", autocapitalize: "off", wrap: "off",
    placeholder, "aria-label": title });
  const file = h("input", { type: "file", accept: ".yaml,.yml,.json,application/json,text/yaml" });
  const open = h("button", { type: "button", class: "secondary small", title: "Read a file from this computer" }, "Open file…");
  open.addEventListener("click", () => file.click());
  file.addEventListener("change", async () => {
    if (file.files[0]) {
      area.value = await file.files[0].text();
      area.dispatchEvent(new Event("input"));
    }
    file.value = "";
  });
  const clearButton = h("button", { type: "button", class: "secondary small" }, "Clear");
  clearButton.addEventListener("click", () => {
    area.value = "";
    area.dispatchEvent(new Event("input"));
    area.focus();
  });
  const el = h("section", { class: ["card", "editor", id] },
    h("div", { class: "card-head" }, h("h2", {}, title), h("span", { class: "hint" }, hint), extra, open, clearButton, file),
    area);
  el.area = area;
  return el;
}

export function renderInterpret(view) {
  setTitle("Interpret");
  let draft = {};
  try {
    draft = JSON.parse(sessionStorage.getItem(DRAFT_KEY) || "{}");
  } catch { /* ignore */ }

  const builtin = h("select", { id: "builtin", class: "small", title: "Copy a built-in definition as a starting point" },
    h("option", { value: "" }, "Start from a built-in…"));
  const manifest = editor("manifest", "Manifest", "YAML or JSON, as the cluster has it",
    "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: …\nspec:\n  …");
  const definition = editor("definition", "Definition", "optional",
    "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata:\n  name: …\nspec:\n  structureDefinition:\n    …", builtin);
  const pods = editor("pods", "Pods", "optional: pods to place on the tree (a YAML stream, a List, or a JSON array)",
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: …\n---\napiVersion: v1\nkind: Pod\n…");
  pods.classList.add("section");
  const togglePods = h("button", { type: "button", class: "secondary", id: "toggle-pods",
    title: "Pods to place on components and instances, as on a live workload" });
  const showPods = (on) => {
    pods.classList.toggle("hidden", !on);
    togglePods.textContent = on ? "Hide pods" : "Add pods…";
  };
  togglePods.addEventListener("click", () => {
    const on = pods.classList.contains("hidden");
    showPods(on);
    if (on) pods.area.focus();
  });
  manifest.area.value = draft.manifest || "";
  definition.area.value = draft.definition || "";
  pods.area.value = draft.pods || "";
  showPods(!!pods.area.value.trim());

  const run = h("button", { type: "button", id: "interpret" }, "Interpret");
  const fitButton = h("button", { type: "button", class: "secondary", id: "fit",
    title: "Where the workload would run now: POST /fit on every cluster" }, "Where does it fit?");
  const policy = h("select", { id: "fit-policy", class: "small", title: "How pods are packed onto nodes" },
    h("option", { value: "pack" }, "pack"), h("option", { value: "spread" }, "spread"));
  const status = h("span", { class: "status", id: "interpret-status" }, "Ctrl+Enter in any field");
  const result = h("div", { id: "result" });
  const fitResult = h("div", { id: "fit-result" });
  const actions = h("div", { class: "editor-actions" }, run, togglePods, fitButton, policy, status);

  view.append(
    h("div", { class: "page-head" }, h("div", { class: "title" }, h("h1", {}, "Interpret a manifest"),
      h("div", { class: "sub" }, "Paste a workload and see its phase, tree, totals and gang groups. Add a definition to try one " +
        "you are writing: the result updates as you edit and re-run."))),
    h("div", { class: "grid-2" }, manifest, definition),
    pods,
    actions,
    fitResult,
    result);

  const save = () => {
    try {
      sessionStorage.setItem(DRAFT_KEY, JSON.stringify({ manifest: manifest.area.value, definition: definition.area.value,
        pods: pods.area.value }));
    } catch { /* too large or disabled: not kept */ }
  };
  for (const e of [manifest, definition, pods]) {
    e.area.addEventListener("input", save);
    onSubmitKey(e.area, () => interpret());
  }

  async function interpret() {
    let body;
    let type;
    try {
      [body, type] = buildRequest(manifest.area.value, definition.area.value, pods.area.value);
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      put(result, problemNotice(new ApiError(0, { title: "Nothing to send", detail: err.message })));
      return;
    }
    run.disabled = true;
    status.textContent = "Interpreting…";
    const started = performance.now();
    const defText = definition.area.value;
    // The validator's warnings (unknown keys, gojq differences, ...) help while writing one.
    const lint = defText.trim()
      ? api("/definitions/validate", { method: "POST", body: defText, contentType: contentTypeOf(defText) }).catch(() => null)
      : Promise.resolve(null);
    try {
      const res = await api("/interpret", { method: "POST", body, contentType: type });
      status.textContent = `Interpreted in ${Math.round(performance.now() - started)} ms`;
      show(res, await lint);
    } catch (err) {
      status.textContent = err instanceof ApiError && err.status ? `HTTP ${err.status}` : "Failed";
      const retry = () => {
        loadBuiltins();
        interpret();
      };
      put(result, failure(err, retry, err instanceof ApiError && err.status >= 500 ? "Interpretation failed" : ""),
        lintNotice(await lint));
    } finally {
      run.disabled = false;
    }
  }

  function lintNotice(lint) {
    const warnings = (lint?.items || []).flatMap((i) => i.warnings || []);
    if (!warnings.length) return null;
    return h("div", { class: "notice warn", id: "definition-warnings" }, h("h2", {}, "Definition warnings"),
      h("ul", {}, warnings.map((f) => h("li", {}, h("code", {}, f.path), " ", f.message))));
  }

  function show(res, lint) {
    const w = res.workload || {};
    const sections = resultSections(res);
    put(result, 
      h("div", { class: "page-head result-head" },
        h("div", { class: "title" },
          h("h1", { id: "result-title" }, h("span", {}, w.kind || "?", " ", h("strong", {}, w.name || "(no name)")), " ",
            phaseChip(res.status?.phase, true)),
          h("div", { class: "sub" }, w.namespace ? h("span", {}, "namespace ", h("strong", {}, w.namespace)) : null,
            h("span", { class: "faint" }, w.apiVersion), definitionLine(res.definition)))),
      lintNotice(lint),
      sections);
    sections.draw();
    // On a laptop screen the result starts below the editors: bring it up, keeping the button in view.
    if (result.getBoundingClientRect().top > window.innerHeight * 0.6) actions.scrollIntoView({ block: "start", behavior: "instant" });
  }

  run.addEventListener("click", () => interpret());
  fitButton.addEventListener("click", () => fit());

  async function fit() {
    let body;
    let type;
    try {
      [body, type] = buildRequest(manifest.area.value, definition.area.value, ""); // a fit is of the desired pods
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      put(fitResult, problemNotice(new ApiError(0, { title: "Nothing to send", detail: err.message })));
      return;
    }
    fitButton.disabled = true;
    status.textContent = "Fitting…";
    try {
      const res = await api(`/fit?policy=${encodeURIComponent(policy.value)}`, { method: "POST", body, contentType: type });
      status.textContent = res.best ? `Fits best in ${res.best}` : "Fits nowhere now";
      put(fitResult, fitAnswer(res));
    } catch (err) {
      status.textContent = err instanceof ApiError && err.status ? `HTTP ${err.status}` : "Failed";
      put(fitResult, err instanceof ApiError && err.status === 501
        ? h("div", { class: "notice info", id: "fit-no-cluster" }, h("h2", {}, "No cluster to fit on"), h("p", {}, err.message))
        : failure(err, () => fit(), "Could not fit"));
    } finally {
      fitButton.disabled = false;
    }
  }

  // Built-in definitions as starting points (quietly absent when the list cannot be read).
  function loadBuiltins() {
    api("/definitions").then((list) => {
      const names = (list.items || []).filter((d) => d.state === "active").map((d) => d.name).sort();
      put(builtin, h("option", { value: "" }, "Start from a built-in…"), names.map((n) => h("option", { value: n }, n)));
      builtin.classList.remove("hidden");
    }).catch(() => builtin.classList.add("hidden"));
  }
  loadBuiltins();
  builtin.addEventListener("change", async () => {
    const name = builtin.value;
    if (!name) return;
    try {
      definition.area.value = await api(`/definitions/${encodeURIComponent(name)}`, { accept: "application/yaml", text: true });
      definition.area.dispatchEvent(new Event("input"));
    } catch (err) {
      put(result, failure(err, () => builtin.dispatchEvent(new Event("change"))));
    }
    builtin.value = "";
  });

  if (new URLSearchParams(location.search).has("run") && manifest.area.value.trim()) interpret();
  else if (!manifest.area.value.trim()) {
    result.append(h("div", { class: "notice info", id: "interpret-help" }, h("h2", {}, "How it works"),
      h("p", {}, "The manifest is sent to ", h("code", {}, "POST /interpret"), ". Without a definition, the service picks the " +
        "one that covers its apiVersion and kind (see the ", h("a", { href: ui("/") }, "workloads"), " page for live ones). " +
        "With a definition, that one is used and checked: every finding is listed with its path."),
      h("p", {}, "Pods are optional: given, they are placed on components and instances, as on a live workload.")));
  }
}

// -- the fit -------------------------------------------------------------------------------

const nameOf = (x) => x.component + (x.instance ? `/${x.instance}` : "");

/** POST /fit's answer: one card per cluster, the best first (as ranked by the service). */
export function fitAnswer(res) {
  const rows = res.clusters || [];
  return h("section", { class: ["card", "fit-answer"], id: "fit-answer" },
    h("div", { class: "card-head" }, h("h2", {}, "Where does it fit"),
      h("span", { class: "hint" }, res.best ? `best: ${res.best}` : "nowhere now", ` · policy ${res.policy}`)),
    rows.length ? rows.map((c) => fitRow(c, c.cluster === res.best)) : h("p", { class: "faint" }, "No clusters."));
}

function fitRow(c, best) {
  const chip = !c.available ? h("span", { class: ["chip", "phase-unknown"] }, c.state)
    : c.fits ? h("span", { class: ["chip", "phase-running"] }, `fits · ${c.sets} ${c.setsBounded ? "or more " : ""}`
      + (c.sets === 1 ? "copy" : "copies"))
      : h("span", { class: ["chip", "phase-failed"] }, "does not fit");
  const body = [];
  if (c.available && c.fits && (c.placement || []).length) {
    body.push(h("table", { class: "placement" }, h("tbody", {}, c.placement.map((p) => h("tr", { class: "placed" },
      h("td", {}, nameOf(p)), h("td", { class: "num" }, `${p.pods} pods`),
      h("td", { class: "nodes" }, Object.entries(p.nodes).map(([n, k]) => `${n} (${k})`).join(", ")))))));
  }
  if (c.available && !c.fits && (c.shortfall || []).length) {
    body.push(h("table", { class: "shortfall" },
      h("thead", {}, h("tr", {}, h("th", {}, "Component"), h("th", {}, "Resource"), h("th", { class: "num" }, "Per pod"),
        h("th", { class: "num" }, "Unplaced"), h("th", {}, "Most left on one node"))),
      h("tbody", {}, c.shortfall.map((s) => h("tr", { class: "short" },
        h("td", {}, nameOf(s)), h("td", {}, s.resource), h("td", { class: "num" }, s.perPod),
        h("td", { class: "num" }, `${s.podsUnplaced} of ${s.pods}`),
        h("td", {}, s.largestFree ? `${s.largestFree.free} (${s.largestFree.node})` : "no node passes the filters"))))));
  }
  return h("div", { class: ["fit-row", best && "best"], dataset: { cluster: c.cluster, fits: String(c.fits) } },
    h("div", { class: "card-head" }, h("h3", {}, c.cluster || "this cluster"), chip, best ? h("span", { class: "tag" }, "best") : null),
    h("p", { class: "fit-message" }, c.message),
    body);
}

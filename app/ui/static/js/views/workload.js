// /ui/workloads/{namespace}/{name} — one live workload: its tree with pods, status, gang, resources.

import { api, failure } from "../api.js";
import { h, phaseChip, put, setTitle, ui } from "../dom.js";
import { definitionLine, resultSections } from "../details.js";

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

export function renderWorkload(view, namespace, name) {
  const params = new URLSearchParams(location.search);
  const q = new URLSearchParams();
  for (const k of ["kind", "apiVersion"]) if (params.get(k)) q.set(k, params.get(k));
  const path = `/workloads/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}${q.toString() ? "?" + q : ""}`;
  setTitle(`${namespace}/${name}`);

  const phase = h("span", { id: "head-phase" });
  const sub = h("div", { class: "sub", id: "head-sub" }, params.get("kind") || "");
  const refresh = h("button", { type: "button", class: "secondary", id: "refresh" }, "Refresh");
  const tools = h("div", { class: "head-tools" }, refresh);
  const body = h("div", { id: "workload-body" }, h("div", { class: "loading" }, "Loading…"));
  view.append(
    h("div", { class: "page-head" },
      h("div", { class: "title" },
        h("div", { class: "crumbs" }, h("a", { href: ui("/") }, "Workloads"), " › ",
          h("a", { href: ui("/?" + new URLSearchParams({ namespace })) }, namespace)),
        h("h1", { class: "workload-title" }, h("span", { id: "workload-name" }, name), " ", phase),
        sub),
      tools),
    body);

  async function load() {
    refresh.disabled = true;
    try {
      const result = await api(path);
      const w = result.workload || {};
      setTitle(`${w.kind} ${namespace}/${name}`);
      put(phase, phaseChip(result.status?.phase, true));
      put(sub, h("span", {}, h("strong", {}, w.kind), " ", h("span", { class: "faint" }, w.apiVersion)),
        definitionLine(result.definition));
      const sections = resultSections(result);
      put(tools, downloadButton(result, name), refresh);
      put(body, sections);
      sections.draw();
    } catch (err) {
      put(body, failure(err, load, "Could not read the workload"));
    } finally {
      refresh.disabled = false;
    }
  }
  refresh.addEventListener("click", load);
  load();
}

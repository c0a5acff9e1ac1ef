// /ui/definitions/{name} — the definition as served (YAML), where it comes from, its findings.

import { api, failure } from "../api.js";
import { clear, h, put, setTitle, ui } from "../dom.js";

export const DRAFT_KEY = "wlmap.interpret.draft";

/** YAML text with keys, comments and quoted strings tinted (spans with textContent only). */
export function yamlBlock(text) {
  const pre = h("pre", { class: "yaml", id: "definition-yaml" });
  for (const line of text.split("\n")) {
    const m = line.match(/^(\s*(?:- )*)([^\s#'"][^:#]*?|"[^"]*"|'[^']*')(:)(\s.*|$)/);
    if (m) {
      pre.append(m[1], h("span", { class: "k" }, m[2]), m[3]);
      tail(pre, m[4]);
    } else tail(pre, line);
    pre.append("\n");
  }
  return pre;
}

function tail(pre, rest) {
  const c = rest.match(/^(.*?)(\s#.*)$/);
  const value = c ? c[1] : rest;
  const s = value.match(/^(\s*)(["'].*["'])(\s*)$/);
  if (s) pre.append(s[1], h("span", { class: "s" }, s[2]), s[3]);
  else pre.append(value);
  if (c) pre.append(h("span", { class: "c" }, c[2]));
}

export function renderDefinition(view, name) {
  setTitle(name, "Definition");
  const body = h("div", { id: "definition-body" }, h("div", { class: "loading" }, "Loading…"));
  const sub = h("div", { class: "sub", id: "definition-sub" });
  const tools = h("div", { class: "head-tools" });
  view.append(h("div", { class: "page-head" },
    h("div", { class: "title" }, h("div", { class: "crumbs" }, "Definition"), h("h1", {}, name), sub), tools), body);

  async function load() {
    try {
      const [text, list] = await Promise.all([
        api(`/definitions/${encodeURIComponent(name)}`, { accept: "application/yaml", text: true }),
        api("/definitions").catch(() => null),
      ]);
      const info = (list?.items || []).find((d) => d.name === name);
      clear(sub);
      if (info) {
        sub.append(h("span", {}, h("strong", {}, info.kind || "?"), " ",
          h("span", { class: "faint" }, [info.group, info.version].filter(Boolean).join("/"))),
        h("span", {}, "source ", h("strong", {}, info.source), info.origin && info.origin !== info.source
          ? h("span", { class: "faint" }, ` (${info.origin})`) : null),
        h("span", { class: `tag ${info.state === "active" ? "" : "warn"}` }, info.state));
      }
      const use = h("button", { type: "button", class: "secondary", id: "use-definition" }, "Edit in Interpret");
      use.addEventListener("click", () => {
        let draft = {};
        try {
          draft = JSON.parse(sessionStorage.getItem(DRAFT_KEY) || "{}");
        } catch { /* ignore */ }
        draft.definition = text;
        sessionStorage.setItem(DRAFT_KEY, JSON.stringify(draft));
        location.href = ui("/interpret");
      });
      put(tools, use);
      const findings = [...(info?.errors || []), ...(info?.warnings || [])];
      put(body, 
        findings.length ? h("div", { class: "notice warn" }, h("h2", {}, "Findings"),
          h("ul", {}, findings.map((f) => h("li", {}, h("code", {}, f.path), " ", f.message, h("span", { class: "faint" }, ` (${f.level})`)))))
          : null,
        h("section", { class: "card" }, h("div", { class: "card-head" }, h("h2", {}, "Definition"),
          h("span", { class: "faint" }, "as served, YAML")), yamlBlock(text.replace(/\n$/, ""))));
    } catch (err) {
      put(body, failure(err, load, "Could not read the definition"));
    }
  }
  load();
}

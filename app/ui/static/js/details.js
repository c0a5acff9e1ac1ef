// One interpretation on screen (the workload page and the interpret page share it): figures,
// the tree picture, status and conditions, gang groups, resources per instance, pods.

import { definitionHref, h, phaseChip, plural, put } from "./dom.js";
import { drawTree, fitTexts } from "./tree.js";

const GPU = "nvidia.com/gpu";

function stat(id, label, value, small) {
  return h("div", { class: "stat", id }, h("div", { class: "label" }, label),
    h("div", { class: "value" }, value, small ? [" ", h("small", {}, small)] : null));
}

function reqText(requests) {
  const entries = Object.entries(requests || {}).filter(([k]) => k !== GPU);
  if (!entries.length) return h("span", { class: "faint" }, "—");
  return entries.map(([k, v]) => `${k} ${v}`).join(", ");
}

/** Accelerators beyond nvidia.com/gpu (AMD, Intel, Gaudi, MIG slices, Neuron, TPU), or null:
 * GPUs already count whole devices, so an NVIDIA-only workload shows nothing more. */
function accText(accelerators) {
  const entries = Object.entries(accelerators || {}).filter(([k]) => k !== GPU);
  return entries.length ? entries.map(([k, v]) => `${k} ${v}`).join(", ") : null;
}

export function definitionLine(def) {
  if (!def) return null;
  const inline = def.source === "inline";
  return h("span", { class: "definition" }, "definition ",
    inline ? h("strong", { id: "definition-name" }, def.name || "(unnamed)")
      : h("a", { href: definitionHref(def.name), id: "definition-link" }, def.name),
    h("span", { class: "faint" }, ` (${def.source}${def.digest ? ", " + def.digest.replace(/^sha256:/, "").slice(0, 12) : ""})`));
}

function card(title, id, ...body) {
  return h("section", { class: "card section", id },
    h("div", { class: "card-head" }, h("h2", {}, title)), ...body);
}

function statusCard(result) {
  if (!result.status) {
    const e = (result.errors || []).find((x) => x.part === "status");
    return card("Status", "status", h("div", { class: "card-body" },
      h("dl", { class: "kv" }, h("dt", {}, "Phase"), h("dd", { id: "phase" }, phaseChip(null))),
      h("p", { class: "err", id: "status-error" }, "The status could not be read: ", e?.message || "")));
  }
  const st = result.status || {};
  const matched = st.matched || [];
  const conds = st.conditions || [];
  const flags = [st.deleting && "being deleted", st.stale && "status is stale (observedGeneration behind)"].filter(Boolean);
  return card("Status", "status",
    h("div", { class: "card-body" },
      h("dl", { class: "kv" },
        h("dt", {}, "Phase"), h("dd", { id: "phase" }, phaseChip(st.phase)),
        h("dt", {}, "Matched"), h("dd", { id: "matched" }, matched.length
          ? matched.map((m) => [phaseChip(m), " "]) : h("span", { class: "faint" }, "no status matched")),
        st.rawPhase !== undefined && st.rawPhase !== null ? [h("dt", {}, "Raw phase"), h("dd", {}, h("code", {}, st.rawPhase))] : null,
        flags.length ? [h("dt", {}, "Flags"), h("dd", {}, flags.map((f) => [h("span", { class: "tag warn" }, f), " "]))] : null)),
    conds.length ? h("table", { id: "conditions" },
      h("thead", {}, h("tr", {}, h("th", {}, "Condition"), h("th", {}, "Status"), h("th", {}, "Reason"), h("th", {}, "Message"))),
      h("tbody", {}, conds.map((c) => h("tr", {}, h("td", {}, c.type), h("td", {}, c.status ?? "—"),
        h("td", {}, c.reason || h("span", { class: "faint" }, "—")), h("td", { class: "muted" }, c.message || "")))))
      : h("div", { class: "card-body muted" }, "No conditions."));
}

function gangCard(result) {
  const g = result.gang || {};
  const body = [];
  if (result.gang === null) {
    const e = (result.errors || []).find((x) => x.part === "gang");
    body.push(h("div", { class: "card-body err", id: "gang-unknown" },
      `Unknown: component ${e?.component ?? "?"} could not be read, so the gang cannot be sized.`));
  } else if (g.mode === "podGroup" && g.podGroup) {
    const pg = g.podGroup;
    body.push(h("div", { class: "card-body" }, h("dl", { class: "kv" },
      h("dt", {}, "PodGroup"), h("dd", {}, h("code", { id: "podgroup-name" }, pg.name)),
      h("dt", {}, "Minimum"), h("dd", { id: "gang-min" }, h("strong", {}, plural(pg.minAvailable ?? 0, "pod")),
        pg.minSubGroup ? ` and ${plural(pg.minSubGroup, "sub-group")}` : ""),
      pg.topology ? [h("dt", {}, "Topology"), h("dd", {}, topo(pg.topology))] : null,
      pg.error ? [h("dt", {}, "Error"), h("dd", { class: "err" }, pg.error)] : null)));
    if ((pg.subGroups || []).length) {
      body.push(h("table", { id: "subgroups" },
        h("thead", {}, h("tr", {}, h("th", {}, "Sub-group"), h("th", { class: "num" }, "Minimum"), h("th", {}, "Topology"))),
        h("tbody", {}, pg.subGroups.map((sg) => h("tr", {}, h("td", {}, h("code", {}, sg.name ?? "—")),
          h("td", { class: "num" }, sg.minAvailable ?? "—"),
          h("td", {}, sg.error ? h("span", { class: "err" }, sg.error) : sg.topology ? topo(sg.topology) : "—"))))));
    }
  } else if (g.mode === "podGroups" && g.podGroups) {
    for (const pg of g.podGroups) {
      const members = (pg.members || []).map((m) => h("tr", {}, h("td", {}, m.component ?? "—"),
        h("td", { class: "num" }, m.minAvailable ?? "—"),
        h("td", {}, m.error ? h("span", { class: "err" }, m.error)
          : (m.groupByKeyPaths || []).map((p) => h("code", {}, p + " ")))));
      body.push(h("div", { class: "card-body" }, h("strong", {}, h("code", {}, pg.name ?? "(unnamed)"))),
        h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Member"), h("th", { class: "num" }, "Minimum"),
          h("th", {}, "Grouped by"))), h("tbody", {}, members)));
    }
  } else {
    body.push(h("div", { class: "card-body muted" }, "The definition gives no gang-scheduling instructions."));
  }
  if ((g.groups || []).length) {
    body.push(h("table", { id: "gang-groups" },
      h("thead", {}, h("tr", {}, h("th", {}, "Group (from the pods)"), h("th", { class: "num" }, "Minimum"), h("th", { class: "num" }, "Pods"))),
      h("tbody", {}, g.groups.map((gr) => h("tr", {}, h("td", {}, h("code", {}, gr.name)),
        h("td", { class: "num" }, gr.minAvailable ?? "—"), h("td", { class: "num" }, gr.pods.length))))));
  }
  return card("Gang scheduling", "gang", ...body);
}

function topo(t) {
  return [t.topologyName, t.requiredTopologyLevel && `required ${t.requiredTopologyLevel}`,
    t.preferredTopologyLevel && `preferred ${t.preferredTopologyLevel}`].filter(Boolean).join(" · ") || "—";
}

function resourcesCard(result) {
  const rows = [];
  (function walk(node, path) {
    const name = path ? `${path}/${node.name}` : node.name;
    if (node.error) {
      rows.push(h("tr", { class: "failed", dataset: { component: node.name, failed: "true" } },
        h("td", {}, name), h("td", { colspan: 8, class: "err" }, "could not be read: ", node.error.message)));
    }
    for (const inst of node.instances) {
      if (!node.podBearing) continue;
      const l = inst.live;
      const bounds = [inst.minReplicas != null && `min ${inst.minReplicas}`, inst.maxReplicas != null && `max ${inst.maxReplicas}`]
        .filter(Boolean).join(", ");
      rows.push(h("tr", { dataset: { component: node.name, instance: inst.id ?? "" } },
        h("td", {}, name), h("td", {}, inst.id ?? h("span", { class: "faint" }, "—")),
        h("td", { class: "num" }, inst.replicas ?? "—", bounds ? h("span", { class: "faint" }, ` (${bounds})`) : null),
        l ? h("td", { class: "num" }, `${l.ready}/${l.desired}`) : null,
        h("td", { class: "num" }, inst.pod?.gpus ?? 0),
        h("td", { class: "num" }, inst.totals.gpus,
          accText(inst.totals.accelerators) ? h("div", { class: "faint accelerators" }, accText(inst.totals.accelerators)) : null),
        h("td", { class: "muted" }, reqText(inst.pod?.requests)),
        h("td", {}, reqText(inst.totals.requests)),
        l ? h("td", { class: "muted" }, (l.nodes || []).join(", ") || "—") : null));
    }
    for (const c of node.children || []) walk(c, name);
  })(result.tree, "");
  const live = !!result.live;
  const t = result.totals || { pods: "unknown", gpus: "unknown", requests: {} };
  return card("Resources", "resources", h("table", { id: "resources-table" },
    h("thead", {}, h("tr", {}, h("th", {}, "Component"), h("th", {}, "Instance"), h("th", { class: "num" }, "Replicas"),
      live ? h("th", { class: "num" }, "Ready") : null, h("th", { class: "num" }, "GPU/pod"), h("th", { class: "num" }, "GPUs"),
      h("th", {}, "Per pod"), h("th", {}, "In total"), live ? h("th", {}, "Nodes") : null)),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 9, class: "empty" }, "No pod-bearing component."))),
    h("tfoot", {}, h("tr", { class: "total" }, h("th", {}, "Total"), h("th", {}), h("th", { class: "num" }, t.pods),
      live ? h("th", { class: "num" }, `${result.live.ready}/${result.live.desired ?? "?"}`) : null, h("th", {}),
      h("th", { class: "num", id: "total-gpus" }, t.gpus), h("th", {}), h("th", {}, reqText(t.requests)), live ? h("th", {}) : null))));
}

function podsCard(result) {
  const live = result.live;
  // not-ready pods first: they are what one looks for
  const pods = (live.pods || []).slice().sort((a, b) => (a.ready - b.ready) ||
    a.name.localeCompare(b.name, undefined, { numeric: true }));
  const instances = pods.some((p) => p.instance !== null && p.instance !== undefined);
  const unplaced = live.unplaced || [];
  return card(`Pods (${pods.length})`, "pods",
    pods.length ? h("table", { id: "pods-table" },
      h("thead", {}, h("tr", {}, h("th", {}, "Pod"), h("th", {}, "Component"), instances ? h("th", {}, "Instance") : null, h("th", {}, "Phase"),
        h("th", {}, "Ready"), h("th", {}, "Node"), h("th", {}, "Why not ready"))),
      h("tbody", {}, pods.map((p) => h("tr", { dataset: { pod: p.name } },
        h("td", { class: "mono" }, p.name), h("td", {}, p.component), instances ? h("td", {}, p.instance ?? "—") : null,
        h("td", {}, p.phase ?? "—"),
        h("td", {}, p.ready ? h("span", { class: "chip phase-running plain" }, "Ready") : h("span", { class: "chip phase-failed plain" }, "Not ready")),
        h("td", {}, p.node || h("span", { class: "faint" }, "not scheduled")),
        h("td", {}, [p.reason, p.containerReason].filter(Boolean).join(" · ") || h("span", { class: "faint" }, "—"))))))
      : h("div", { class: "card-body muted" }, "No pods."),
    unplaced.length ? h("div", { class: "card-body", id: "unplaced" }, h("strong", {}, "Not placed on any component: "),
      unplaced.join(", ")) : null);
}

/** Figures at the top: pods, GPUs, CPU, memory, gang minimum. */
export function statsRow(result) {
  // No totals: a component could not be read, and a partial sum must not pass for the whole.
  const t = result.totals || { pods: "unknown", gpus: "unknown", requests: { cpu: "unknown", memory: "unknown" } };
  const live = result.live;
  const pg = result.gang?.podGroup;
  return h("div", { class: "stats", id: "figures" },
    live ? stat("stat-ready", "Pods ready", live.ready, `/ ${live.desired ?? "unknown"}`) : stat("stat-pods", "Pods", t.pods),
    live ? stat("stat-current", "Pods existing", live.current) : null,
    stat("stat-gpus", "GPUs", t.gpus),
    accText(t.accelerators) ? stat("stat-accelerators", "Accelerators", accText(t.accelerators)) : null,
    stat("stat-cpu", "CPU", t.requests?.cpu ?? "0"),
    stat("stat-memory", "Memory", t.requests?.memory ?? "0"),
    pg ? stat("stat-gang", "Gang minimum", pg.minAvailable ?? "—", "pods") : null);
}

/** The tree card; the picture is laid out for the card's width (and again on resize). */
export function treeCard(result) {
  const scroll = h("div", { class: "tree-scroll", id: "tree-scroll" });
  const el = card("Structure", "structure", scroll);
  el.classList.add("tree-card");
  el.querySelector(".card-head").append(h("span", { class: "legend" },
    result.live ? [h("span", {}, h("i", { class: "l-ready" }), "all ready"), h("span", {}, h("i", { class: "l-partial" }), "some ready"),
      h("span", {}, h("i", { class: "l-down" }), "none ready")] : h("span", {}, h("i", { class: "l-spec" }), "from the spec (no pods given)")));
  let lastWidth = 0;
  const draw = () => {
    if (!scroll.isConnected) return;
    const width = Math.max(600, scroll.clientWidth - 32);
    if (Math.abs(width - lastWidth) < 8) return;
    lastWidth = width;
    const svg = drawTree(result, width);
    put(scroll, svg);
    fitTexts(svg);
  };
  let pending = null;
  const onResize = () => {
    if (!scroll.isConnected) {
      window.removeEventListener("resize", onResize);
      return;
    }
    clearTimeout(pending);
    pending = setTimeout(draw, 120);
  };
  window.addEventListener("resize", onResize);
  el.draw = draw;
  return el;
}

/** A partial interpretation: which parts could not be computed, where and why. */
function incompleteNotice(errors) {
  return h("div", { class: "notice error", id: "incomplete", role: "alert" },
    h("h2", {}, `Incomplete: ${errors.length === 1 ? "1 part" : errors.length + " parts"} could not be read`),
    h("p", {}, "Everything else is shown; totals that would be partial are left unknown."),
    h("table", { class: "problem-errors" }, h("tbody", {}, errors.map((e) => h("tr", { class: "finding" },
      h("td", {}, h("strong", {}, e.part), e.component ? [" ", h("code", {}, e.component)] : null),
      h("td", {}, h("code", {}, e.path || ""), e.expression ? [h("br"), h("code", { class: "faint" }, e.expression)] : null),
      h("td", { class: "err" }, e.message))))));
}

/** Everything below the page head.  Call `.draw()` on the result once it is in the document. */
export function resultSections(result) {
  const tree = treeCard(result);
  const warnings = result.warnings || [];
  const errors = result.errors || [];
  const frag = h("div", { class: "result" },
    errors.length ? incompleteNotice(errors) : null,
    warnings.length ? h("div", { class: "notice warn", id: "result-warnings" }, h("h2", {}, "Warnings"),
      h("ul", {}, warnings.map((w) => h("li", {}, w)))) : null,
    statsRow(result),
    tree,
    h("div", { class: "grid-2" }, statusCard(result), gangCard(result)),
    resourcesCard(result),
    result.live ? podsCard(result) : null);
  frag.draw = () => tree.draw();
  return frag;
}

"""Plain-text views for the terminal: an interpretation as a tree, definitions as a table."""

from __future__ import annotations

from typing import Any


def table_lines(rows: list[list[str]], gap: int = 3) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [(" " * gap).join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows]


def _replicas(inst: dict[str, Any]) -> str:
    r, lo, hi = inst.get("replicas"), inst.get("minReplicas"), inst.get("maxReplicas")
    text = "-" if r is None else str(r)
    if lo is not None or hi is not None:
        text += f" ({'' if lo is None else lo}..{'' if hi is None else hi})"
    return text


def _kind(k: dict[str, Any] | None) -> str:
    if not k:
        return ""
    return f"{k['group']}/{k['version']} {k['kind']}" if k.get("group") else f"{k['version']} {k['kind']}"


def _live(inst: dict[str, Any]) -> str:
    live = inst.get("live")
    return "" if live is None else f"{live['ready']}/{live['desired']} ready"


def tree_lines(result: dict[str, Any]) -> list[str]:
    rows = [["COMPONENT", "KIND", "REPLICAS", "GPU/POD", "PODS", "GPUS", "CPU", "MEMORY", "LIVE"]]
    has_live = "live" in result

    def add(node: dict[str, Any], prefix: str, branch: str) -> None:
        instances = node["instances"]
        single = len(instances) == 1 and instances[0]["id"] is None
        t = node["totals"] or _UNKNOWN
        if node.get("error"):  # a component that could not be read: marked, nothing counted
            rows.append(
                [
                    prefix + branch + node["name"] + " " + FAILED_MARK,
                    _kind(node["kind"]),
                    "",
                    "",
                    "?",
                    "?",
                    "?",
                    "?",
                    "",
                ]
            )
        elif single:
            inst = instances[0]
            pod = inst.get("pod")
            rows.append(
                [
                    prefix + branch + node["name"],
                    _kind(node["kind"]),
                    _replicas(inst),
                    str(pod["gpus"]) if pod else "",
                    str(t["pods"]),
                    str(t["gpus"]),
                    t["requests"].get("cpu", ""),
                    t["requests"].get("memory", ""),
                    _live(inst),
                ]
            )
        else:
            rows.append(
                [
                    prefix + branch + node["name"],
                    _kind(node["kind"]),
                    "",
                    "",
                    str(t["pods"]),
                    str(t["gpus"]),
                    t["requests"].get("cpu", ""),
                    t["requests"].get("memory", ""),
                    "",
                ]
            )
        child_prefix = prefix + ("" if not branch else ("    " if branch.startswith("└") else "│   "))
        items: list[tuple[str, Any]] = []
        if not single:
            items += [("instance", i) for i in instances]
        items += [("component", c) for c in node["children"]]
        for n, (what, item) in enumerate(items):
            br = "└── " if n == len(items) - 1 else "├── "
            if what == "component":
                add(item, child_prefix, br)
            else:
                it = item["totals"]
                pod = item.get("pod")
                rows.append(
                    [
                        child_prefix + br + (item["id"] or "(default)"),
                        "",
                        _replicas(item),
                        str(pod["gpus"]) if pod else "",
                        str(it["pods"]),
                        str(it["gpus"]),
                        it["requests"].get("cpu", ""),
                        it["requests"].get("memory", ""),
                        _live(item),
                    ]
                )

    add(result["tree"], "", "")
    if not has_live:
        rows = [r[:-1] for r in rows]
    w = result["workload"]
    d = result["definition"]
    where = f"{w['namespace']}/{w['name']}" if w.get("namespace") else str(w.get("name"))
    out = [f"{w['kind']} {where}", f"definition: {d['name']} ({d['source']})", phase_line(result.get("status")), ""]
    out += table_lines(rows)
    t = result["totals"]
    if t is None:
        out += ["", "total: unknown (a component could not be read; a partial count is not a total)"]
    else:
        req = ", ".join(f"{k}={v}" for k, v in t["requests"].items())
        out += ["", f"total: {t['pods']} pods, {t['gpus']} GPUs" + (f"  ({req})" if req else "")]
    out += gang_lines(result.get("gang", {}))
    if result.get("live"):
        live = result["live"]
        out.append(f"live: {live['ready']}/{live['desired']} ready, {live['current']} pods")
    for warning in result.get("warnings") or []:
        out.append(f"warning: {warning}")
    out += error_lines(result)
    return out


FAILED_MARK = "✗ FAILED"
_UNKNOWN: dict[str, Any] = {"pods": "?", "gpus": "?", "requests": {"cpu": "?", "memory": "?"}}


def phase_line(st: dict[str, Any] | None) -> str:
    if st is None:
        return "phase: unknown (the status could not be read)"
    return (
        f"phase: {st['phase']}"
        + (f"   matched: {','.join(st['matched'])}" if st["matched"] != [st["phase"]] else "")
        + (f"   raw phase: {st['rawPhase']}" if st.get("rawPhase") else "")
    )


def error_lines(result: dict[str, Any]) -> list[str]:
    """The parts of a partial interpretation that failed, each with where and why."""
    errors = result.get("errors") or []
    if not errors:
        return []
    out = ["", f"INCOMPLETE: {len(errors)} part{'s' if len(errors) != 1 else ''} could not be computed"]
    for e in errors:
        what = e["part"] + (f" {e['component']}" if e.get("component") else "")
        out.append(f"  {what}: {e['message']}")
        if e.get("path"):
            out.append(f"    at {e['path']}" + (f"  ({e['expression']})" if e.get("expression") else ""))
    return out


def gang_lines(g: dict[str, Any] | None) -> list[str]:
    if g is None:
        return ["gang: unknown (a component it sizes could not be read)"]
    out = []
    if "podGroup" in g and g.get("mode") == "podGroup":
        pg = g["podGroup"]
        subs = ", ".join(
            f"{s['name']}>={s['minAvailable']}" + (f" ({s['error']})" if s.get("error") else "")
            for s in pg.get("subGroups") or []
        )
        out.append(
            f"gang: PodGroup {pg['name']} minAvailable={pg.get('minAvailable')} "
            f"minSubGroup={pg.get('minSubGroup')}" + (f"  subgroups: {subs}" if subs else "")
        )
    elif g.get("podGroups"):
        for grp in g["podGroups"]:
            members = ", ".join(f"{m['component']}>={m['minAvailable']}" for m in grp["members"])
            out.append(f"gang: group {grp['name']}: {members}")
    for grp in g.get("groups") or []:
        out.append(f"  {grp['name']} (min {grp['minAvailable']}): {', '.join(grp['pods'])}")
    return out

"""Print the catalog table of docs/catalog.md from the definitions' annotations; `--write` puts it
between the page's markers, `--check` fails when the page does not contain the current table."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Read the catalog of the checkout this script belongs to, not whichever `app` an installed
# (editable) environment points at -- another worktree's definitions would be compared.
sys.path.insert(0, str(ROOT))

from app.karta.load import load_builtin  # noqa: E402

PAGE = ROOT / "docs" / "catalog.md"
BEGIN, END = "<!-- catalog:begin -->", "<!-- catalog:end -->"
HELPERS = "workload-map.dev/helper-pods"  # docs/definitions.md, "Helper pods"
RESTART = "workload-map.dev/restart"  # docs/definitions.md, "Restart"


def table() -> str:
    rows = ["| Kind | Group/Version | Definition | Components | Helper pods counted | Restart | States it tells apart "
            "| Notes |",
            "|---|---|---|---|---|---|---|---|"]
    for d in sorted(load_builtin(), key=lambda d: (d.gvk[0] or "~core", d.gvk[2], d.gvk[1])):
        g, v, k = d.gvk
        ann = (d.raw.get("metadata") or {}).get("annotations") or {}
        comps = ", ".join(c.name or "" for c in d.karta.components)
        helpers = ann.get(HELPERS) or "none"
        restart = ann.get(RESTART) or "no"
        rows.append(f"| {k} | {g + '/' if g else ''}{v} | `{d.name}` | {comps} | {helpers} | {restart} | "
                    f"{ann.get('workload-map.dev/states', '')} | {ann.get('workload-map.dev/notes', '')} |")
    return "\n".join(rows)


def main() -> int:
    t = table()
    if "--check" in sys.argv:
        page = PAGE.read_text()
        current = page.split(BEGIN, 1)[1].split(END, 1)[0].strip() if BEGIN in page else ""
        if current != t:
            print("docs/catalog.md catalog table is stale: run python scripts/catalog_table.py --write", file=sys.stderr)
            return 1
        return 0
    if "--write" in sys.argv:
        head, rest = PAGE.read_text().split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        PAGE.write_text(f"{head}{BEGIN}\n{t}\n{END}{tail}")
        return 0
    print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())

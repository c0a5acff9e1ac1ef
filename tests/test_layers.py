"""The package layout is the data flow: nothing below imports from above, and no module cycles.

    jqlang, documents, problem          (no app imports but their own)
    karta        the format, definitions and their store
    engine       one object + a definition -> the interpretation
    capacity     nodes' free capacity, the scheduler's filters, the fit of pod groups (pure)
    cluster      cluster I/O: API client, list/watch, owners, direct reads
    model        the watch-maintained model of a cluster (objects, owner index, interpretations)
    fleet        the clusters served: where they come from, one member (connection, model) each
    store        past one process: shards' claims and writes, the shared store's readers (Redis)
    service, cli, ui                    views
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"

# package -> the app packages it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "jqlang": set(),
    "documents": set(),
    "problem": set(),
    "karta": {"jqlang", "documents"},
    "engine": {"karta", "jqlang", "documents"},
    "formats": set(),
    "casefiles": {"engine", "karta", "jqlang", "documents"},
    "capacity": {"engine", "karta", "jqlang", "documents"},
    "cluster": {"capacity", "engine", "karta", "jqlang", "documents"},
    "model": {"capacity", "cluster", "engine", "karta", "jqlang", "documents"},
    "fleet": {"capacity", "model", "cluster", "engine", "karta", "jqlang", "documents"},
    "store": {"capacity", "fleet", "model", "cluster", "engine", "karta", "jqlang", "documents"},
    "ui": set(),
    "service": {"capacity", "store", "fleet", "model", "cluster", "engine", "karta", "jqlang", "documents", "problem",
                "formats", "ui"},
    "cli": {"capacity", "service", "store", "fleet", "model", "cluster", "engine", "karta", "jqlang", "documents",
            "problem", "casefiles", "formats"},
}


def _module(path: Path) -> str:
    rel = path.relative_to(APP.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every app module this file imports, at any depth (function-level imports count too)."""
    mod = _module(path)
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("app.") or a.name == "app"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("app"):
                continue
            for a in node.names:  # `from . import render` names a module
                sub = f"{target}.{a.name}"
                out.add(sub if (APP.parent / Path(*sub.split("."))).with_suffix(".py").exists()
                        or (APP.parent / Path(*sub.split(".")) / "__init__.py").exists() else target)
    return out


def _graph() -> dict[str, set[str]]:
    return {_module(p): _imports(p) for p in APP.rglob("*.py")}


def _layer(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_package_imports_from_above() -> None:
    bad = []
    for mod, deps in _graph().items():
        layer = _layer(mod)
        if not layer:
            continue
        assert layer in ALLOWED, f"{mod}: package app.{layer} has no place in the layer map of this test"
        for dep in deps:
            target = _layer(dep)
            if target and target != layer and target not in ALLOWED[layer]:
                bad.append(f"{mod} imports {dep}")
    assert not bad, "imports against the data flow:\n" + "\n".join(sorted(bad))


# what the CLI may use of the service: the `serve` command and its flags (the evaluation pool,
# the readers, the engine are below both, in app/engine, app/cluster, app/model)
CLI_USES_OF_SERVICE = {"app.service.serve", "app.service.settings", "app.service.flags"}


def test_the_cli_uses_of_the_service_only_what_serves_it() -> None:
    bad = sorted(f"{mod} imports {dep}" for mod, deps in _graph().items() if _layer(mod) == "cli"
                 for dep in deps if _layer(dep) == "service" and dep not in CLI_USES_OF_SERVICE)
    assert not bad, "the CLI reaches into the service:\n" + "\n".join(bad)


def test_no_import_cycles() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            if d not in graph or d == m:
                continue
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d] if d in stack else [m, d])
            elif d not in state:
                visit(d, stack + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_checker_sees_imports() -> None:
    """The walk really reads relative and function-level imports (or the tests above prove nothing)."""
    graph = _graph()
    assert "app.karta.store" in graph["app.cluster.sources"]
    assert "app.cli.live" in graph["app.cli.main"]  # imported inside a function


def test_the_jq_runtime_lives_with_the_parser() -> None:
    """jq evaluation (libjq, the native evaluator, generated code) is a jq implementation and
    belongs in app/jqlang; the engine holds the Karta semantics and reaches jq only through it."""
    for path in APP.rglob("*.py"):
        if _layer(_module(path)) == "jqlang":
            continue
        tree = ast.parse(path.read_text())
        libjq = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Import) and any(a.name == "jq" for a in n.names)
                 or isinstance(n, ast.ImportFrom) and n.module == "jq"]
        assert not libjq, f"{path.relative_to(APP.parent)} imports libjq (line {libjq[0]}): evaluate through app.jqlang"
    for name in ("native", "codegen", "jqbatch", "inputs", "values"):
        assert (APP / "jqlang" / f"{name}.py").exists() and not (APP / "engine" / f"{name}.py").exists()

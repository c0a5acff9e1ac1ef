"""`wlmap capacity` and `wlmap fit`: what each cluster of the kubeconfig has free, and where a
workload of a file would run now, read as the service reads a cluster without a live model: one
list of its Nodes and of its bound pods per context (`app.model.listed`), answered in the
shapes of GET /clusters' `capacity` and POST /fit (`app.capacity.answers`).

Exit codes: 0 ok (fit: it fits in at least one context); 1 a context failed (could not be
reached, or may not list nodes or pods), or (fit) it fits in none; 2 usage or an unreadable
file; 4 (fit) no definition covers the workload.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from ..capacity import answers
from ..capacity.nodes import Amounts, show
from ..capacity.plan import POLICIES, plan
from ..capacity.pools import DEFAULT_POOL_LABELS
from ..capacity.workload import NotFittable, pod_groups
from ..engine.accelerators import DEFAULT_RULES, ResourceRules
from ..karta.load import Definition
from . import render
from .common import EXIT_FAIL, EXIT_OK, EXIT_USAGE, CliError, add_context_flags, build_registry
from .offline import evaluate, parse_file, resolve

if TYPE_CHECKING:
    from ..model.listed import ListedCapacity


def _accelerators(values: Amounts, rules: ResourceRules) -> list[str]:
    """The accelerator resources among `values`, by the rules `totals` counts them with
    (--accelerator-resource)."""
    return sorted(r for r in values if rules.is_accelerator(r))


# -- reading the contexts ---------------------------------------------------------------------


class Unread(CliError):
    """A context with no capacity: the contract's withheld state (forbidden, unavailable), and why."""

    def __init__(self, state: str, message: str) -> None:
        super().__init__(message, EXIT_FAIL)
        self.state = state


async def _listed(args: argparse.Namespace, context: str | None) -> ListedCapacity:
    """One context's capacity from one list (Unread: why there is none)."""
    from ..model.listed import ListedCapacity
    from .live import _connect

    try:
        kube = await _connect(args, context)
    except Exception as e:
        raise Unread("unavailable", f"cannot load the kubeconfig: {e}") from None
    try:
        lc = ListedCapacity(kube, reader="the kubeconfig user")
        await lc.refresh()
    finally:
        await kube.close()
    state, reason = lc.capacity_state()
    if state != "ready":
        raise Unread(state, reason or state)
    return lc


async def _read(args: argparse.Namespace) -> tuple[list[tuple[str, ListedCapacity]], list[tuple[str, Unread]]]:
    """Every context asked (--context, --all-contexts; else the current one as ""), read at once,
    each within --context-timeout: those that answered, and those that failed."""
    from .live import _check_kubeconfig, _named_contexts, check_auth_flags

    check_auth_flags(args)
    _check_kubeconfig(args)
    named = _named_contexts(args)
    names: list[str | None] = list(named) if named else [None]

    async def one(ctx: str | None) -> ListedCapacity | Unread:
        try:
            return await asyncio.wait_for(_listed(args, ctx), args.context_timeout)
        except Unread as e:
            return e
        except TimeoutError:
            return Unread("unavailable", f"the API server did not answer within {args.context_timeout:g} s")

    parts = await asyncio.gather(*(one(n) for n in names))
    ok, failed = [], []
    for ctx, part in zip(names, parts, strict=True):
        if isinstance(part, Unread):
            failed.append((ctx or "", part))
        else:
            ok.append((ctx or "", part))
    return ok, failed


def _report(failed: list[tuple[str, Unread]], kubeconfig: str | None) -> None:
    from .live import _redact

    for ctx, err in failed:  # after the output: the last thing a person reads
        where = f"context {ctx}: " if ctx else ""
        print(f"error: {where}{_redact(str(err), kubeconfig)}", file=sys.stderr)


# -- wlmap capacity ----------------------------------------------------------------------------


def _free_of(values: dict[str, dict[str, int]], r: str) -> str:
    return f"{show(r, values['freeValues'].get(r, 0))}/{show(r, values['allocatableValues'].get(r, 0))}"


def capacity_lines(items: list[dict[str, Any]], rules: ResourceRules = DEFAULT_RULES) -> list[str]:
    """One row per context and node pool: nodes ready / total, accelerators, cpu and memory free
    of allocatable, the most GPUs free on one node."""
    rows = [
        [
            "CONTEXT",
            "POOL",
            "NODES",
            "ACCELERATORS(FREE/ALLOC)",
            "CPU(FREE/ALLOC)",
            "MEMORY(FREE/ALLOC)",
            "LARGEST-FREE",
        ]
    ]
    for item in items:
        cap = item["capacity"]
        for pool in cap["pools"]:
            accs = _accelerators(pool["allocatableValues"], rules)
            largest = (
                ", ".join(
                    f"{pool['largestFree'][r]} {r} ({pool['largestFreeNodes'][r]})"
                    for r in accs
                    if r in pool["largestFree"]
                )
                or "-"
            )
            rows.append(
                [
                    item["cluster"] or "-",
                    pool["value"] or "<none>",
                    f"{pool['nodeCounts']['ready']}/{pool['nodes']}",
                    ", ".join(f"{_free_of(pool, r)} {r}" for r in accs) or "-",
                    _free_of(pool, "cpu"),
                    _free_of(pool, "memory"),
                    largest,
                ]
            )
    return render.table_lines(rows)


def node_lines(items: list[dict[str, Any]], rules: ResourceRules = DEFAULT_RULES) -> list[str]:
    """`-o wide`: one row per node."""
    rows = [
        [
            "CONTEXT",
            "NODE",
            "POOL",
            "STATUS",
            "TAINTS",
            "ACCELERATORS(FREE/ALLOC)",
            "CPU(FREE/ALLOC)",
            "MEMORY(FREE/ALLOC)",
            "PODS",
        ]
    ]
    for item in items:
        for n in item["nodes"]:
            status = "Ready" if n["ready"] else "NotReady"
            if n["unschedulable"]:
                status += ",SchedulingDisabled"
            accs = _accelerators(n["allocatableValues"], rules)
            rows.append(
                [
                    item["cluster"] or "-",
                    n["name"],
                    (n["pool"] or {}).get("value") or "<none>",
                    status,
                    str(len(n["taints"])),
                    ", ".join(f"{_free_of(n, r)} {r}" for r in accs) or "-",
                    _free_of(n, "cpu"),
                    _free_of(n, "memory"),
                    f"{n['pods']}/{n['allocatableValues'].get('pods', 0)}",
                ]
            )
    return render.table_lines(rows)


def cmd_capacity(args: argparse.Namespace) -> int:
    from .live import _redact, write_output  # the cluster client, imported late as `get` does

    pools = args.pool_label or list(DEFAULT_POOL_LABELS)
    ok, failed = asyncio.run(_read(args))
    items = []
    for ctx, lc in ok:
        item: dict[str, Any] = {"cluster": ctx, "capacity": answers.capacity(lc.capacity(pools))}
        if args.output != "table":
            item["nodes"] = [answers.node(r) for r in lc.nodes(None, pools)]
        items.append(item)
    if args.output in ("json", "yaml"):
        errors = [{"cluster": c, "state": e.state, "message": _redact(str(e), args.kubeconfig)} for c, e in failed]
        write_output({"items": items, "errors": errors}, args.output)
    elif items:
        rules = args.engine.rules
        print("\n".join(node_lines(items, rules) if args.output == "wide" else capacity_lines(items, rules)))
    _report(failed, args.kubeconfig)
    return EXIT_FAIL if failed else EXIT_OK


# -- wlmap fit ---------------------------------------------------------------------------------


def _interpretation(args: argparse.Namespace) -> dict[str, Any]:
    """The file's one workload, interpreted offline as `wlmap interpret` does."""
    registry = build_registry(args.definition)
    docs = [d for d in parse_file(args.file) if isinstance(d, dict) and d]
    if len(docs) != 1:
        raise CliError(f"{args.file}: {len(docs)} documents; fit takes one workload", EXIT_USAGE)
    (doc,) = docs
    job: tuple[Any, Definition | None, CliError | None]
    try:
        job = (doc, resolve(doc, registry), None)
    except CliError as e:
        job = (doc, None, e)
    (out,) = asyncio.run(evaluate([job], None, args.eval_deadline, args.engine))
    if isinstance(out, CliError):
        raise out
    return out


def fit_lines(doc: dict[str, Any]) -> list[str]:
    """One row per context, the best first: whether it fits, the copies, where or what is short."""
    rows = [["CONTEXT", "FITS", "SETS", "PLACEMENT", "MESSAGE"]]
    for row in doc["clusters"]:
        if not row["available"]:
            rows.append([row["cluster"] or "-", "?", "-", "-", row["message"]])
            continue
        where = "; ".join(
            f"{p['component']}{'/' + p['instance'] if p['instance'] else ''}: "
            + ", ".join(f"{n}({k})" for n, k in p["nodes"].items())
            for p in row["placement"]
        )
        best = " (best)" if row["cluster"] == doc["best"] else ""
        rows.append(
            [
                (row["cluster"] or "-") + best,
                "yes" if row["fits"] else "no",
                str(row["sets"]),
                where or "-",
                row["message"],
            ]
        )
    return render.table_lines(rows)


def cmd_fit(args: argparse.Namespace) -> int:
    from .live import _redact, _warn, write_output

    result = _interpretation(args)
    try:
        groups = pod_groups(result)
    except NotFittable as e:
        raise CliError(str(e), EXIT_FAIL) from None
    ok, failed = asyncio.run(_read(args))
    rows = []
    for ctx, lc in ok:
        nodes, free = lc.capacity_snapshot()
        rows.append(answers.verdict(ctx, plan(groups, nodes, free, policy=args.policy), groups, lc.capacity_partial()))
    rows += [answers.withheld(ctx, e.state, _redact(str(e), args.kubeconfig)) for ctx, e in failed]
    rows = answers.ranked(rows)
    doc = {
        "workload": result.get("workload"),
        "totals": result.get("totals"),
        "policy": args.policy,
        "groups": [answers.group(g) for g in groups],
        "clusters": rows,
        "best": answers.best(rows),
    }
    if args.output in ("json", "yaml"):
        write_output(doc, args.output)
    else:
        print("\n".join(fit_lines(doc)))
    _warn(result.get("warnings") or [])
    _report(failed, args.kubeconfig)
    return EXIT_OK if doc["best"] is not None else EXIT_FAIL


# -- the parsers --------------------------------------------------------------------------------


CONTEXT_HELP = "kubeconfig context to read (repeatable; default: the current context)"
TIMEOUT_HELP = "the time one context may take before it is reported as not answering (default 10)"


def add_parsers(sub: Any, live: argparse.ArgumentParser) -> None:
    ca = sub.add_parser(
        "capacity",
        parents=[live],
        help="what each cluster has free: nodes, accelerators, cpu and memory per node pool",
        description="One list of Nodes and bound pods per context. Exit codes: 0 ok, 1 a context "
        "failed (the others are still shown), 2 usage.",
    )
    add_context_flags(ca, CONTEXT_HELP, TIMEOUT_HELP)
    ca.add_argument(
        "--pool-label",
        action="append",
        metavar="KEY",
        help="node label whose value names a node's pool (repeatable; default: " + ", ".join(DEFAULT_POOL_LABELS) + ")",
    )
    ca.add_argument(
        "-o",
        "--output",
        choices=["table", "wide", "json", "yaml"],
        default="table",
        help="wide: one row per node; json/yaml: GET /clusters' `capacity` per context, with its nodes",
    )
    ca.set_defaults(func=cmd_capacity)

    fi = sub.add_parser(
        "fit",
        parents=[live],
        help="where a workload of FILE would run now, in each context",
        description="The workload is interpreted offline, then fitted on each context's free capacity "
        "(one list of Nodes and bound pods). Exit codes: 0 it fits somewhere, 1 it fits nowhere or "
        "a context failed, 2 usage or an unreadable FILE, 4 no definition covers it.",
    )
    fi.add_argument("file", metavar="FILE", help="the workload's manifest, YAML or JSON ('-' for stdin)")
    add_context_flags(fi, CONTEXT_HELP, TIMEOUT_HELP)
    fi.add_argument(
        "--policy",
        choices=POLICIES,
        default=POLICIES[0],
        help="pack (default): each pod onto the most allocated node with room; spread: the least",
    )
    fi.add_argument(
        "-o", "--output", choices=["table", "json", "yaml"], default="table", help="json/yaml: what POST /fit returns"
    )
    fi.set_defaults(func=cmd_fit)

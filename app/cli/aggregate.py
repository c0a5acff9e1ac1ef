"""`wlmap describe TYPE/NAME --all-contexts`: the same workload in every context of the
kubeconfig, as one (what GET /fleet/workloads/{namespace}/{name} answers, built by the same
app/fleet/aggregate.py: `-o json` prints that answer, each context a cluster).

Every context is read at once, each within --context-timeout, in one namespace (-n, else the
current context's): the same namespace, name and kind everywhere.  A context where the workload
is not found is left out; one that fails otherwise is an error line naming it (exit 1), as in
`get --all-contexts`, and the others are still shown.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from ..cluster.workloads import LookupFailed, allow_all
from ..fleet.aggregate import MixedKinds, aggregate
from ..fleet.specs import contexts, kubeconfig_paths
from ..karta.registry import Registry
from . import render
from .common import EXIT_FAIL, EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE, CliError, build_registry, print_error
from .live import (
    _check_kubeconfig,
    _redact,
    _warn,
    check_auth_flags,
    default_namespace,
    lookup_error_of,
    open_session,
    served_kinds,
    split_target,
    write_output,
)


async def _read(
    args: argparse.Namespace, kind: str, name: str, ns: str, context: str, registry: Registry
) -> tuple[dict[str, Any] | None, list[str]]:
    """One context's live answer (None: not there) and its warnings; a CliError when it fails."""
    async with open_session(args, context, registry, f"context {context}: ") as (kube, workloads, _seen):
        kinds: list[Any] = []
        try:
            kinds = await served_kinds(kube, workloads, kind)
            return await workloads.interpretation(ns, name, kind, allow=allow_all), kube.warnings()
        except CliError as e:
            if e.code == EXIT_NOT_FOUND:  # the kind is not served there: nothing of it there
                return None, kube.warnings()
            raise
        except LookupFailed as e:
            err = lookup_error_of(e, kube, kinds, name, ns)
            if err.code == EXIT_NOT_FOUND:
                return None, kube.warnings()
            raise err from None


async def _read_all(
    args: argparse.Namespace, kind: str, name: str, ns: str, names: list[str]
) -> list[tuple[str, dict[str, Any] | CliError | None, list[str]]]:
    registry = build_registry(args.definition)  # once: its warnings are printed once

    async def one(ctx: str) -> tuple[str, dict[str, Any] | CliError | None, list[str]]:
        try:
            answer, warnings = await asyncio.wait_for(_read(args, kind, name, ns, ctx, registry), args.context_timeout)
            return ctx, answer, warnings
        except CliError as e:
            return ctx, e, []
        except TimeoutError:
            return ctx, CliError(f"the API server did not answer within {args.context_timeout:g} s", EXIT_FAIL), []

    return list(await asyncio.gather(*(one(n) for n in names)))


def cmd_describe_all(args: argparse.Namespace) -> int:
    kind, name = split_target(args.target, args.name)
    check_auth_flags(args)
    _check_kubeconfig(args)
    names, _ = contexts(args.kubeconfig)
    if not names:
        raise CliError(f"no contexts in the kubeconfig ({', '.join(kubeconfig_paths(args.kubeconfig))})", EXIT_FAIL)
    ns = args.namespace or default_namespace(args.kubeconfig, None)
    read = asyncio.run(_read_all(args, kind, name, ns, names))
    found = [(ctx, a) for ctx, a, _ in read if isinstance(a, dict)]
    failures = [(ctx, e) for ctx, e, _ in read if isinstance(e, CliError)]
    why = {ctx: _redact(str(e), args.kubeconfig) for ctx, e in failures}
    _warn([f"context {ctx}: {w}" for ctx, _, ws in read for w in ws])
    if found:
        try:
            result = aggregate(
                sorted(found, key=lambda f: f[0]), [f"cluster {c}: {w}; it is left out" for c, w in why.items()]
            )
        except MixedKinds as e:
            raise CliError(f"{e}: name one as TYPE, qualified by group (jobsets.jobset.x-k8s.io)", EXIT_USAGE) from None
        if args.output == "tree":
            print("\n".join(aggregate_lines(result)))
        else:
            write_output(result, args.output)
    elif not failures:
        print_error(f'{kind} "{name}" not found in namespace {ns} in any context ({", ".join(names)})')
    for ctx, w in why.items():  # last, so they are what a person reads last
        print_error(f"context {ctx}: {w}")
    if not failures:
        return EXIT_OK if found else EXIT_NOT_FOUND
    codes = {e.code for _, e in failures}
    return codes.pop() if not found and len(failures) == len(names) and len(codes) == 1 else EXIT_FAIL


def aggregate_lines(result: dict[str, Any]) -> list[str]:
    """The phase over every context, then a row per context and the total."""
    w = result["workload"]

    def ready(live: dict[str, Any]) -> str:
        return "/".join("?" if n is None else str(n) for n in (live["ready"], live["desired"]))

    def counts(t: dict[str, Any] | None) -> list[str]:
        return ["?", "?"] if t is None else [str(t["pods"]), str(t["gpus"])]

    parts = result["clusters"]
    rows = [["CLUSTER", "PHASE", "READY", "PODS", "GPUS"]]
    rows += [[p["cluster"], p["phase"] or "<unknown>", ready(p["live"]), *counts(p["totals"])] for p in parts]
    known = [p["live"]["ready"] for p in parts]
    total_ready = None if None in known else sum(known)
    desired = [p["live"]["desired"] for p in parts]
    rows.append(
        ["TOTAL", "", ready({"ready": total_ready, "desired": None if None in desired else sum(desired)}),
         *counts(result["totals"])]
    )  # fmt: skip
    head = f"{w['kind']}/{w['name']}   namespace: {w.get('namespace') or '<none>'}"
    where = f"{len(parts)} cluster{'s' if len(parts) != 1 else ''}"
    return [head, "", f"Phase: {result['status']['phase']}   (over {where})", ""] + render.table_lines(rows)

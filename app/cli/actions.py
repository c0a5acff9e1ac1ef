"""`wlmap suspend|resume|restart TYPE/NAME` and `wlmap scale TYPE/NAME COMPONENT=N ...`: a live
workload changed through its definition via the kubeconfig, as the service's POST .../suspend,
.../resume, .../restart and .../scale do (engine/suspend.py, engine/restart.py,
engine/replicas.py; then one JSON patch guarded by the resourceVersion read: cluster/writes.py).
The API server checks the kubeconfig user's own `patch` right.

Exit codes: 0 done (also when nothing had to change), 1 cluster, authorization or conflict (the
object changed between the read and the patch: nothing was written), 2 usage, 3 workload or its
type not in the cluster, 4 no definition covers the type, 5 the definition cannot do it (no
suspendDefinition; a kind whose controller does not roll pods on a template change; a count it
cannot write: no or a computed replicasPath, outside minReplicas / maxReplicas).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from .common import EXIT_FAIL, EXIT_NOT_FOUND, EXIT_OK, CliError

EXIT_CANNOT = 5
DONE = {"suspend": "suspended", "resume": "resumed", "scale": "scaled", "restart": "restarted"}
HELP = (
    "Exit codes: 0 done (also when nothing had to change), 1 cluster, authorization or conflict (the "
    "object changed meanwhile; nothing was written), 2 usage, 3 workload or its type not in the cluster, "
    "4 no definition covers the type, 5 the definition cannot do it (no suspendDefinition; a kind that "
    "does not roll its pods on a template change; a count it cannot write)."
)
WHAT = {
    "suspend": "suspend a live workload through its definition's suspendDefinition",
    "resume": "resume a live workload through its definition's suspendDefinition",
    "restart": "restart a live workload's pods (kubectl rollout restart), where its controller rolls them",
    "scale": "write a live workload's component counts through its definition's replicasPath",
}
# the new object from (definition, object as stored, interpreter)
Compute = Callable[[Any, dict[str, Any], Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]], Awaitable[Any]]


def add_parsers(sub: Any, live: argparse.ArgumentParser) -> None:
    for which in ("suspend", "resume", "restart", "scale"):
        p = sub.add_parser(which, parents=[live], help=WHAT[which], description=HELP)
        p.add_argument("target", metavar="TYPE[/NAME]", help="TYPE: a Kind or plural, optionally qualified by group")
        if which == "scale":
            p.add_argument(
                "counts",
                nargs="+",
                metavar="[NAME] COMPONENT[/INSTANCE]=N",
                help="the count of every instance of a component, or of the one named (repeatable)",
            )
        else:
            p.add_argument("name", nargs="?", metavar="NAME", help="the workload's name, unless given as TYPE/NAME")
        p.add_argument("-n", "--namespace", help="namespace (default: the kubeconfig context's, else default)")
        p.add_argument("--context", metavar="CTX", help="kubeconfig context (default: its current context)")
        p.add_argument(
            "-o",
            "--output",
            choices=["name", "json", "yaml"],
            default="name",
            help="name: one line as kubectl prints it; json/yaml: the interpretation after the change",
        )
        p.set_defaults(func=cmd_act, action_name=which)


def counts_of(words: list[str]) -> tuple[str | None, dict[str, int]]:
    """`[NAME] COMPONENT[/INSTANCE]=N ...`: the name (when given apart) and the counts."""
    name = words[0] if words and "=" not in words[0] else None
    out: dict[str, int] = {}
    for w in words[1:] if name is not None else words:
        key, eq, value = w.partition("=")
        if not eq or not key or not value.isdigit():
            raise CliError(f"scale takes COMPONENT[/INSTANCE]=N, got {w!r}")
        out[key] = int(value)
    if not out:
        raise CliError("scale: give at least one COMPONENT[/INSTANCE]=N")
    return name, out


def cmd_act(args: argparse.Namespace) -> int:
    from .live import (  # the cluster client: late
        check_auth_flags,
        default_namespace,
        split_target,
        write_output,
    )

    which = args.action_name
    counts: dict[str, int] = {}
    if which == "scale":
        args.name, counts = counts_of(args.counts)
    kind, name = split_target(args.target, args.name)
    check_auth_flags(args)
    ns = args.namespace or default_namespace(args.kubeconfig, args.context)
    result, changed = asyncio.run(_act(args, compute(which, counts), kind, name, ns))
    if args.output == "name":
        w = result.get("workload") or {}
        group = (w.get("apiVersion") or "").rpartition("/")[0]
        phase = (result.get("status") or {}).get("phase") or "Unknown"
        verb = DONE[which] if changed else f"already {DONE[which]} (unchanged)"
        print(f"{str(w.get('kind') or kind).lower()}{'.' + group if group else ''}/{name} {verb}; phase {phase}")
    else:
        write_output(result, args.output)
    return EXIT_OK


def compute(which: str, counts: dict[str, int]) -> Compute:
    """The action: the definition's suspend actions, or a revision (engine/replicas.py) with the
    counts or the restart annotation."""

    async def suspending(d: Any, obj: dict[str, Any], _: Any) -> Any:
        from ..engine.suspend import ActionError, NoSuspendDefinition, apply_actions

        try:
            return apply_actions(d, obj, which)
        except NoSuspendDefinition as e:
            raise CliError(str(e), EXIT_CANNOT) from None
        except ActionError as e:
            raise CliError(f"the definition {d.name}: {e}", EXIT_FAIL) from None

    async def revising(d: Any, obj: dict[str, Any], interpret: Any) -> Any:
        from ..engine.replicas import revise
        from ..engine.restart import NotRestartable, restart_set
        from ..engine.update import UpdateError

        try:
            set_ = restart_set(d) if which == "restart" else None
            done = await revise(d, obj, await interpret(obj), set_, None, counts or None, interpret)
        except (NotRestartable, UpdateError) as e:
            raise CliError(str(e), EXIT_CANNOT) from None
        if done.moved:
            raise CliError(
                "the change would not read back as asked (nothing was written): the interpretation also "
                "changes at " + ", ".join(done.moved[:5]),
                EXIT_CANNOT,
            )
        return done.rewrite.object

    return suspending if which in ("suspend", "resume") else revising


async def _act(args: argparse.Namespace, action: Compute, kind: str, name: str, ns: str) -> tuple[dict[str, Any], bool]:
    from ..cluster.reader import LookupFailed, allow_all
    from ..cluster.writes import WriteFailed, guard, guarded_patch
    from ..engine.update import make_patch
    from .live import lookup_error, lookup_error_of, open_session, served_kinds

    async with open_session(args, args.context) as (kube, workloads, _):
        kinds: list[Any] = []
        try:
            kinds = await served_kinds(kube, workloads, kind)
            found = await workloads.locate(ns, name, kind, allow=allow_all)  # as the kubeconfig user
            d = workloads.definition_for(found.resource.gvk)
        except LookupFailed as e:
            raise lookup_error_of(e, kube, kinds, name, ns) from None
        obj, res = found.item, found.resource
        new = await action(d, obj, lambda o: workloads.interpret(d, o, None))
        ops = make_patch(obj, new)
        if ops:
            rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            try:
                await guarded_patch(kube, res, found.namespace or None, name, guard(ops, rv))
            except WriteFailed as e:
                raise CliError(e.message, EXIT_NOT_FOUND if e.status == 404 else EXIT_FAIL) from None
        try:  # without pods: the change is made, the answer needs no `list pods` right
            result = await workloads.interpretation(
                ns, name, res.kind, res.api_version, with_pods=False, allow=allow_all
            )
        except LookupFailed as e:
            raise lookup_error(e, kube) from None
        return result, bool(ops)

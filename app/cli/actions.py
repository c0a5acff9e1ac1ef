"""`wlmap suspend|resume TYPE/NAME`: a live workload's suspendDefinition applied through the
kubeconfig, as the service's POST .../suspend does (engine/suspend.py, then one JSON patch
guarded by the resourceVersion read: cluster/writes.py).  The API server checks the kubeconfig
user's own `patch` right.

Exit codes: 0 done (also when nothing had to change), 1 cluster, authorization or conflict (the
object changed between the read and the patch: nothing was written), 2 usage, 3 workload or its
type not in the cluster, 4 no definition covers the type, 5 the definition has no
suspendDefinition.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from .common import EXIT_FAIL, EXIT_NOT_FOUND, EXIT_OK, CliError

EXIT_NOT_SUSPENDABLE = 5
DONE = {"suspend": "suspended", "resume": "resumed"}
HELP = (
    "Exit codes: 0 done (also when nothing had to change), 1 cluster, authorization or conflict (the "
    "object changed meanwhile; nothing was written), 2 usage, 3 workload or its type not in the cluster, "
    "4 no definition covers the type, 5 the definition has no suspendDefinition."
)


def add_parsers(sub: Any, live: argparse.ArgumentParser) -> None:
    for which in ("suspend", "resume"):
        p = sub.add_parser(
            which,
            parents=[live],
            help=f"{which} a live workload through its definition's suspendDefinition",
            description=HELP,
        )
        p.add_argument("target", metavar="TYPE[/NAME]", help="TYPE: a Kind or plural, optionally qualified by group")
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


def cmd_act(args: argparse.Namespace) -> int:
    from .live import (  # the cluster client: late
        check_auth_flags,
        default_namespace,
        split_target,
        write_output,
    )

    kind, name = split_target(args.target, args.name)
    check_auth_flags(args)
    ns = args.namespace or default_namespace(args.kubeconfig, args.context)
    result, changed = asyncio.run(_act(args, args.action_name, kind, name, ns))
    if args.output == "name":
        w = result.get("workload") or {}
        group = (w.get("apiVersion") or "").rpartition("/")[0]
        phase = (result.get("status") or {}).get("phase") or "Unknown"
        verb = DONE[args.action_name] if changed else f"already {DONE[args.action_name]} (unchanged)"
        print(f"{str(w.get('kind') or kind).lower()}{'.' + group if group else ''}/{name} {verb}; phase {phase}")
    else:
        write_output(result, args.output)
    return EXIT_OK


async def _act(args: argparse.Namespace, which: str, kind: str, name: str, ns: str) -> tuple[dict[str, Any], bool]:
    from ..cluster.reader import LookupFailed, allow_all
    from ..cluster.writes import WriteFailed, guard, guarded_patch
    from ..engine.suspend import ActionError, NoSuspendDefinition, apply_actions
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
        try:
            new = apply_actions(d, obj, which)
        except NoSuspendDefinition as e:
            raise CliError(str(e), EXIT_NOT_SUSPENDABLE) from None
        except ActionError as e:
            raise CliError(f"the definition {d.name}: {e}", EXIT_FAIL) from None
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

"""`wlmap update FILE --set-label k=v --scheduler-name N ... --replicas worker=3`: the workload with
those fields written into every pod of its chosen components (app/engine/update.py) and those
counts through the replicasPath (app/engine/replicas.py), as `POST /interpret/update` answers,
offline.  The result is interpreted before it is printed and refused (exit 1) when it
would not read back as set.

Output: `-o yaml` (default) the rewritten object, ready for `kubectl apply -f -`; `-o json` what
the HTTP route returns (object, patch, changed, writes); `-o patch` the RFC 6902 patch alone, for
`kubectl patch --type json -p "$(wlmap update ... -o patch)"`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

import yaml

from ..engine.divide import DivideError, divide
from ..engine.replicas import revise
from ..engine.update import UpdateError
from .common import EXIT_FAIL, EXIT_OK, CliError, build_registry, dump_json
from .offline import Evaluating, parse_file, resolve

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _pair(flag: str) -> Any:
    def parse(text: str) -> tuple[str, str]:
        key, eq, value = text.partition("=")
        if not eq or not key:
            raise argparse.ArgumentTypeError(f"{flag} takes KEY=VALUE, got {text!r}")
        return key, value

    return parse


def toleration(text: str) -> dict[str, str]:
    """kubectl's taint syntax: `key=value:Effect` (Equal), `key:Effect` or `key` (Exists)."""
    body, colon, effect = text.rpartition(":") if ":" in text else (text, "", "")
    if colon and effect not in EFFECTS:
        raise argparse.ArgumentTypeError(f"--toleration {text!r}: the effect must be one of {', '.join(EFFECTS)}")
    key, eq, value = body.partition("=")
    if not key:
        raise argparse.ArgumentTypeError(f"--toleration {text!r}: no key (KEY[=VALUE][:EFFECT])")
    t = {"key": key, "operator": "Equal", "value": value} if eq else {"key": key, "operator": "Exists"}
    return {**t, "effect": effect} if effect else t


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    u = sub.add_parser(
        "update",
        parents=[common],
        help="write labels, a scheduler, tolerations... into every pod of "
        "a workload (offline; prints the result or its JSON patch)",
        description="Exit codes: 0 ok, 1 refused (a field the definition has no path for, a path "
        "that is not writable, a result that would not read back), 2 usage or an "
        "unreadable file, 4 no definition covers the workload.",
    )
    u.add_argument("file", metavar="FILE", help="one workload manifest, YAML or JSON ('-' for stdin)")
    u.add_argument(
        "--set-label",
        action="append",
        type=_pair("--set-label"),
        default=[],
        metavar="KEY=VALUE",
        help="merge this label into the pods' labels (repeatable)",
    )
    u.add_argument(
        "--set-annotation",
        action="append",
        type=_pair("--set-annotation"),
        default=[],
        metavar="KEY=VALUE",
        help="merge this annotation into the pods' annotations (repeatable)",
    )
    u.add_argument("--scheduler-name", metavar="NAME", help="the pods' scheduler")
    u.add_argument("--priority-class", metavar="NAME", help="the pods' priority class")
    u.add_argument(
        "--node-selector",
        action="append",
        type=_pair("--node-selector"),
        default=[],
        metavar="KEY=VALUE",
        help="merge into the pods' node selector (repeatable)",
    )
    u.add_argument(
        "--toleration",
        action="append",
        type=toleration,
        default=[],
        metavar="KEY[=VALUE][:EFFECT]",
        help="add this toleration where it is not already there (repeatable)",
    )
    u.add_argument(
        "--component",
        action="append",
        metavar="NAME",
        help="rewrite only this component (repeatable; default: every one that defines pods)",
    )
    u.add_argument(
        "--replicas",
        action="append",
        type=replica_count,
        default=[],
        metavar="COMPONENT[/INSTANCE]=N",
        help="write this count through the component's replicasPath (every instance, or the one named; repeatable)",
    )
    u.add_argument("-o", "--output", choices=["yaml", "json", "patch"], default="yaml")
    u.add_argument(
        "--eval-deadline",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="time limit of one evaluation with a definition that is not built in (default 10)",
    )
    u.set_defaults(func=cmd_update)


def _set(args: argparse.Namespace, counts: bool) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    for field, pairs in (
        ("labels", args.set_label),
        ("annotations", args.set_annotation),
        ("nodeSelector", args.node_selector),
    ):
        if pairs:
            out[field] = dict(pairs)
    if args.scheduler_name is not None:
        out["schedulerName"] = args.scheduler_name
    if args.priority_class is not None:
        out["priorityClassName"] = args.priority_class
    if args.toleration:
        out["tolerations"] = args.toleration
    if not out and counts:
        return None
    if not out:
        raise CliError(
            "nothing to set: give --set-label, --set-annotation, --scheduler-name, --priority-class, "
            "--node-selector, --toleration or --replicas"
        )
    return out


def replica_count(text: str) -> tuple[str, int]:
    """`--replicas COMPONENT[/INSTANCE]=N`."""
    key, eq, value = text.partition("=")
    if not eq or not key or not value.isdigit():
        raise argparse.ArgumentTypeError(f"--replicas takes COMPONENT[/INSTANCE]=N, got {text!r}")
    return key, int(value)


def one_workload(args: argparse.Namespace) -> tuple[dict[str, Any], Any]:
    """The single document of FILE and its definition."""
    docs = [d for d in parse_file(args.file) if d is not None]
    if len(docs) != 1:
        raise CliError(f"{args.file}: expected one workload, found {len(docs)} documents")
    return docs[0], resolve(docs[0], build_registry(args.definition))


async def _revise(args: argparse.Namespace, obj: dict[str, Any], d: Any, set_: Any, asked: Any) -> Any:
    async with Evaluating(d, args.eval_deadline, args.engine) as ev:
        return await revise(d, obj, await ev(obj), set_, args.component, asked, ev)


def cmd_update(args: argparse.Namespace) -> int:
    asked = dict(args.replicas) or None
    set_ = _set(args, asked is not None)
    obj, d = one_workload(args)
    try:
        done = asyncio.run(_revise(args, obj, d, set_, asked))
    except UpdateError as e:
        raise CliError(e.message, EXIT_FAIL) from None
    moved, rw = done.moved, done.rewrite
    if moved:
        raise CliError(
            "the rewritten object would not read back as set: its interpretation also changes at "
            + ", ".join(moved[:5])
            + "; a location shared with another component? name them all with "
            "--component (a count: one other components' counts are computed from)",
            EXIT_FAIL,
        )
    for w in rw.writes:
        if "skipped" in w:
            print(f"note: component {w['component']}: {w['path'] or '/'} skipped ({w['skipped']})", file=sys.stderr)
    if args.output == "patch":
        print(json.dumps(rw.patch, ensure_ascii=False))
    elif args.output == "json":
        print(
            dump_json(
                {
                    "object": rw.object,
                    "patch": rw.patch,
                    "changed": rw.changed,
                    "components": rw.components,
                    "writes": rw.writes,
                    "totals": done.after.get("totals"),
                }
            )
        )
    else:
        print(yaml.safe_dump(rw.object, sort_keys=False, allow_unicode=True), end="")
    return EXIT_OK


def cluster_weight(text: str) -> tuple[str, int]:
    """`--cluster NAME=WEIGHT`."""
    name, eq, value = text.partition("=")
    if not eq or not name or not value.isdigit():
        raise argparse.ArgumentTypeError(f"--cluster takes NAME=WEIGHT, got {text!r}")
    return name, int(value)


def add_divide_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "divide",
        parents=[common],
        help="split a workload's replicas over clusters by weight (offline; one rewritten copy per cluster)",
        description="Exit codes: 0 ok, 1 refused, 2 usage or an unreadable file, 4 no definition covers the workload.",
    )
    p.add_argument("file", metavar="FILE", help="one workload manifest, YAML or JSON ('-' for stdin)")
    p.add_argument(
        "--cluster", action="append", type=cluster_weight, required=True, metavar="NAME=WEIGHT", help="(repeatable)"
    )
    p.add_argument("-o", "--output", choices=["yaml", "json"], default="yaml")
    p.add_argument("--eval-deadline", type=float, default=10.0, metavar="SECONDS")
    p.set_defaults(func=cmd_divide, component=None)


async def _divide(args: argparse.Namespace, obj: dict[str, Any], d: Any) -> dict[str, Any]:
    async with Evaluating(d, args.eval_deadline, args.engine) as ev:
        return await divide(d, obj, await ev(obj), args.cluster, ev)


def cmd_divide(args: argparse.Namespace) -> int:
    names = [n for n, _ in args.cluster]
    if len(set(names)) != len(names) or not any(w for _, w in args.cluster):
        raise CliError("--cluster: each name once, and at least one weight above 0")
    obj, d = one_workload(args)
    try:
        out = asyncio.run(_divide(args, obj, d))
    except UpdateError as e:
        raise CliError(e.message, EXIT_FAIL) from None
    except DivideError as e:
        raise CliError(f"{e}: its interpretation also changes at {', '.join(e.moved[:5])}", EXIT_FAIL) from None
    for k in out["kept"]:
        print(f"note: kept whole: {k['reason']}", file=sys.stderr)
    if args.output == "json":
        print(dump_json(out))
        return EXIT_OK
    docs = []
    for part in out["parts"]:
        counts = ", ".join(f"{c}={n}" for c, n in part["replicas"].items())
        head = f"# cluster: {part['cluster']}" + (f" ({counts})" if counts else "")
        docs.append(head + "\n" + yaml.safe_dump(part["object"], sort_keys=False, allow_unicode=True))
    print("---\n".join(docs), end="")
    return EXIT_OK

"""`wlmap update FILE --set-label k=v --scheduler-name N ...`: the workload with those fields written
into every pod of its chosen components (app/engine/update.py), as `POST /interpret/update`
answers, offline.  The result is interpreted before it is printed and refused (exit 1) when it
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

from ..engine.update import UpdateError, attempts, read_back_problems
from .common import EXIT_FAIL, EXIT_OK, CliError, build_registry, dump_json
from .offline import evaluate, parse_file, resolve

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
    u.add_argument("-o", "--output", choices=["yaml", "json", "patch"], default="yaml")
    u.add_argument(
        "--eval-deadline",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="time limit of one evaluation with a definition that is not built in (default 10)",
    )
    u.set_defaults(func=cmd_update)


def _set(args: argparse.Namespace) -> dict[str, Any]:
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
    if not out:
        raise CliError(
            "nothing to set: give --set-label, --set-annotation, --scheduler-name, --priority-class, "
            "--node-selector or --toleration"
        )
    return out


def cmd_update(args: argparse.Namespace) -> int:
    set_ = _set(args)
    docs = [d for d in parse_file(args.file) if d is not None]
    if len(docs) != 1:
        raise CliError(f"{args.file}: expected one workload, found {len(docs)} documents")
    obj = docs[0]
    d = resolve(obj, build_registry(args.definition))
    try:
        tries = list(attempts(d, obj, set_, args.component))
    except UpdateError as e:
        raise CliError(e.message, EXIT_FAIL) from None
    results = asyncio.run(
        evaluate([(obj, d, None)] + [(rw.object, d, None) for rw in tries], None, args.eval_deadline, args.engine)
    )
    for out in results:
        if isinstance(out, CliError):
            raise out
    before = results[0]
    for rw, after in zip(tries, results[1:], strict=False):
        moved = read_back_problems(before, after, set_, rw)  # type: ignore[arg-type]
        if not moved:
            break
    if moved:
        raise CliError(
            "the rewritten object would not read back as set: its interpretation also changes at "
            + ", ".join(moved[:5])
            + "; a location shared with another component? name them all with "
            "--component",
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
                }
            )
        )
    else:
        print(yaml.safe_dump(rw.object, sort_keys=False, allow_unicode=True), end="")
    return EXIT_OK

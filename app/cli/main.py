"""`wlmap`: interpret workloads offline, list/show/validate/test definitions, describe and list
live workloads through a kubeconfig, serve the API.

Exit codes: 0 ok; 1 a result is an error (invalid definition, failed interpretation, failed
case), or the cluster could not be reached or refused, or (fit) the workload fits nowhere; 2
usage, or an input that cannot be read or parsed; 3 a live workload (or its type) is not in the
cluster; 4 no definition covers a workload.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from .. import __version__
from ..documents import DocumentError
from ..formats import FORMATS, FormatError
from ..formats import render as render_format
from ..karta.load import Definition, NotAKarta, definitions_from_text
from ..problem import problem_body
from . import actions, listing, render, update
from . import capacity as capacity_cli
from .common import (
    EXIT_FAIL,
    EXIT_NO_DEFINITION,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    add_context_flags,
    build_registry,
    dump_json,
    print_error,
    read_input,
    request_timeout,
)
from .offline import evaluate as _evaluate
from .offline import parse_file as _parse
from .offline import resolve as _resolve

# -- interpret -----------------------------------------------------------------------------


def cmd_interpret(args: argparse.Namespace) -> int:
    output = args.output or ("yaml" if args.format else "tree")
    if args.format and output == "tree":
        raise CliError(f"-o tree does not apply with --format {args.format}: use json, jsonl or yaml")
    registry = build_registry(args.definition)
    pods = None
    if args.pods:
        pods = [d for d in _parse(args.pods) if isinstance(d, dict) and d.get("kind") == "Pod"]
    # Resolve every document first; then evaluate (user definitions under a deadline).
    jobs: list[tuple[Any, Definition | None, CliError | None]] = []
    for path in args.files:
        for doc in _parse(path):
            try:
                jobs.append((doc, _resolve(doc, registry), None))
            except CliError as e:
                jobs.append((doc, None, e))
    outcomes = asyncio.run(_evaluate(jobs, pods, args.eval_deadline, args.engine, templates=bool(args.format)))
    results: list[dict[str, Any]] = []
    failed = no_def = False
    for out in outcomes:
        if isinstance(out, CliError):
            failed = True
            no_def = no_def or out.code == EXIT_NO_DEFINITION
            missing = out.code == EXIT_NO_DEFINITION
            results.append(
                {
                    "error": problem_body(
                        404 if missing else 422,
                        "no-definition" if missing else "interpretation-failed",
                        "Cannot interpret",
                        str(out),
                        None,
                        out.errors,
                    )
                }
            )
        elif args.format:
            try:
                results.append(render_format(args.format, out))
            except FormatError as e:  # as the service's 422
                failed = True
                title = e.title.format(fmt=args.format)
                results.append({"error": problem_body(422, e.slug, title, str(e), None, e.errors)})
        else:
            results.append(out)
    ok = [r for r in results if "error" not in r]
    partial = any(r.get("complete") is False for r in ok)  # printed like any result, but not a success
    if output == "jsonl":
        for r in results:
            print(json.dumps(r, ensure_ascii=False))
    else:
        for r in results:
            if "error" in r:
                print_error(r["error"]["detail"])
                for err in r["error"].get("errors") or []:
                    where = f"{err['path']}: " if err.get("path") else ""
                    if err["message"] != r["error"]["detail"]:
                        print(f"  {where}{err['message']}", file=sys.stderr)
                    elif where:
                        print(f"  at {err['path']}", file=sys.stderr)
        if output == "json":
            print(dump_json(ok[0] if len(ok) == 1 and len(results) == 1 else ok))
        elif output == "yaml":
            print(yaml.safe_dump_all(ok, sort_keys=False, allow_unicode=True), end="")
        else:
            print("\n\n".join("\n".join(render.tree_lines(r)) for r in ok))
    if no_def and len(ok) == 0:
        return EXIT_NO_DEFINITION
    return EXIT_FAIL if failed or partial else EXIT_OK


# -- definitions ---------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    registry = build_registry(args.definition)
    if args.kubeconfig or args.context:
        from .live import with_cluster_definitions

        registry = with_cluster_definitions(args, registry)
    rows, defs = [], []
    for d in registry.active():
        g, v, k = d.gvk or ("", "", "")
        if (
            (args.group is not None and g != args.group)
            or (args.kind and k.lower() != args.kind.lower())
            or (args.version and v != args.version)
        ):
            continue
        rows.append({"name": d.name, "group": g, "version": v, "kind": k, "source": d.source, "digest": d.digest})
        defs.append(d)
    if args.output == "json":
        print(dump_json(rows))
        return EXIT_OK
    if args.output == "yaml":
        print(yaml.safe_dump(rows, sort_keys=False, allow_unicode=True), end="")
        return EXIT_OK
    if not rows:
        print("No Karta definitions found.", file=sys.stderr)
        return EXIT_OK
    # ORIGIN: where the definition came from (builtin, directory, configmap, cluster).
    table = [["NAME", "KIND", "GROUP/VERSION", "ORIGIN", "COMPONENTS"]]
    for r, d in zip(rows, defs, strict=False):
        comps = [c.name or "" for c in d.karta.components]
        table.append(
            [
                r["name"],
                r["kind"],
                f"{r['group']}/{r['version']}" if r["group"] else r["version"],
                r["source"],
                ", ".join(comps),
            ]
        )
    print("\n".join(render.table_lines(table, gap=2)))
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    registry = build_registry(args.definition)
    d = registry.by_name(args.name)
    if d is None:
        print_error(f'no Karta definition named "{args.name}". Run "wlmap definitions list" to see what is available')
        return EXIT_FAIL
    if args.evaluation:
        from ..engine.compiled import evaluation

        if not d.valid:
            print_error(f'definition "{args.name}" is invalid: nothing of it is evaluated')
            return EXIT_FAIL
        ev = evaluation(d)
        if args.output == "json":
            print(dump_json(ev))
            return EXIT_OK
        print(f"{ev['native']} of {ev['expressions']} expressions run natively (the rest through libjq)")
        rows = [["STAGE", "HOW", "EXPRESSION", "WHY NOT NATIVE"]]
        for x in ev["items"]:
            rows.append(
                [
                    x["stage"],
                    "native" if x["native"] else "libjq",
                    " ".join(x["expression"].split())[:70],
                    x["reason"] or "",
                ]
            )
        print("\n".join(render.table_lines(rows, gap=2)))
        return EXIT_OK
    if args.output == "json":
        print(dump_json(d.raw))
    else:
        print(yaml.safe_dump(d.raw, sort_keys=False, allow_unicode=True), end="")
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    worst = EXIT_OK
    for path in args.files:
        name = "stdin" if path == "-" else path
        try:
            defs = definitions_from_text(read_input(path), "directory", name, skip_other_kinds=False)
        except (DocumentError, NotAKarta) as e:
            print_error(f"{name}: {e}")
            return EXIT_USAGE
        except CliError as e:
            print_error(str(e))
            return EXIT_USAGE
        if not defs:
            print_error(f"{name}: no Karta definition found")
            return EXIT_USAGE
        for d in defs:
            errs = [f for f in d.findings if f.level == "error"]
            warns = [f for f in d.findings if f.level == "warning"]
            where = d.origin
            if errs:
                print(f"INVALID: {where}")
                for f in errs:
                    for line in f.message.splitlines():
                        print(f"  {line}")
                print_error(f"{len(errs)} finding(s) in {where}")
                worst = EXIT_FAIL
            else:
                g = d.karta.root_gvk
                print(f"OK: {where} is a valid Karta definition (GVK: {g})")
            for f in warns:
                print(f"warning: {where}: {f.message}", file=sys.stderr)
    return worst


def cmd_test(args: argparse.Namespace) -> int:
    from ..casefiles import case_folders, run_folder

    base = build_registry(args.definition)
    root = Path(args.dir)
    if not root.exists():
        print_error(f"{root}: no such file or directory")
        return EXIT_USAGE
    folders = case_folders(root)
    if not folders:
        print_error(f"{root}: no {root / 'cases.yaml'} (or folders holding one) found")
        return EXIT_USAGE
    passed = failed = 0
    for folder in folders:
        for r in run_folder(folder, base, args.engine):
            if r.ok:
                passed += 1
                if args.verbose:
                    print(f"PASS {folder}: {r.name}")
            else:
                failed += 1
                print(f"FAIL {folder}: {r.name}")
                for f in r.failures:
                    print(f"  {f}")
    print(f"{passed} passed, {failed} failed")
    return EXIT_FAIL if failed else EXIT_OK


# -- describe, get (live) ------------------------------------------------------------------


def cmd_describe(args: argparse.Namespace) -> int:
    if args.all_contexts:  # the same workload in every context, as one
        from .aggregate import cmd_describe_all

        return cmd_describe_all(args)
    from .live import (
        cmd_describe as run,  # imported late: the cluster client is not needed offline
    )

    return run(args)


def cmd_get(args: argparse.Namespace) -> int:
    from .live import cmd_get as run

    return run(args)


# -- completion ----------------------------------------------------------------------------


def cmd_completion(args: argparse.Namespace) -> int:
    from .completion import SHELLS

    print(SHELLS[args.shell](parser()), end="")
    return EXIT_OK


# -- serve ---------------------------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    from ..service.serve import serve

    return serve(args)


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f'"{text}" is not a count (0 or more)')
    return n


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--definition",
        action="append",
        default=[],
        metavar="FILE_OR_DIR",
        help="extra definitions, taking precedence over built-in ones for the same root GVK (repeatable)",
    )
    from ..service.flags import add_resource_arguments, add_serve_arguments

    add_resource_arguments(common)
    # How to reach a cluster: kubectl's flags on top of the kubeconfig (get, describe, definitions list).
    connection = argparse.ArgumentParser(add_help=False)
    connection.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)",
    )
    connection.add_argument(
        "--as",
        dest="as_user",
        metavar="USER",
        help="impersonate USER (an Impersonate-User header on every request, as kubectl --as)",
    )
    connection.add_argument(
        "--as-group", action="append", metavar="GROUP", help="impersonate GROUP too (repeatable; needs --as)"
    )
    connection.add_argument(
        "--token", metavar="TOKEN", help="bearer token for the API server, instead of the kubeconfig user's credentials"
    )
    connection.add_argument(
        "--request-timeout",
        type=request_timeout,
        default=30.0,
        metavar="DURATION",
        help="time one API request may take: seconds or a duration (30s, 2m); 0: the client's default (default 30s)",
    )
    connection.add_argument(
        "--insecure-skip-tls-verify", action="store_true", help="do not check the API server's certificate (insecure)"
    )
    p = argparse.ArgumentParser(prog="wlmap", description="Interpret Kubernetes AI workloads with Karta definitions.")
    p.add_argument("--version", action="version", version=f"wlmap {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    i = sub.add_parser("interpret", parents=[common], help="interpret manifests offline")
    i.add_argument("files", nargs="+", metavar="FILE", help="YAML/JSON manifests ('-' for stdin)")
    i.add_argument(
        "-o",
        "--output",
        choices=["tree", "json", "jsonl", "yaml"],
        help="tree (default), json, jsonl or yaml; with --format: json, jsonl or yaml (default)",
    )
    i.add_argument(
        "--format",
        choices=list(FORMATS),
        help="answer in a consumer's own shape: Kueue PodSets, Karmada components or KAI PodGroups",
    )
    i.add_argument("--pods", metavar="FILE", help="pods of the workload, to place them and make gang groups concrete")
    i.add_argument(
        "--eval-deadline",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="time limit of one evaluation with a definition that is not built in (default 10, as the "
        "reference runner)",
    )
    i.set_defaults(func=cmd_interpret)

    update.add_parser(sub, common)
    update.add_divide_parser(sub, common)

    d = sub.add_parser("definitions", help="list, show, validate and test definitions")
    dsub = d.add_subparsers(dest="action", required=True)
    dl = dsub.add_parser(
        "list",
        parents=[common, connection],
        help="definitions in use, one per root GVK",
        description="Offline: the built-in catalog and --definition folders. With --kubeconfig or "
        "--context also the cluster's Karta resources (ORIGIN cluster).",
    )
    dl.add_argument(
        "--context",
        metavar="CTX",
        help="read the Karta resources of this kubeconfig context (with --kubeconfig alone: its current context)",
    )
    dl.add_argument("-o", "--output", choices=["table", "json", "yaml"], default="table")
    dl.add_argument("--group", metavar="GROUP", help='only definitions of this API group ("" for the core group)')
    dl.add_argument("--kind", metavar="KIND", help="only definitions of this Kind (any case)")
    dl.add_argument("--version", metavar="VERSION", help="only definitions of this API version (v1, v1alpha2...)")
    dl.set_defaults(func=cmd_list)
    ds = dsub.add_parser("show", parents=[common], help="print one definition")
    ds.add_argument("name")
    ds.add_argument("-o", "--output", choices=["yaml", "json"], default="yaml")
    ds.add_argument(
        "--evaluation",
        action="store_true",
        help="say how each expression is evaluated: natively, or through libjq (and why)",
    )
    ds.set_defaults(func=cmd_show)
    dv = dsub.add_parser(
        "validate", parents=[common], help="check definition files (exit 0 valid, 1 invalid, 2 unreadable)"
    )
    dv.add_argument("files", nargs="+", metavar="FILE")
    dv.set_defaults(func=cmd_validate)
    dt = dsub.add_parser("test", parents=[common], help="run the fixture cases of definition folders")
    dt.add_argument("dir", nargs="?", default="definitions")
    dt.add_argument("-v", "--verbose", action="store_true")
    dt.set_defaults(func=cmd_test)

    live = argparse.ArgumentParser(add_help=False, parents=[common, connection])
    live.add_argument(
        "--eval-deadline",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="time limit of one evaluation with a definition that is not built in (default 10)",
    )
    ns_help = "namespace (default: the kubeconfig context's, else default)"
    de = sub.add_parser(
        "describe",
        parents=[live],
        help="one live workload: components, instances, pods, resources",
        description="Exit codes: 0 ok, 1 cluster or authorization error, 2 usage, 3 workload or "
        "its type not in the cluster, 4 no definition covers the type.",
    )
    de.add_argument(
        "target",
        metavar="TYPE[/NAME]",
        help="TYPE: a Kind or plural, optionally qualified by group (jobset, jobsets.jobset.x-k8s.io)",
    )
    de.add_argument("name", nargs="?", metavar="NAME", help="the workload's name, unless given as TYPE/NAME")
    de.add_argument("-n", "--namespace", help=ns_help)
    de_where = de.add_mutually_exclusive_group()
    de_where.add_argument(
        "--context",
        metavar="CTX",
        help="kubeconfig context (default: its current context); the output then names it as the cluster",
    )
    de_where.add_argument(
        "--all-contexts",
        action="store_true",
        help="the same workload in every context of the kubeconfig, as one: the phase over all of them, then "
        "a row per context (json/yaml: what GET /fleet/workloads/{namespace}/{name} returns)",
    )
    de.add_argument(
        "--context-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="with --all-contexts: the time one context may take before it is reported as not answering "
        "and left out (default 10)",
    )
    de.add_argument(
        "-o",
        "--output",
        choices=["tree", "json", "yaml"],
        default="tree",
        help="json/yaml: what GET /workloads/{namespace}/{name} returns (with --all-contexts: "
        "what GET /fleet/workloads/{namespace}/{name} returns)",
    )
    de.add_argument(
        "--pod-limit",
        type=_count,
        metavar="N",
        help="show at most N pods under each component or instance (then a '… K more pods' line)",
    )
    de.add_argument(
        "--component-limit",
        type=_count,
        metavar="N",
        help="show at most N components (and instances) at each level of the tree and in the "
        "resources table (then a '… K more' line)",
    )
    de.set_defaults(func=cmd_describe)
    actions.add_parsers(sub, live)
    capacity_cli.add_parsers(sub, live)
    ge = sub.add_parser(
        "get",
        parents=[live],
        help="list live workloads of every known type (or of one TYPE)",
        description="Exit codes: 0 ok (also when none is found), 1 cluster or authorization "
        "error, 2 usage, 4 no definition covers TYPE. With several contexts, one "
        "that fails is named on stderr and the others are still listed; the exit "
        "code is then 1 (or the failure's own code when every context failed "
        "alike).",
    )
    ge.add_argument("kind", nargs="?", metavar="TYPE", help="only this type (Kind or plural, optionally .group)")
    ge.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="only these workloads of TYPE (a NAME not found is an error, exit 3; the others are still listed)",
    )
    ge.add_argument(
        "--phase",
        action="append",
        metavar="PHASE",
        help="only workloads in this phase (repeatable, or comma-separated: Running,Failed)",
    )
    ge.add_argument(
        "-l",
        "--selector",
        metavar="SELECTOR",
        help="label selector on the workload's labels, Kubernetes syntax (team=a,tier in (gpu),!x)",
    )
    ge.add_argument(
        "--sort-by",
        choices=listing.SORT_CHOICES,
        metavar="KEY",
        help=f"sort by KEY, descending with a leading '-' ({', '.join(listing.SORT_KEYS)}; "
        "e.g. -gpus; age: youngest first, -age oldest first)",
    )
    where = ge.add_mutually_exclusive_group()
    where.add_argument("-n", "--namespace", help=ns_help)
    where.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    ge.add_argument(
        "-o",
        "--output",
        choices=["table", "wide", "json", "yaml"],
        default="table",
        help="wide: also COMPONENTS and REASON; json/yaml: what GET /workloads returns (rows with "
        "labels and components)",
    )
    add_context_flags(
        ge,
        "kubeconfig context to read (repeatable; default: the current context). Naming "
        "contexts adds a CLUSTER column (a `cluster` field in json/yaml)",
        "with --context/--all-contexts: the time one context may take before it is reported "
        "as not answering and left out (default 10)",
    )
    ge.set_defaults(func=cmd_get)

    co = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description="bash: source <(wlmap completion bash)   zsh: source <(wlmap completion zsh)   "
        "fish: wlmap completion fish | source",
    )
    co.add_argument("shell", choices=["bash", "zsh", "fish"])
    co.set_defaults(func=cmd_completion)

    s = sub.add_parser("serve", parents=[common], help="serve the HTTP API (built-in catalog, no cluster by default)")
    add_serve_arguments(s)
    s.set_defaults(func=cmd_serve)
    return p


def _joined(argv: list[str]) -> list[str]:
    """`--sort-by -gpus` as `--sort-by=-gpus`: argparse would take `-gpus` for an option."""
    out: list[str] = []
    for a in argv:
        if out and out[-1] == "--sort-by" and a.startswith("-") and not a.startswith("--"):
            out[-1] = f"--sort-by={a}"
        else:
            out.append(a)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(_joined(sys.argv[1:] if argv is None else argv))
    from ..service.flags import configure_resources

    try:
        configure_resources(args)  # the same accelerator rules for offline, live and served answers
    except ValueError as e:  # a bad WLMAP_ACCELERATOR_RESOURCE / WLMAP_GPU_RESOURCE
        print_error(str(e))
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except CliError as e:
        print_error(str(e))
        return e.code
    except BrokenPipeError:  # e.g. `wlmap ... | head`
        return EXIT_OK
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

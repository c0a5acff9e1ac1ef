"""`wlmap describe` and `wlmap get`: live workloads straight from a kubeconfig, no service.

Both run the service's own `Workloads` code, so `-o json` prints exactly what GET /workloads
returns.  `Workloads` is written for a service: it reads a kind it cannot discover as "not
served", an object it may not read as "not found", and leaves out kinds it may not list with a
warning.  A person at a terminal should rather hear that the cluster could not be reached or
refused, so the CLI watches the API calls (`_Kube`) and turns those into exit 1.

`get --context A --context B` / `--all-contexts` reads several contexts at once, each bounded
by --context-timeout; one that fails is an error line naming it, not the end of the others.
"""

from __future__ import annotations

import argparse
import asyncio
import builtins
import contextlib
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from ..capacity.answers import no_capacity, verdict, waiting
from ..capacity.plan import plan
from ..cluster.kube import (
    KARTAS,
    Forbidden,
    Gone,
    Kube,
    KubeError,
    NotFound,
    Resource,
    in_cluster,
    kubeconfig_namespace,
    pod_namespace,
)
from ..cluster.selectors import SelectorError
from ..cluster.selectors import parse as parse_selector
from ..cluster.sources import karta_definitions
from ..cluster.workloads import LookupFailed, Workloads, allow_all
from ..engine.interpret import InterpretationError
from ..fleet.specs import ClusterSpec, contexts, kubeconfig_paths, redact
from ..karta.registry import Registry
from ..model.listed import ListedCapacity
from . import listing, render
from .common import (
    EXIT_FAIL,
    EXIT_NO_DEFINITION,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    build_registry,
    dump_json,
)


class _Kube(Kube):
    """A Kube that remembers what the API server refused (403) or failed to answer."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.denied: list[Forbidden] = []
        self.failures: list[KubeError] = []
        self.listed: set[Resource] = set()  # lists that succeeded
        self.notes: list[str] = []  # warnings that are not failures (cluster definitions skipped)
        self.definitions_error: KubeError | None = None  # why the cluster's Karta resources were not read

    async def request(self, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().request(method, path, *args, **kwargs)
        except Forbidden as e:
            self.denied.append(e)
            raise
        except (NotFound, Gone):
            raise
        except KubeError as e:
            self.failures.append(e)
            raise

    async def list(self, res: Resource, *args: Any, **kwargs: Any) -> dict[str, Any]:
        out = await super().list(res, *args, **kwargs)
        self.listed.add(res)
        return out

    def check(self) -> None:
        """No answer at all, or rejected credentials: nothing read can be trusted (exit 1).
        Other failures (a broken aggregated API group, say) only become warnings."""
        for e in self.failures:
            if e.status == 0:
                raise CliError(e.message, EXIT_FAIL)
            if e.status == 401:
                raise CliError("the API server rejected the credentials (Unauthorized)", EXIT_FAIL)

    def warnings(self) -> builtins.list[str]:  # the method `list` shadows the type here
        return sorted({e.message for e in self.failures}) + self.notes

    async def cluster_definitions(self, registry: Registry) -> Registry:
        """Karta resources of the cluster on top of the catalog, below --definition folders
        (the service's precedence).  Best effort, as the reference CLI: any failure is a note."""
        marks = (len(self.denied), len(self.failures))
        try:
            items = (await self.list(KARTAS))["items"]
        except NotFound:
            self.notes.append("the kartas.run.ai CRD is not installed; showing built-in definitions only")
            return registry
        except Forbidden:
            self.notes.append(
                "not allowed to list kartas.run.ai; showing built-in definitions only. Ask a cluster "
                'administrator for "list" permission on kartas.run.ai to include cluster definitions.'
            )
            return registry
        except KubeError as e:
            self.definitions_error = e
            if e.status not in (0, 401):
                self.notes.append(
                    f"could not read Karta definitions from the cluster: {' '.join(str(e).split())}; "
                    "showing built-in definitions only"
                )
            return registry
        finally:  # the workload reads that follow decide whether the cluster is usable
            del self.denied[marks[0] :], self.failures[marks[1] :]
        defs, unreadable = karta_definitions({(o.get("metadata") or {}).get("name", ""): o for o in items})
        self.notes += [
            f'skipping Karta definition "{o.removeprefix("karta:")}": {err}' for o, err in unreadable.items()
        ]
        for d in defs:
            if not d.valid:
                first = next((f.message for f in d.findings if f.level == "error"), "invalid")
                self.notes.append(f'skipping Karta definition "{d.name}": {first}')
        return Registry(registry.layers[:1] + (tuple(d for d in defs if d.valid),) + registry.layers[1:])


# -- shared plumbing -----------------------------------------------------------------------


def default_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace of the kubeconfig's (current) context, else the pod's, else `default`."""
    return kubeconfig_namespace(kubeconfig, context) or pod_namespace() or "default"


def _check_kubeconfig(args: argparse.Namespace) -> None:
    if args.kubeconfig and not Path(args.kubeconfig).is_file():
        raise CliError(f"--kubeconfig {args.kubeconfig}: no such file", EXIT_FAIL)


async def _connect(args: argparse.Namespace, context: str | None) -> _Kube:
    """`Kube.connect`, with kubectl's overrides of the kubeconfig: --token replaces the user's
    credentials (client certificates included, so the token is who the server sees),
    --insecure-skip-tls-verify, --request-timeout, and --as/--as-group as Impersonate-* headers
    on every request (the session's default headers: several groups are several headers)."""
    from kubernetes_asyncio import client, config

    cfg = client.Configuration()
    if args.kubeconfig or context or not in_cluster():
        await config.load_kube_config(
            config_file=args.kubeconfig, context=context, client_configuration=cfg, persist_config=False
        )
    else:
        config.load_incluster_config(client_configuration=cfg)
    if args.token:
        cfg.api_key = {"BearerToken": f"Bearer {args.token}"}
        cfg.api_key_prefix = {}
        cfg.refresh_api_key_hook = None
        cfg.cert_file = cfg.key_file = None
    if args.insecure_skip_tls_verify:
        cfg.verify_ssl = False
    api = client.ApiClient(configuration=cfg)
    headers = api.rest_client.pool_manager.headers
    if args.as_user:
        headers["Impersonate-User"] = args.as_user
    for group in args.as_group or []:
        headers.add("Impersonate-Group", group)
    return _Kube(api, request_timeout=args.request_timeout)


def check_auth_flags(args: argparse.Namespace) -> None:
    if args.as_group and not args.as_user:
        raise CliError("--as-group needs --as: groups are impersonated together with a user, as kubectl")


@contextlib.asynccontextmanager
async def open_session(
    args: argparse.Namespace, context: str | None, registry: Registry | None = None, label: str = ""
) -> AsyncIterator[tuple[_Kube, Workloads, dict[str, Any]]]:
    """A connection to `context` (None: the current one) and a `Workloads` over built-in +
    --definition definitions (`registry`, when already built for several contexts).  Built-in
    ones run in-process; the others in a worker stopped at --eval-deadline (as `wlmap
    interpret`).  The third item records the last object interpreted (describe shows its age).
    `label` prefixes the warnings printed here ("context b: ") when several contexts are read."""
    from ..engine.pool import EvaluationCrashed, EvaluationTimeout, Evaluator

    registry = build_registry(args.definition) if registry is None else registry
    _check_kubeconfig(args)
    try:
        kube = await _connect(args, context)
    except Exception as e:
        raise CliError(f"cannot load the kubeconfig: {e}", EXIT_FAIL) from None
    try:
        registry = await kube.cluster_definitions(registry)
    except BaseException:  # cancelled (a context cut at --context-timeout): still close the connection
        await kube.close()
        raise
    isolate = any(d.source != "builtin" for d in registry.all())
    ev = Evaluator("untrusted" if isolate else "none", 1, args.eval_deadline, options=args.engine)
    seen: dict[str, Any] = {}

    async def interpret(d: Any, obj: dict[str, Any], pods: list[dict[str, Any]] | None) -> dict[str, Any]:
        seen["object"] = obj
        return await ev.interpret(d, obj, pods)

    await ev.start()
    try:
        yield kube, Workloads(kube, lambda: registry, interpret), seen
    except CliError as e:
        if e.code == EXIT_NO_DEFINITION:
            _warn([label + n for n in kube.notes])  # why a kind may be uncovered (cluster definitions not readable)
        raise
    except KubeError as e:
        kube.check()
        raise CliError(e.message, EXIT_FAIL) from None
    except (InterpretationError, EvaluationTimeout, EvaluationCrashed) as e:
        raise CliError(str(e), EXIT_FAIL) from None
    finally:
        await ev.close()
        await kube.close()


def with_cluster_definitions(args: argparse.Namespace, registry: Registry) -> Registry:
    """`definitions list --kubeconfig/--context`: the cluster's Karta resources between the catalog
    and --definition folders, as get and describe use them.  A cluster that cannot be reached or
    rejects the credentials is exit 1; one without the CRD or the right to list it, a warning."""
    check_auth_flags(args)
    _check_kubeconfig(args)

    async def read() -> tuple[Registry, _Kube]:
        try:
            kube = await _connect(args, args.context)
        except Exception as e:
            raise CliError(f"cannot load the kubeconfig: {e}", EXIT_FAIL) from None
        try:
            return await kube.cluster_definitions(registry), kube
        finally:
            await kube.close()

    out, kube = asyncio.run(read())
    e = kube.definitions_error
    if e is not None and e.status in (0, 401):
        raise CliError(
            e.message if e.status == 0 else "the API server rejected the credentials (Unauthorized)", EXIT_FAIL
        )
    _warn(kube.notes)
    return out


def lookup_error(e: LookupFailed, kube: _Kube) -> CliError:
    kube.check()
    if e.status == 404 and e.slug == "no-definition":
        return CliError(e.message, EXIT_NO_DEFINITION)
    if e.slug == "workload-not-found" and kube.denied:
        # A kind we may not read may well hold the name: say so rather than "not found".
        return CliError(kube.denied[0].message, EXIT_FAIL)
    if e.status == 404:
        return CliError(e.message, EXIT_NOT_FOUND)
    if e.status == 409:
        retry = "".join(
            f"\n  {c['kind'].lower()}.{c['apiVersion'].rpartition('/')[0] or c['apiVersion']}/{c['name']}"
            for c in e.candidates
        )
        return CliError(e.message + (f"; one of:{retry}" if retry else ""), EXIT_USAGE)
    if e.status == 422:
        return CliError(e.message, EXIT_USAGE)
    if e.slug == "service-forbidden" and kube.denied:
        return CliError(kube.denied[-1].message, EXIT_FAIL)  # the API server's own words
    return CliError(e.message, EXIT_FAIL)


def write_output(value: Any, fmt: str) -> None:
    if fmt == "json":
        print(dump_json(value))
    else:
        print(yaml.safe_dump(value, sort_keys=False, allow_unicode=True), end="")


def _warn(messages: list[str]) -> None:
    for m in messages:
        print(f"warning: {m}", file=sys.stderr)


def age(created: str | None, now: datetime | None = None) -> str:
    """kubectl's human duration (apimachinery `duration.HumanDuration`)."""
    if not created:
        return "<unknown>"
    try:
        t = datetime.fromisoformat(created)
    except ValueError:
        return "<unknown>"
    s = int(((now or datetime.now(UTC)) - t).total_seconds())
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    m, h = s // 60, s // 3600
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8:
        y, d = h // 24 // 365, h // 24 % 365
        return f"{y}y{d}d" if d else f"{y}y"
    return f"{h // 24 // 365}y"


# -- describe ------------------------------------------------------------------------------


def split_target(target: str, name: str | None) -> tuple[str, str]:
    """`TYPE/NAME` or `TYPE NAME`, as kubectl takes them."""
    kind, slash, inline = target.partition("/")
    if slash and name is not None:
        raise CliError(f'NAME given twice: "{target}" and "{name}"')
    if slash and not inline:
        raise CliError(f'NAME is empty in "{target}"')
    if name is not None and "/" in name:
        raise CliError(f'NAME must not contain "/": "{name}"')
    if not kind:
        raise CliError("a TYPE is required: give it as TYPE/NAME or as TYPE NAME")
    name = inline if slash else name
    if not name:
        raise CliError("a NAME is required: give it as TYPE/NAME or as TYPE NAME")
    return kind, name


def cmd_describe(args: argparse.Namespace) -> int:
    kind, name = split_target(args.target, args.name)
    check_auth_flags(args)
    ns = args.namespace or default_namespace(args.kubeconfig, args.context)
    result, obj, warnings = asyncio.run(_describe(args, kind, name, ns))
    if args.context:  # a named context is the cluster the workload was read from (as the service says it)
        result = {"cluster": args.context, **result}
    if args.output == "tree":
        print(
            "\n".join(
                describe_lines(
                    result, (obj.get("metadata") or {}).get("creationTimestamp"), args.pod_limit, args.component_limit
                )
            )
        )
        warnings = (result.get("warnings") or []) + warnings
    else:
        write_output(result, args.output)
    _warn(warnings)
    return EXIT_FAIL if result.get("complete") is False else EXIT_OK  # partial: printed, not a success


async def served_kinds(kube: Any, workloads: Any, kind: str) -> list[Any]:
    """The kinds a TYPE names, when some has a definition and the cluster serves it (else the
    CLI's error: no definition, exit 4; not served, exit 3)."""
    kinds = await workloads.known(kind)
    kube.check()
    if not kinds:
        raise CliError(f'no Karta definition covers "{kind}"', EXIT_NO_DEFINITION)
    if all(k.resource is None for k in kinds):
        g, v, k = kinds[0].gvk
        raise CliError(f"{k} ({g + '/' if g else ''}{v}) is not served by this cluster", EXIT_NOT_FOUND)
    return kinds


async def _describe(
    args: argparse.Namespace, kind: str, name: str, ns: str
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    async with open_session(args, args.context) as (kube, workloads, seen):
        kinds: list[Any] = []
        try:
            kinds = await served_kinds(kube, workloads, kind)
            result = await workloads.interpretation(ns, name, kind, allow=allow_all)  # as the kubeconfig user
        except LookupFailed as e:
            raise lookup_error_of(e, kube, kinds, name, ns) from None
        await _with_no_capacity(kube, result)
        return result, seen.get("object") or {}, kube.warnings()


async def _with_no_capacity(kube: Kube, result: dict[str, Any]) -> None:
    """The service's NoCapacity entry, first in `diagnosis`, when the pods that wait fit nowhere
    in this cluster's free capacity (one list of nodes and bound pods, with the kubeconfig
    user's rights: none when it may not list them). Other contexts are not read (`fitsIn` [])."""
    found = waiting(result) if result.get("diagnosis") is not None else None
    if found is None:
        return
    lc = ListedCapacity(kube)
    await lc.refresh()
    if lc.capacity_state()[0] != "ready":
        return
    left = found[1]
    nodes, free = lc.capacity_snapshot()
    here = verdict("", plan(left, nodes, free), left)
    if here["fits"] is False:
        result["diagnosis"] = [no_capacity(here, left, []), *result["diagnosis"]]


def lookup_error_of(e: LookupFailed, kube: _Kube, kinds: list[Any], name: str, ns: str) -> CliError:
    """A lookup of TYPE/NAME that failed; a name not found says which kind, as kubectl does."""
    served = {k.gvk[2] for k in kinds if k.resource is not None}
    if e.slug == "workload-not-found" and len(served) == 1:
        e.message = f'{served.pop()} "{name}" not found in namespace {ns}'
    return lookup_error(e, kube)


Row = tuple[str, list[str], list["Row"]]  # label, cells, child rows


def _draw(rows: list[Row], prefix: str = "") -> list[list[str]]:
    """kubectl-tree style ASCII branches, so the output stays plain and greppable."""
    out: list[list[str]] = []
    for n, (label, cells, children) in enumerate(rows):
        last = n == len(rows) - 1
        out.append([prefix + ("`-- " if last else "|-- ") + label, *cells])
        out += _draw(children, prefix + ("    " if last else "|   "))
    return out


def _gpu(n: int | None) -> str:
    return f"gpu: {n}" if n else ""


def _limit(rows: list[Row], n: int | None, what: str) -> list[Row]:
    """At most n rows, then one saying how many more (describe --pod-limit/--component-limit)."""
    if n is None or len(rows) <= n:
        return rows
    return rows[:n] + [(f"… {len(rows) - n} more {what}", ["", "", ""], [])]


def _live_tree(result: dict[str, Any], pod_limit: int | None = None, component_limit: int | None = None) -> list[Row]:
    """Components, then their instances (when they have ids), then pods; pods before child
    components.  A root that bears pods itself is a row of its own, its children beside it.
    Pods under one node beyond `pod_limit`, and components or instances at one level beyond
    `component_limit`, are one "… N more" row."""
    pods: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for p in (result.get("live") or {}).get("pods") or []:
        pods.setdefault((p["component"], p["instance"]), []).append(p)

    def pod_row(p: dict[str, Any], inst: dict[str, Any]) -> Row:
        state = p.get("phase") or "Unknown"
        reason = p.get("reason") or p.get("containerReason")
        if not p.get("ready") and reason:
            state += f" ({reason})"
        return p["name"], [state, _gpu((inst.get("pod") or {}).get("gpus")), p.get("node") or "<none>"], []

    def pod_rows(rows: list[Row]) -> list[Row]:
        return _limit(rows, pod_limit, "pods")

    def count(node: dict[str, Any], children: bool) -> tuple[int, int | None, set[str]]:
        """Ready, desired and nodes of a component: its own instances' plus its children's
        (desired is None when a component below could not be computed)."""
        ready, desired = 0, None if node.get("error") else 0
        nodes: set[str] = set()
        for i in node["instances"] if node["podBearing"] else []:
            lv = i.get("live") or {}
            ready, desired = ready + lv.get("ready", 0), None if desired is None else desired + i["totals"]["pods"]
            nodes |= set(lv.get("nodes") or [])
        for c in node["children"] if children else []:
            c_ready, c_desired, c_nodes = count(c, True)
            ready, nodes = ready + c_ready, nodes | c_nodes
            desired = None if desired is None or c_desired is None else desired + c_desired
        return ready, desired, nodes

    def component(node: dict[str, Any], root: bool = False) -> Row:
        name, instances = node["name"], node["instances"]
        ready, desired, nodes = count(node, not root)
        if node.get("error"):
            below: list[Row] = [] if root else [component(c) for c in node["children"]]
            return f"{name} {render.FAILED_MARK}", [f"{ready}/? ready", "gpu: ?", ",".join(sorted(nodes))], below
        gpus = sum(i["totals"]["gpus"] for i in instances) if root else (node["totals"] or {}).get("gpus", "?")
        below = []
        if root:  # the engine places all the root's pods on its first instance
            below = pod_rows([pod_row(p, instances[0]) for (c, _), ps in pods.items() if c == name for p in ps])
        elif any(i["id"] is not None for i in instances):
            below = pod_rows([pod_row(p, {}) for p in pods.get((name, None), [])])
            below += _limit(
                [
                    (
                        str(i["id"]),
                        [
                            f"{(i.get('live') or {}).get('ready', 0)}/{i['totals']['pods']} ready",
                            _gpu(i["totals"]["gpus"]),
                            ",".join((i.get("live") or {}).get("nodes") or []),
                        ],
                        pod_rows([pod_row(p, i) for p in pods.get((name, i["id"]), [])]),
                    )
                    for i in instances
                ],
                component_limit,
                "instances",
            )
        elif instances:
            below = pod_rows([pod_row(p, instances[0]) for p in pods.get((name, instances[0]["id"]), [])])
        if not root:
            below += _limit([component(c) for c in node["children"]], component_limit, "components")
        return (
            name,
            [f"{ready}/{'?' if desired is None else desired} ready", _gpu(gpus), ",".join(sorted(nodes))],
            below,
        )

    tree = result["tree"]
    return _limit(
        ([component(tree, root=True)] if tree["podBearing"] else []) + [component(c) for c in tree["children"]],
        component_limit,
        "components",
    )


def diagnosis_lines(entries: list[dict[str, Any]] | None) -> list[str]:
    """Why it is not (fully) running, most severe first: one line per reason, then its message
    (as kubectl describe prints a pod's Events)."""
    if not entries:
        return []
    out = ["", "Why it is not running:"]
    for e in entries:
        where = e.get("component") or ""
        if e.get("instances"):
            where += f" [{', '.join(e['instances'])}]"
        facts = [where.strip()] if where.strip() else []
        if e.get("pods"):
            facts.append(f"{e['pods']} pod{'s' if e['pods'] != 1 else ''}")
        if e.get("insufficient"):
            facts.append("short of " + ", ".join(e["insufficient"]))
        if e.get("since"):
            facts.append(f"for {age(e['since'])}")
        out.append(f"  {e['severity'].capitalize():<8} {e['reason']}" + (f"   ({'; '.join(facts)})" if facts else ""))
        out.append(f"           {e['message']}")
    return out


def describe_lines(
    result: dict[str, Any], created: str | None = None, pod_limit: int | None = None, component_limit: int | None = None
) -> list[str]:
    """Header, the live tree, phase, resources table (see `_live_tree` for the limits)."""
    w, d, st = result["workload"], result["definition"], result.get("status")
    head = [
        f"{w['kind']}/{w['name']}",
        *([f"cluster: {result['cluster']}"] if result.get("cluster") else []),
        f"namespace: {w.get('namespace') or '<none>'}",
        f"definition: {d['name']} ({d['source']})",
    ]
    if created:
        head.append(f"age: {age(created)}")
    out = ["   ".join(head)]
    rows = _draw(_live_tree(result, pod_limit, component_limit))
    if rows:
        out += [""] + render.table_lines(rows)
    live = result.get("live") or {}
    phase = f"Phase: {st['phase']}" if st else "Phase: unknown (the status could not be read)"
    if st and len(st.get("matched") or []) > 1:
        phase += f"   (matched: {','.join(st['matched'])})"
    if live.get("deleting"):
        phase += "   (deleting)"
    if live.get("stale"):
        phase += "   (stale: the controller has not observed the latest spec)"
    out += ["", phase] + render.gang_lines(result.get("gang", {}))
    if live.get("unplaced"):
        out.append(f"Not placed on a component: {', '.join(live['unplaced'])}")
    out += diagnosis_lines(result.get("diagnosis"))
    out += ["", "Resources:"] + render.table_lines(resource_rows(result, component_limit))
    return out + render.error_lines(result)


def resource_rows(result: dict[str, Any], component_limit: int | None = None) -> list[list[str]]:
    """One row per pod-bearing component (per instance when it has several; past
    `component_limit` rows, one "… N more" row), then TOTAL.  GPU counts whole devices; a column
    per accelerator resource follows when any is requested beyond nvidia.com/gpu (AMD, Intel,
    Gaudi, MIG slices, Neuron, TPU)."""
    labelled: list[tuple[str, dict[str, Any] | None]] = []

    def walk(node: dict[str, Any]) -> None:
        if node.get("error"):
            labelled.append((f"{node['name']} {render.FAILED_MARK}", None))
        elif node["podBearing"]:
            insts = node["instances"]
            if len(insts) == 1 and insts[0]["id"] is None:
                labelled.append((node["name"], insts[0]["totals"]))
            else:
                labelled.extend((f"{node['name']}/{i['id']}", i["totals"]) for i in insts)
        for c in node["children"]:
            walk(c)

    walk(result["tree"])
    more = len(labelled) - component_limit if component_limit is not None and len(labelled) > component_limit else 0
    if more:
        labelled = labelled[:component_limit]
    labelled.append(("TOTAL", result["totals"]))
    names = sorted({a for _, t in labelled if t for a in t.get("accelerators") or {}})
    extra = names if set(names) - {"nvidia.com/gpu"} else []  # an NVIDIA-only workload: GPU says it all

    def row(label: str, t: dict[str, Any] | None) -> list[str]:
        if t is None:  # not computed: unknown, never a partial sum
            return [label, "?", "?", "?", "?"] + ["?"] * len(extra)
        req, acc = t["requests"], t.get("accelerators") or {}
        return [label, str(t["pods"]), str(t["gpus"]), req.get("cpu", "0"), req.get("memory", "0")] + [
            str(acc.get(a, 0)) for a in extra
        ]

    rows = [["COMPONENT", "REPLICAS", "GPU", "CPU", "MEMORY"] + extra] + [row(label, t) for label, t in labelled]
    if more:
        rows.insert(-1, [f"… {more} more"] + [""] * (len(rows[0]) - 1))
    return rows


# -- get -----------------------------------------------------------------------------------


def cmd_get(args: argparse.Namespace) -> int:
    if args.kind and "/" in args.kind:
        raise CliError(
            f'get lists workloads: give a TYPE, not "{args.kind}" (see one with `wlmap describe {args.kind}`)'
        )
    check_auth_flags(args)
    try:  # before any request: a bad selector is a usage error
        selector = parse_selector(args.selector) if args.selector else None
    except SelectorError as e:
        raise CliError(f'invalid label selector "{args.selector}": {e}') from None
    names = _named_contexts(args)
    if names is None:  # the current context only: exactly as before contexts could be named
        ns = None if args.all_namespaces else (args.namespace or default_namespace(args.kubeconfig, None))
        result, warnings = asyncio.run(_get(args, ns))
        warnings = list(result["warnings"]) + warnings
        failures: list[tuple[str, CliError]] = []
        where = "any namespace" if ns is None else "namespace " + ns
    else:
        result, warnings, failures, spaces = asyncio.run(_get_contexts(args, names))
        where = "any namespace" if args.all_namespaces else "namespace " + ", ".join(sorted(set(spaces)))
        answered = [n for n in names if n not in dict(failures)]
        where += f" in context{'s' if len(answered) > 1 else ''} {', '.join(answered)}"
    result["items"] = listing.select(result["items"], args.names, listing.phases(args.phase), selector)
    if args.sort_by:
        result["items"] = listing.sort(result["items"], args.sort_by)
    some_answered = len(failures) < len(names or [None])  # none answered: the errors say why
    missing = [n for n in dict.fromkeys(args.names or []) if n not in {i["workload"]["name"] for i in result["items"]}]
    if args.output not in ("table", "wide"):
        write_output(result, args.output)
    elif not result["items"]:
        if some_answered and not missing:
            print(f"No workloads found in {where}.", file=sys.stderr)
    else:
        print("\n".join(get_lines(result["items"], cluster=names is not None, wide=args.output == "wide")))

        def at(i: dict[str, Any]) -> str:  # which context a row came from, when several were read
            return f"context {i['cluster']}: " if "cluster" in i else ""

        warnings += [
            f"{at(i)}could not interpret {i['workload']['kind']}/{i['workload']['name']}: {i['error']}"
            for i in result["items"]
            if i.get("error")
        ]
        warnings += [
            f"{at(i)}{i['workload']['kind']}/{i['workload']['name']} is incomplete (*): "
            + "; ".join(e["message"] for e in i.get("errors") or [])
            for i in result["items"]
            if i.get("complete") is False
        ]
    _warn(warnings)
    if some_answered:  # each NAME asked for that no row has, as kubectl: the others are still printed
        for n in missing:
            print(f'error: {args.kind} "{n}" not found in {where}', file=sys.stderr)
    for name, err in failures:  # after the rows and warnings, so they are the last thing a person reads
        print(f"error: context {name}: {_redact(str(err), args.kubeconfig)}", file=sys.stderr)
    if not failures:
        return EXIT_NOT_FOUND if missing else EXIT_OK
    codes = {e.code for _, e in failures}
    # Every context failed the same way: that failure's code (4 for a TYPE nothing covers, say).
    # Otherwise the rows shown are partial: exit 1, as a partial result is everywhere in the CLI.
    return codes.pop() if len(failures) == len(names or []) and len(codes) == 1 else EXIT_FAIL


def _named_contexts(args: argparse.Namespace) -> list[str] | None:
    """The contexts --context/--all-contexts name (kubeconfig order, no repeats), or None."""
    if not args.all_contexts and not args.context:
        return None
    _check_kubeconfig(args)
    known, _ = contexts(args.kubeconfig)
    if args.all_contexts:
        if not known:
            raise CliError(f"no contexts in the kubeconfig ({', '.join(kubeconfig_paths(args.kubeconfig))})", EXIT_FAIL)
        return known
    missing = [n for n in args.context if n not in known]
    if missing:
        raise CliError(
            f'no context "{missing[0]}" in the kubeconfig ({", ".join(kubeconfig_paths(args.kubeconfig))})', EXIT_FAIL
        )
    return list(dict.fromkeys(args.context))


async def _get_contexts(
    args: argparse.Namespace, names: list[str]
) -> tuple[dict[str, Any], list[str], list[tuple[str, CliError]], list[str]]:
    """Every named context read at the same time, each within --context-timeout, merged into the
    shape of the service's multi-cluster GET /workloads: rows gain `cluster`, warnings name it,
    `clusters` says which answered.  Returns that, the warnings for stderr ("context b: …"), the
    contexts that failed, and the namespace read in each.  A context that fails is returned,
    never raised: it must not cost the others' rows."""
    registry = build_registry(args.definition)  # once: its warnings are printed once

    def namespace(ctx: str) -> str | None:
        return None if args.all_namespaces else (args.namespace or default_namespace(args.kubeconfig, ctx))

    async def one(ctx: str) -> tuple[dict[str, Any], list[str]] | CliError:
        try:
            return await asyncio.wait_for(
                _get(args, namespace(ctx), ctx, registry, f"context {ctx}: "), args.context_timeout
            )
        except CliError as e:
            return e
        except TimeoutError:
            return CliError(f"the API server did not answer within {args.context_timeout:g} s", EXIT_FAIL)

    parts = await asyncio.gather(*(one(n) for n in names))
    rows: list[dict[str, Any]] = []
    out_warnings: list[str] = []  # the JSON's, in the service's words ("cluster b: …")
    printed: list[str] = []  # stderr's ("context b: …"; a failure is an error line of its own)
    failures: list[tuple[str, CliError]] = []
    clusters: list[dict[str, Any]] = []
    for ctx, part in zip(names, parts, strict=False):
        if isinstance(part, CliError):
            failures.append((ctx, part))
            out_warnings.append(f"cluster {ctx}: {_redact(str(part), args.kubeconfig)}; its workloads are left out")
            clusters.append({"name": ctx, "available": False, "synced": False, "freshness": None})
            continue
        result, warnings = part
        rows += [{"cluster": ctx, **r} for r in result["items"]]
        out_warnings += [f"cluster {ctx}: {w}" for w in result["warnings"]]
        printed += [f"context {ctx}: {w}" for w in result["warnings"] + warnings]
        clusters.append({"name": ctx, "available": True, "synced": True, "freshness": result["freshness"]})
    rows.sort(key=lambda r: r["cluster"])  # stable: by cluster, then each cluster's own order
    fresh = [c["freshness"] for c in clusters if c["freshness"]]
    freshness = (
        {
            "source": "direct",
            "resourceVersion": None,
            "observedAt": min(f["observedAt"] for f in fresh),
            "watching": False,
        }
        if fresh
        else None
    )
    merged = {"items": rows, "warnings": sorted(set(out_warnings)), "freshness": freshness, "clusters": clusters}
    return merged, printed, failures, [namespace(n) or "" for n in names]


async def _get(
    args: argparse.Namespace,
    ns: str | None,
    context: str | None = None,
    registry: Registry | None = None,
    label: str = "",
) -> tuple[dict[str, Any], list[str]]:
    async with open_session(args, context, registry, label) as (kube, workloads, _seen):
        try:
            if args.kind:
                kinds = await workloads.known(args.kind)
                kube.check()
                if not kinds:
                    raise CliError(f'no Karta definition covers "{args.kind}"', EXIT_NO_DEFINITION)
            result = await workloads.summaries(ns, args.kind, allow=allow_all)
        except LookupFailed as e:
            raise lookup_error(e, kube) from None
        kube.check()
        if not result["items"] and kube.denied and not kube.listed:
            # Every list was refused: an empty table would read as "there are none".
            refused = sorted(e.message for e in kube.denied)
            raise CliError(
                refused[0]
                if len(refused) == 1
                else f"not allowed to list any workload type ({len(refused)} refused), e.g. {refused[0]}",
                EXIT_FAIL,
            )
        return result, kube.warnings()


def _redact(message: str, kubeconfig: str | None) -> str:
    """A message without any credential of the kubeconfig (client errors may quote parts of it)."""
    for path in kubeconfig_paths(kubeconfig):
        message = redact(message, ClusterSpec("kubeconfig", "context", kubeconfig=path))
    return message


def get_lines(items: list[dict[str, Any]], cluster: bool = False, wide: bool = False) -> list[str]:
    """The table; `cluster`: a CLUSTER column first (rows read from several contexts); `wide`:
    COMPONENTS and REASON last (`-o wide`)."""
    # Qualify a Kind by its group only when two groups share it (as kli does).
    groups: dict[str, set[str]] = {}
    for i in items:
        groups.setdefault(i["workload"]["kind"], set()).add(i["workload"]["apiVersion"].rpartition("/")[0])
    rows = [
        ["CLUSTER"] * cluster
        + ["NAME", "NAMESPACE", "KIND", "PHASE", "READY", "GPUS", "AGE"]
        + ["COMPONENTS", "REASON"] * wide
    ]
    for i in items:
        w, pods = i["workload"], i["pods"]
        group = w["apiVersion"].rpartition("/")[0]
        kind = f"{w['kind']}.{group}" if len(groups[w["kind"]]) > 1 and group else w["kind"]
        ready = "/".join("?" if n is None else str(n) for n in (pods["ready"], pods["desired"]))
        phase = (i["phase"] or ("<unknown>" if i.get("complete") is False else "<error>")) + (
            "*" if i.get("complete") is False else ""
        )  # *: a part could not be read (see the warnings)
        rows.append(
            [i.get("cluster", "")] * cluster
            + [
                w["name"],
                w.get("namespace") or "<none>",
                kind,
                phase,
                ready,
                "?" if i["gpus"] is None else str(i["gpus"]),
                age(i.get("createdAt")),
            ]
            + [listing.components_cell(i), i.get("reason") or ""] * wide
        )
    return render.table_lines(rows)

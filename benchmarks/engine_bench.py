"""Engine benchmark: one realistic JobSet (as an API server returns it, with managedFields and
the last-applied annotation) interpreted many times, side by side in one run with

  (a) the `jq` package's parse-only cost of the same manifest (`length`), and
  (b) the same definition's expressions run as separate programs (the unbatched way),

so the ratios hold even when the machine's speed drifts.  Target: interpretation <= 1.5x (a).

Also side by side: native evaluation (app/jqlang/native.py, the default) against the libjq
path alone, for the whole interpretation, the expressions alone and per pod, and gojq (the
reference's engine) running the same expressions batched over the same projected input (one
gojq process over many inputs, its start-up subtracted).  And the jq parser's time for a
typical condition (Karta validation parses every expression; target < 1 ms).

    python benchmarks/engine_bench.py [--rounds 7] [--n 400] [--manifest FILE]

`--distinct N` (issue 24): N JobSets of the manifest's shape that differ the way real ones do
(names, uids, env values, image tags, labels), each interpreted once (no cache can answer), from
the parsed object and from JSON text, against gojq's batched run over the same N objects
(projected, as above; gojq's parse included).  Every round uses objects of its own.
`--compare PATH` runs that mode, rounds interleaved, also for another checkout (e.g.
`git worktree add /tmp/enginekeys-base main`), its code imported with PYTHONPATH=PATH.  `--hold H`
keeps H other distinct JobSets alive meanwhile (a model's objects, which every full collection
walks); `--gc service` runs this tree's rounds under the service's collector policy
(app/service/gc_policy.py, the settings' defaults), the compared checkout's as main's service
runs (Python's thresholds, frozen at start); the collector's time (gc.callbacks) is a column:

    python benchmarks/engine_bench.py --distinct 300 [--rounds 7] [--hold 3000] [--gc service]
                                      [--compare /tmp/enginekeys-base]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import jq
import orjson

from app.engine.options import EngineOptions
from app.jqlang import jqbatch, parse
from app.engine.compiled import compiled, expression_texts
from app.jqlang.inputs import prepare
from app.engine.interpret import input_text, interpret
from app.karta.load import load_builtin
from app.karta.registry import Registry

HERE = Path(__file__).resolve().parent


def per_call_us(fn: Callable[[], Any], n: int) -> float:
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", default=str(HERE / "data" / "jobset-16k.json"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--distinct", type=int, default=0, metavar="N",
                    help="N distinct objects per round, each interpreted once (issue 24)")
    ap.add_argument("--compare", type=Path, help="with --distinct: another checkout, rounds interleaved")
    ap.add_argument("--hold", type=int, default=0, metavar="H",
                    help="with --distinct: H other distinct JobSets kept alive meanwhile (a model's objects)")
    ap.add_argument("--gc", choices=("python", "service"), default="python",
                    help="with --distinct: this tree's rounds under Python's collector as main's service runs it "
                         "(python) or under the service's policy (--gc-thresholds, --gc-freeze defaults)")
    ap.add_argument("--answers", action="store_true",
                    help="answers unchanged: a digest of the interpretations of 100 distinct JobSets and every "
                         "catalog case's objects, twice (the second pass from the caches); with --compare, "
                         "also the other checkout's, and whether they are equal")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="with --distinct: wall time, or CPU time (ours: the process's; gojq's: its child "
                         "process's user+system time, run with GOMAXPROCS=1, one core as ours) on a loaded host")
    ap.add_argument("--stages", action="store_true",
                    help="with --distinct: where a distinct object's time goes, stage by stage (CPU time)")
    ap.add_argument("--round", type=int, default=-1, help=argparse.SUPPRESS)  # one child round, as JSON
    args = ap.parse_args()
    if args.answers and args.round >= 0:  # a checkout's digest, as JSON
        print(json.dumps(answers_digest(args.manifest)))
        return
    if args.answers:
        return answers_main(args)
    if args.distinct and args.stages:
        return stages_main(args)
    if args.distinct:
        return distinct_main(args)

    raw = Path(args.manifest).read_text()
    obj = json.loads(raw)
    full_text = json.dumps(obj, separators=(",", ":"))
    d = Registry.of(load_builtin()).resolve_object(obj)
    assert d is not None, "no built-in definition for the manifest"
    cd = compiled(d)  # compile once, as the service does
    result = interpret(obj, d)

    parse_only = jq.compile("length")
    w_texts, _ = expression_texts(d)
    separate = [jq.compile(f"def env: {{}}; {{}} as $ENV | [limit(1000; ({t}\n))]") for t in w_texts]

    def run_parse_only() -> None:
        parse_only.input_text(full_text).all()

    cold, warm = EngineOptions(jq_results=None), EngineOptions()  # cold: every call evaluates jq

    def run_interpret() -> None:
        interpret(obj, d, options=cold)

    def run_interpret_warm() -> None:  # the same object again: jq results reused
        interpret(obj, d, options=warm)

    def run_separate() -> None:
        text = input_text(obj, False)
        for p in separate:
            try:
                p.input_text(text).all()
            except ValueError:
                pass

    def run_batch_only() -> None:
        cd.workload.run(prepare(obj, cd.strip_noise, cd.projection))

    raw_bytes = raw.encode()

    def run_interpret_from_text() -> None:  # the request body's JSON parsed as well
        interpret(orjson.loads(raw_bytes), d, options=cold)

    def libjq_only(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            jqbatch.NATIVE = False
            try:
                fn()
            finally:
                jqbatch.NATIVE = True

        return run

    projected = input_text(obj, cd.strip_noise, cd.projection)
    prepared = prepare(obj, cd.strip_noise, cd.projection)
    assert prepared.value is obj, "the benchmark manifest should be read in place"
    pods = [_pod(obj, rj, i, p) for rj in ("trainer", "evaluator") for i in range(2) for p in range(2)]
    pod_texts = [input_text(p, True) for p in pods]
    pod_inputs = [prepare(p, True) for p in pods]

    def run_jq_stage() -> None:  # native: the object itself; libjq: its projected text
        cd.workload.run(prepared if jqbatch.NATIVE else projected)

    def run_pods() -> None:  # per-pod expressions (attribution, gang) over one workload's pods
        cd.pods.run_many(pod_inputs if jqbatch.NATIVE else pod_texts)

    def run_interpret_pods() -> None:
        interpret(obj, d, pods, options=cold)

    def run_copy_result() -> None:  # a floor: build the result's values in Python, computing nothing
        _copy(result)

    def run_parse_manifest() -> None:  # a floor of counting from text: the parse alone
        orjson.loads(raw_bytes)

    cases = {"parse-only (jq `length`, full manifest)": run_parse_only,
             "interpret (ours, end to end)": run_interpret,
             "  of which: input prep + batched jq run": run_batch_only,
             "interpret from JSON text (orjson parse included)": run_interpret_from_text,
             "interpret, same object again (jq results reused)": run_interpret_warm,
             f"separate programs ({len(separate)} expressions)": run_separate,
             "interpret, libjq only (no native)": libjq_only(run_interpret),
             "expressions only, native": run_jq_stage,
             "expressions only, libjq": libjq_only(run_jq_stage),
             f"pod expressions, {len(pods)} pods, native": run_pods,
             f"pod expressions, {len(pods)} pods, libjq": libjq_only(run_pods),
             f"interpret with {len(pods)} pods, native": run_interpret_pods,
             f"interpret with {len(pods)} pods, libjq only": libjq_only(run_interpret_pods),
             "floor: copy of the result in Python (no work)": run_copy_result,
             "floor: orjson.loads of the manifest": run_parse_manifest}
    samples: dict[str, list[float]] = {k: [] for k in cases}
    for fn in cases.values():  # warm-up
        per_call_us(fn, 20)
    for _ in range(args.rounds):  # interleaved rounds: drift hits every case alike
        for name, fn in cases.items():
            samples[name].append(per_call_us(fn, args.n))

    med = {k: statistics.median(v) for k, v in samples.items()}
    base = med["parse-only (jq `length`, full manifest)"]
    print(f"manifest: {args.manifest}: {len(full_text)} bytes compact, "
          f"{len(input_text(obj, cd.strip_noise, cd.projection))} bytes after projection (what the expressions read)")
    print(f"definition: {d.name}: {len(w_texts)} workload expressions in one batch; "
          f"result: phase {result['status']['phase']}, {result['totals']['pods']} pods, "
          f"{result['totals']['gpus']} GPUs")
    print(f"{args.rounds} rounds x {args.n} calls, median per call")
    print(f"{'case':48} {'µs/call':>10} {'min':>9} {'max':>9} {'vs parse-only':>14}")
    for name in cases:
        v = samples[name]
        print(f"{name:48} {med[name]:10.1f} {min(v):9.1f} {max(v):9.1f} {med[name] / base:13.2f}x")
    ratio = med["interpret (ours, end to end)"] / base
    condition = '[.status.conditions[]? | select(.type=="Failed")] | length > 0'
    parse_us = min(per_call_us(lambda: parse(condition), args.n) for _ in range(args.rounds))
    print(f"jq parser (app.jqlang.parse, Karta validation): {parse_us:.1f} µs for a {len(condition)}-character "
          f"condition, best of {args.rounds} x {args.n} (target < 1000 µs): {'MET' if parse_us < 1000 else 'NOT MET'}")
    print(f"\ninterpret / parse-only = {ratio:.2f}x (target <= 1.50x): {'MET' if ratio <= 1.5 else 'NOT MET'}")
    print(f"separate / batched interpret = "
          f"{med[f'separate programs ({len(separate)} expressions)'] / med['interpret (ours, end to end)']:.1f}x")
    n_pods = len(pods)
    print(f"native vs libjq: interpret {med['interpret, libjq only (no native)'] / med['interpret (ours, end to end)']:.2f}x"
          f", expressions {med['expressions only, libjq'] / med['expressions only, native']:.2f}x"
          f", per pod {med[f'pod expressions, {n_pods} pods, libjq'] / med[f'pod expressions, {n_pods} pods, native']:.2f}x"
          f" ({med[f'pod expressions, {n_pods} pods, native'] / n_pods:.1f} vs "
          f"{med[f'pod expressions, {n_pods} pods, libjq'] / n_pods:.1f} µs per pod)")
    g = gojq_batched_us(w_texts, projected, args.n * 5)
    if g is not None:
        print(f"gojq, the same {len(w_texts)} expressions batched over the projected input: {g:.1f} µs per input; "
              f"interpretation (native) is {g / med['interpret (ours, end to end)']:.2f}x gojq's expressions alone "
              f"(target >= 4x faster), from JSON text {g / med['interpret from JSON text (orjson parse included)']:.2f}x "
              f"(target >= 2.5x), the expressions alone {g / med['expressions only, native']:.2f}x")
        print(f"floors: a Python copy of the result alone is {g / med['floor: copy of the result in Python (no work)']:.2f}x "
              f"gojq's run, the manifest's parse alone {g / med['floor: orjson.loads of the manifest']:.2f}x")


def distinct_texts(raw: str, n: int, first: int) -> list[str]:
    """n JobSets of the manifest's shape, numbered from `first`: each has its own name (and so
    its own labels, subdomain, env values and last-applied annotation), uid, image tag,
    resourceVersion and a label of its own; the resources stay the same, as across a team's runs."""
    name = json.loads(raw)["metadata"]["name"]
    out = []
    for i in range(first, first + n):
        t = raw.replace(name, f"{name}-r{i:06d}").replace(":24.05-py3", f":24.{i % 12:02d}-b{i}")
        obj = json.loads(t)
        meta = obj["metadata"]
        meta["uid"] = f"{i:08x}-4b8a-4d7e-9a51-3c2b1f0e8d6a"
        meta["resourceVersion"] = str(48213377 + i)
        meta["labels"] = dict(meta.get("labels") or {}, **{"run-id": f"run-{i}"})
        out.append(json.dumps(obj))
    return out


def distinct_round(manifest: str, n: int, index: int, hold: int = 0, policy: str = "python",
                   clock: str = "wall") -> dict[str, float]:
    """One round of the distinct mode in this process: µs per object, from the parsed object and
    from JSON text, over objects no earlier round (nor the warm-up) has seen; with `hold`, that
    many other JobSets are alive meanwhile, as a model holds its cluster's objects.  `policy`:
    "python" is the service as main runs it (Python's thresholds; at its start, collect and
    freeze, before any model fills); "service" applies --gc-thresholds at the start and settles
    (collect, freeze) once the held objects are built, as after a model's sync."""
    import app.service.wiring as wiring  # either way: the same modules loaded, as in the service

    collector = None
    if policy == "service":  # this tree only: the compared checkout has no policy
        from app.service.settings import Settings

        collector = wiring.collector(Settings())
        collector.apply()
    raw = Path(manifest).read_text()
    d = Registry.of(load_builtin()).resolve_object(json.loads(raw))
    assert d is not None, "no built-in definition for the manifest"
    warm = [json.loads(t) for t in distinct_texts(raw, 50, 10_000_000)]
    options = EngineOptions()  # as the service runs: the cache is there, it cannot answer
    for o in warm:  # compile the definition and warm the interpreter, not the caches that matter
        interpret(o, d, options=options)
    gc.collect()  # the service's start (app/service/service.py): catalog and programs frozen
    gc.freeze()
    held = [json.loads(t) for t in distinct_texts(raw, hold, 20_000_000 + index * hold)]
    if collector is not None:
        collector.settle()
    now = time.process_time if clock == "cpu" else time.perf_counter
    gc_seconds = collector_clock(now)
    base = (index + 1) * 2 * n
    # Each half with only its own inputs alive (the parsed objects would otherwise lengthen every
    # garbage collection the text half's parses set off), collected before it starts.
    objs = [json.loads(t) for t in distinct_texts(raw, n, base)]
    gc.collect()
    gc_seconds[0] = 0.0
    t0 = now()
    for o in objs:
        interpret(o, d, options=options)
    parsed = (now() - t0) / n * 1e6
    parsed_gc = gc_seconds[0] / n * 1e6
    del objs
    texts = [t.encode() for t in distinct_texts(raw, n, base + n)]
    gc.collect()
    gc_seconds[0] = 0.0
    t0 = now()
    for b in texts:
        interpret(orjson.loads(b), d, options=options)
    text = (now() - t0) / n * 1e6
    assert len(held) == hold  # alive until here
    return {"parsed": parsed, "text": text, "parsed_gc": parsed_gc, "text_gc": gc_seconds[0] / n * 1e6}


def collector_clock(now: Callable[[], float] = time.perf_counter) -> list[float]:
    """Seconds spent in collections from now on (by `now`), in its one element (gc.callbacks)."""
    total, started = [0.0], [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = now()
        else:
            total[0] += now() - started[0]

    gc.callbacks.append(on_gc)
    return total


def distinct_main(args: argparse.Namespace) -> None:
    if args.round >= 0:
        print(json.dumps(distinct_round(args.manifest, args.distinct, args.round, args.hold, args.gc, args.clock)))
        return
    trees = [("this tree", Path(__file__).resolve().parent.parent)]
    if args.compare:
        trees.append(("compare", args.compare.resolve()))
    raw = Path(args.manifest).read_text()
    d = Registry.of(load_builtin()).resolve_object(json.loads(raw))
    assert d is not None
    cd = compiled(d)
    w_texts, _ = expression_texts(d)
    gojq_objs = [json.loads(t) for t in distinct_texts(raw, args.distinct, 0)]
    # gojq given (a) the projected text, what our expressions read (as the table above), and
    # (b) the object's own compact JSON text, as a client would hand it over
    given = {"projected": [input_text(o, cd.strip_noise, cd.projection) for o in gojq_objs],
             "whole": [json.dumps(o, separators=(",", ":")) for o in gojq_objs]}
    keys = ("parsed", "text", "parsed_gc", "text_gc")
    samples: dict[str, dict[str, list[float]]] = {t: {k: [] for k in keys} for t, _ in trees}
    gojq_samples: dict[str, list[float]] = {k: [] for k in given}
    for r in range(args.rounds):  # interleaved, each round a fresh process: cold caches, own objects
        for label, repo in trees:
            env = dict(os.environ, PYTHONPATH=str(repo))
            # this script's round (it reads only app.engine, app.karta and, with --gc service, this
            # tree's collector policy) against each tree's code
            policy = args.gc if label == "this tree" else "python"
            out = subprocess.run([sys.executable, __file__, "--manifest", args.manifest, "--distinct",
                                  str(args.distinct), "--round", str(r), "--hold", str(args.hold), "--gc", policy,
                                  "--clock", args.clock],
                                 env=env, check=True, capture_output=True, text=True).stdout
            for k, v in json.loads(out.splitlines()[-1]).items():
                samples[label][k].append(v)
        for k, v in given.items():
            g = gojq_batched_us(w_texts, v, args.distinct, cpu=args.clock == "cpu")
            if g is not None:
                gojq_samples[k].append(g)
    gojq = {k: statistics.median(v) if v else None for k, v in gojq_samples.items()}
    print(f"{args.distinct} distinct JobSets of {len(given['whole'][0])} bytes compact per round (names, uids, "
          f"env values, image tags, labels differ), each interpreted once; {args.rounds} rounds, a fresh process "
          f"each, interleaved; {args.hold} other JobSets held alive; this tree's collector: {args.gc}; "
          f"{args.clock} time")
    for k, g in gojq.items():
        if g is not None:
            print(f"gojq, the same {len(w_texts)} expressions batched over the {args.distinct} objects' {k} text "
                  f"({len(given[k][0])} bytes; its parse included): {g:.1f} µs per object")
    print(f"{'tree':10} {'from':8} {'µs/object':>10} {'min':>9} {'max':>9} {'collector':>9} {'vs gojq projected':>18} "
          f"{'vs gojq whole':>14}  target")
    for label, _ in trees:
        for k, target in (("parsed", 3.0), ("text", 2.0)):
            v = samples[label][k]
            m = statistics.median(v)
            cells = [f"{g / m:.2f}x {'MET' if g / m >= target else 'NOT MET'}" if g is not None else "-"
                     for g in gojq.values()]
            print(f"{label:10} {k:8} {m:10.1f} {min(v):9.1f} {max(v):9.1f} "
                  f"{statistics.median(samples[label][k + '_gc']):9.1f} {cells[0]:>18} {cells[1]:>14}  "
                  f">= {target:.0f}x")
    if args.compare:
        for k in ("parsed", "text"):
            a, b = statistics.median(samples["this tree"][k]), statistics.median(samples["compare"][k])
            print(f"from {k}: this tree {b / a:.2f}x the compared checkout's speed")


def stages_main(args: argparse.Namespace) -> None:
    """A distinct object's interpretation in stages, each run over N objects of its own (CPU
    time, best of --rounds passes): the parse of its text, the input (projection, cache key),
    the batched jq run with its accounting for the result cache, the components' extraction
    (template type checks), the tree (pod facts and views, totals), the dependencies, and the
    whole interpretation, whose remainder is the status, the gang and the result's assembly."""
    from app.engine import interpret as engine
    from app.engine.instances import extract_component

    raw = Path(args.manifest).read_text()
    d = Registry.of(load_builtin()).resolve_object(json.loads(raw))
    assert d is not None
    cd = compiled(d)
    options = EngineOptions()
    for o in [json.loads(t) for t in distinct_texts(raw, 50, 10_000_000)]:
        interpret(o, d, options=options)
    n, fresh = args.distinct, iter(range(1, 1000))

    def objects() -> list[dict[str, Any]]:
        return [json.loads(t) for t in distinct_texts(raw, n, next(fresh) * n)]

    def per_object(stage: Callable[[Any], Any], inputs: Callable[[], list[Any]]) -> float:
        best = float("inf")
        for _ in range(args.rounds):
            xs = inputs()
            gc.collect()
            t = time.process_time()
            for x in xs:
                stage(x)
            best = min(best, (time.process_time() - t) / n * 1e6)
        return best

    def results(o: dict[str, Any]) -> dict[str, Any]:
        inp = engine._checked_input(o, cd)
        return engine._results(cd.workload_index, engine._workload_results(cd, inp, None, options.jq_results))

    def extracted(o: dict[str, Any]) -> Any:
        r = results(o)
        return engine._Ctx(cd, {c: extract_component(cd.components[c], r, "x") for c in cd.order}, [], options.rules)

    def tree(ctx: Any) -> None:
        engine._node(ctx, cd.order[0], "x")

    def deps(ctx: Any) -> None:
        engine.dependencies((c, ref) for c in cd.order if c in cd.bearing for i in ctx.values[c].instances
                            for ref in engine._refs(i))

    stages = {
        "parse (orjson.loads of the text)": per_object(orjson.loads, lambda: [t.encode() for t in
                                                                             distinct_texts(raw, n, next(fresh) * n)]),
        "input (projection, cache key)": per_object(lambda o: engine._checked_input(o, cd), objects),
        "jq: 11 expressions, batched": per_object(lambda i: cd.workload.run(i),
                                                 lambda: [engine._checked_input(o, cd) for o in objects()]),
        "jq result cache (accounting)": 0.0,
        "extraction (template type checks)": per_object(
            lambda r: [extract_component(cd.components[c], r, "x") for c in cd.order],
            lambda: [results(o) for o in objects()]),
        "tree (pod facts, views, totals)": per_object(tree, lambda: [extracted(o) for o in objects()]),
        "dependencies": per_object(deps, lambda: [extracted(o) for o in objects()]),
    }
    stages["jq result cache (accounting)"] = per_object(
        lambda i: engine._workload_results(cd, i, None, options.jq_results),
        lambda: [engine._checked_input(o, cd) for o in objects()]) - stages["jq: 11 expressions, batched"]
    whole = per_object(lambda o: interpret(o, d, options=options), objects)
    print(f"{n} distinct JobSets per pass, best of {args.rounds} passes, CPU µs per object")
    for name, us in stages.items():
        print(f"  {name:40} {us:7.1f}")
    rest = whole - sum(v for k, v in stages.items() if not k.startswith("parse"))
    print(f"  {'status, gang, assembly (the remainder)':40} {rest:7.1f}")
    print(f"  {'interpretation from the parsed object':40} {whole:7.1f}")
    print(f"  {'from text (with the parse)':40} {whole + stages['parse (orjson.loads of the text)']:7.1f}")


def answers_digest(manifest: str) -> dict[str, Any]:
    """sha256 over the interpretations (or the errors) of 100 distinct JobSets and of every object
    in the catalog's testdata, each interpreted twice: cold, then from every cache."""
    import hashlib

    import yaml

    raw = Path(manifest).read_text()
    reg = Registry.of(load_builtin())
    objs = [json.loads(t) for t in distinct_texts(raw, 100, 0)]
    for f in sorted((HERE.parent / "definitions").glob("*/*/*/testdata/*.yaml")):
        objs += [o for o in yaml.safe_load_all(f.read_text()) if isinstance(o, dict) and o.get("kind")]
    h, n = hashlib.sha256(), 0
    options = EngineOptions()
    for _ in range(2):
        for o in objs:
            d = reg.resolve_object(o)
            if d is None:
                continue
            try:
                out: Any = interpret(o, d, options=options)
            except Exception as e:  # an error is an answer too
                out = [type(e).__name__, str(e)]
            h.update(orjson.dumps(out, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS))
            n += 1
    return {"digest": h.hexdigest(), "interpretations": n}


def answers_main(args: argparse.Namespace) -> None:
    trees = [("this tree", HERE.parent)] + ([("compare", args.compare.resolve())] if args.compare else [])
    got = {}
    for label, repo in trees:
        out = subprocess.run([sys.executable, __file__, "--answers", "--round", "0", "--manifest", args.manifest],
                             env=dict(os.environ, PYTHONPATH=str(repo)), check=True, capture_output=True,
                             text=True).stdout if label != "this tree" else None
        got[label] = json.loads(out.splitlines()[-1]) if out else answers_digest(args.manifest)
        print(f"{label}: {got[label]['interpretations']} interpretations, sha256 {got[label]['digest']}")
    if args.compare:
        same = got["this tree"] == got["compare"]
        print("answers unchanged" if same else "ANSWERS DIFFER")
        sys.exit(0 if same else 1)


def _copy(v: Any) -> Any:
    t = type(v)
    if t is dict:
        return {k: _copy(x) for k, x in v.items()}
    if t is list:
        return [_copy(x) for x in v]
    return v


def _pod(obj: dict[str, Any], rj: str, i: int, p: int) -> dict[str, Any]:
    name = obj["metadata"]["name"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-{rj}-{i}-{p}", "namespace": obj["metadata"].get("namespace", "default"),
                         "uid": f"pod-{rj}-{i}-{p}",
                         "labels": {"jobset.sigs.k8s.io/jobset-name": name,
                                    "jobset.sigs.k8s.io/replicatedjob-name": rj, "jobset.sigs.k8s.io/job-index": str(i),
                                    "batch.kubernetes.io/job-completion-index": str(p)},
                         "annotations": {"jobset.sigs.k8s.io/jobset-name": name}},
            "spec": {"containers": [{"name": "main", "image": "trainer:1", "resources": {
                "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"}}}], "nodeName": f"node-{i}"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}


def gojq_batched_us(texts: list[str], projected: str | list[str], n: int, cpu: bool = False) -> float | None:
    """gojq over `n` copies of the input (or the first `n` of a list of inputs) in one process
    (its start-up, measured over one input, subtracted): what the reference pays per evaluation
    of the same batch.  `cpu`: its CPU time (user + system) on one core, not the wall time."""
    gojq = shutil.which("gojq")
    if gojq is None:
        print("gojq not installed (make tools): its comparison is left out")
        return None
    program = ", ".join(f'(try [limit(1000; ({t}\n))] catch {{"__e": .}})' for t in texts)

    def wall(k: int) -> float:
        inputs = [projected] * k if isinstance(projected, str) else projected[:k]
        data = ("\n".join(inputs) + "\n").encode()
        best = float("inf")
        env = dict(os.environ, GOMAXPROCS="1") if cpu else None
        for _ in range(3):
            t, r = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([gojq, "-c", program], input=data, stdout=subprocess.DEVNULL, check=True, env=env)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            took = (after.ru_utime + after.ru_stime - r.ru_utime - r.ru_stime) if cpu else time.perf_counter() - t
            best = min(best, took)
        return best

    return (wall(n) - wall(1)) / (n - 1) * 1e6


if __name__ == "__main__":
    main()

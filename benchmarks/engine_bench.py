"""Engine benchmark: one realistic JobSet (as an API server returns it, with managedFields and
the last-applied annotation) interpreted many times, side by side in one run with

  (a) the `jq` package's parse-only cost of the same manifest (`length`), and
  (b) the same definition's expressions run as separate programs (the unbatched way),

so the ratios hold even when the machine's speed drifts.  Target: interpretation <= 1.5x (a).

    python benchmarks/engine_bench.py [--rounds 7] [--n 400] [--manifest FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import jq

from app.engine import interpret as interpret_mod
from app.engine.compiled import compiled, expression_texts
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
    args = ap.parse_args()

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

    def run_interpret() -> None:
        interpret_mod.JQ_RESULT_CACHE = False  # cold: every call evaluates jq
        interpret(obj, d)

    def run_interpret_warm() -> None:
        interpret_mod.JQ_RESULT_CACHE = True  # the same object again: jq results reused
        interpret(obj, d)

    def run_separate() -> None:
        text = input_text(obj, False)
        for p in separate:
            try:
                p.input_text(text).all()
            except ValueError:
                pass

    def run_batch_only() -> None:
        cd.workload.run(input_text(obj, cd.strip_noise, cd.projection))

    cases = {"parse-only (jq `length`, full manifest)": run_parse_only,
             "interpret (ours, end to end)": run_interpret,
             "  of which: input prep + batched jq run": run_batch_only,
             "interpret, same object again (jq results reused)": run_interpret_warm,
             f"separate programs ({len(separate)} expressions)": run_separate}
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
    print(f"\ninterpret / parse-only = {ratio:.2f}x (target <= 1.50x): {'MET' if ratio <= 1.5 else 'NOT MET'}")
    print(f"separate / batched interpret = "
          f"{med[f'separate programs ({len(separate)} expressions)'] / med['interpret (ours, end to end)']:.1f}x")


if __name__ == "__main__":
    main()

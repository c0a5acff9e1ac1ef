"""What `dependencies` costs an interpretation (issue 32): every catalog fixture interpreted
in-process with jq results reused (the live model's steady state), with the real
`dependencies` and with it replaced by one answering [], in interleaved rounds; prints the
medians and their ratio.

    python benchmarks/dependencies_bench.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import app.engine.interpret as interpret_module  # noqa: E402
from app.engine.interpret import InterpretationError  # noqa: E402
from app.karta.load import load_builtin  # noqa: E402
from app.karta.registry import Registry  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    reg = Registry.of(load_builtin())
    objs = []
    for f in sorted((ROOT / "definitions").glob("*/*/*/testdata/*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if isinstance(doc, dict) and doc.get("kind") != "Pod" and (d := reg.resolve_object(doc)) is not None:
                objs.append((doc, d))

    def run() -> float:
        t = time.perf_counter()
        for obj, d in objs:
            try:
                interpret_module.interpret(obj, d)
            except InterpretationError:
                pass
        return time.perf_counter() - t

    real = interpret_module.dependencies
    run()  # warm the caches both variants share
    with_, without = [], []
    for _ in range(args.rounds):
        interpret_module.dependencies = real
        with_.append(run())
        interpret_module.dependencies = lambda refs: []  # the references are not even read
        without.append(run())
    interpret_module.dependencies = real
    w, wo = statistics.median(with_), statistics.median(without)
    print(f"{len(objs)} objects, {args.rounds} rounds each, interleaved")
    print(f"with dependencies     median {w * 1000:7.1f} ms  ({w / len(objs) * 1e6:5.1f} us per interpretation)")
    print(f"without dependencies  median {wo * 1000:7.1f} ms  ({wo / len(objs) * 1e6:5.1f} us per interpretation)")
    print(f"ratio with/without    {w / wo:.3f}")


if __name__ == "__main__":
    main()

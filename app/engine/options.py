"""How the engine interprets, chosen by whoever calls it (the service from its settings, the
CLI from its flags) and passed in: the accelerator rules, and the cache of jq results.  A
caller that does not care passes nothing and gets DEFAULT_OPTIONS."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..jqlang.jqbatch import Result
from .accelerators import DEFAULT_RULES, ResourceRules, resource_rules
from .memo import ByteLRU

# jq results by (definition, input key): schedulers re-interpret unchanged workloads every
# placement round, and the key holds exactly what the expressions can read (inputs.py), so
# equal keys mean equal results.  Only the jq stage is reused; the rest always runs on the
# object itself.  A caller chooses the objects (keys of up to a request body each, results
# that hold parts of them), so the bound is in bytes: key and results as accounted by
# memo.held_bytes.  benchmarks/data/jobset-16k.json's entry is ~40 KB: 80 MiB keeps ~2,000 such
# (main kept 2,048 entries of any size).  An entry over 1 MiB is a caller's giant, not a
# scheduler's workload: not kept.
JQ_RESULT_BYTES = 80 * 1024 * 1024
JqResults = ByteLRU[tuple[str, bytes | str], list[Result]]


def jq_results(max_bytes: int = JQ_RESULT_BYTES) -> JqResults:
    """A new, empty cache of jq results."""
    return ByteLRU(max_bytes, max_entry=1024 * 1024)


@dataclass(frozen=True)
class EngineOptions:
    rules: ResourceRules = DEFAULT_RULES  # which requested resources are accelerators, which whole GPUs
    jq_results: JqResults | None = field(default_factory=jq_results)  # None: every call evaluates jq


DEFAULT_OPTIONS = EngineOptions()


def engine_options(
    accelerators: list[str] | None = None, gpus: list[str] | None = None, jq_result_cache: bool = True
) -> EngineOptions:
    """The options of the flags --accelerator-resource, --gpu-resource, --jq-result-cache
    (ValueError names a bad resource name)."""
    return EngineOptions(resource_rules(accelerators, gpus), jq_results() if jq_result_cache else None)

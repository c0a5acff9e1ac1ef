"""Which requested resources are accelerators, which of them are whole GPUs, and integer units.

The reference library counts only `nvidia.com/gpu` as GPU (docs/karta-semantics.md).  Schedulers
that place AMD, Intel, Gaudi, Neuron or TPU workloads, or MIG slices, need every accelerator, so:

* `accelerators`: every requested resource whose name matches one of the accelerator patterns
  (shell-style `*`), as an integer count (Quantity.Value(), rounded up);
* `gpus`: whole devices, the sum over the GPU device resources.  Partitions (MIG slices,
  `gpu.intel.com/millicores`, Neuron cores) are accelerators but never GPUs.

With the defaults a workload that requests only `nvidia.com/gpu` answers exactly as the
reference does.  Whoever interprets chooses the rules (`resource_rules`, from the flags
`--accelerator-resource` / `--gpu-resource`) and passes them in EngineOptions (options.py);
evaluation worker processes receive them when they are spawned (`as_args()`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from .quantity import Quantity

DEFAULT_ACCELERATORS = (
    "nvidia.com/gpu",
    "nvidia.com/mig-*",
    "amd.com/gpu",
    "gpu.intel.com/*",
    "habana.ai/gaudi",
    "aws.amazon.com/neuron*",
    "google.com/tpu",
)
DEFAULT_GPUS = ("nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe", "habana.ai/gaudi")

# A resource name (optionally prefixed by a domain) with `*` wildcards; nothing fnmatch would
# read as a character class, so a pattern means what it says.
_PATTERN = re.compile(r"[A-Za-z0-9*]([A-Za-z0-9._/*-]{0,252})")
_INT64_MAX = 2**63 - 1


def clamp(n: int) -> int:
    """Counts are int64 in the reference (Quantity.Value()); keep absurd quantities in range."""
    return max(-_INT64_MAX - 1, min(_INT64_MAX, n))


def check_names(values: Iterable[str], what: str) -> tuple[str, ...]:
    """The names or patterns of a flag, validated (ValueError names the bad one)."""
    out = tuple(v.strip() for v in values if v.strip())
    for v in out:
        if not _PATTERN.fullmatch(v):
            raise ValueError(
                f"{what} {v!r} is not a resource name or pattern (letters, digits, '.', '-', '_', '/' and '*')"
            )
    if not out:
        raise ValueError(f"{what}: at least one is needed")
    return out


@dataclass(frozen=True)
class ResourceRules:
    accelerators: tuple[str, ...] = DEFAULT_ACCELERATORS
    gpus: tuple[str, ...] = DEFAULT_GPUS
    _matches: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def is_accelerator(self, name: str) -> bool:
        hit = self._matches.get(name)
        if hit is None:
            hit = any(fnmatchcase(name, p) for p in self.accelerators)
            if len(self._matches) < 4096:  # resource names a cluster uses are few; requests may invent more
                self._matches[name] = hit
        return hit

    def accelerator_counts(self, requests: Mapping[str, Quantity]) -> dict[str, int]:
        """{resource: integer count} of the accelerator resources among `requests` (sorted)."""
        return {name: clamp(requests[name].value()) for name in sorted(requests) if self.is_accelerator(name)}

    def gpu_count(self, requests: Mapping[str, Quantity]) -> int:
        """Whole GPU devices: the sum over the device resources, each rounded up (500m -> 1)."""
        return clamp(sum(requests[name].value() for name in self.gpus if name in requests))

    def as_args(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return self.accelerators, self.gpus


DEFAULT_RULES = ResourceRules()


def resource_rules(accelerators: Iterable[str] | None = None, gpus: Iterable[str] | None = None) -> ResourceRules:
    """The rules of these flags' values, validated (ValueError names a bad one; None: the default).
    The defaults given again are DEFAULT_RULES itself, whose name matches are shared."""
    rules = ResourceRules(
        check_names(accelerators, "accelerator resource") if accelerators is not None else DEFAULT_ACCELERATORS,
        check_names(gpus, "GPU resource") if gpus is not None else DEFAULT_GPUS,
    )
    return DEFAULT_RULES if rules == DEFAULT_RULES else rules


def request_values(requests: Mapping[str, Quantity]) -> dict[str, int]:
    """`requests` as integers in base units, each rounded up: cpu in millicores, everything else
    (memory, storage, hugepages-* in bytes; extended resources as counts) by Value()."""
    return {name: clamp(q.milli_value() if name == "cpu" else q.value()) for name, q in sorted(requests.items())}

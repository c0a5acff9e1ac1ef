"""Node pools: a node's pool is the value of the first of the pool labels it has (`--pool-label`,
repeatable). The defaults name the accelerator a node carries, then its machine type."""

from __future__ import annotations

DEFAULT_POOL_LABELS = (
    "nvidia.com/gpu.product",  # GPU feature discovery
    "cloud.google.com/gke-accelerator",
    "node.kubernetes.io/instance-type",
)

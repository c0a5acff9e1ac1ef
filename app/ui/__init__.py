"""The web UI: static pages served by the service itself (no build step, no CDN).

`mount_ui(app)` adds `/ui/` (workloads), `/ui/workloads/{namespace}/{name}` (one workload as a
tree; `/ui/clusters/{cluster}/workloads/{namespace}/{name}` names its cluster), `/ui/fleet` (every
cluster the service reads), `/ui/interpret` (paste a manifest, see its tree) and
`/ui/definitions/{name}`.  The pages
hold no data: they call the JSON API from the browser with the caller's bearer token, so data
stays behind the API's own authorization.
"""

from .routes import mount_ui

__all__ = ["mount_ui"]

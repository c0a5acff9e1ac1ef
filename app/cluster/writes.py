"""Writes to a workload: one JSON patch, guarded by the resourceVersion it was made from.

Suspend, resume and `/interpret/update?apply=true` read the object, compute the new one and send
the difference as one RFC 6902 patch that starts with a `test` of metadata.resourceVersion.
The API server applies a JSON patch atomically: when the object changed after it was read, the
test fails (a 422, told from other refusals by the object's current version) and nothing is written, so a
concurrent edit is a 409, never a lost update (the patch
indexes lists as they were read; applied to a newer version it could land elsewhere).
"""

from __future__ import annotations

from typing import Any

from .kube import Forbidden, Kube, KubeError, NotFound, Resource, Unavailable

RV_PATH = "/metadata/resourceVersion"


class WriteFailed(Exception):
    """A patch not applied; `status` follows HTTP (409 conflict, 404 gone, 403 the API server's
    refusal of the writer's own credentials, 422 refused, 503)."""

    def __init__(self, status: int, slug: str, message: str):
        super().__init__(message)
        self.status, self.slug, self.message = status, slug, message


def guard(ops: list[dict[str, Any]], resource_version: str) -> list[dict[str, Any]]:
    """`ops` led by the test of the version they were made from (once)."""
    if ops and ops[0] == {"op": "test", "path": RV_PATH, "value": resource_version}:
        return ops
    return [{"op": "test", "path": RV_PATH, "value": resource_version}, *ops]


async def guarded_patch(
    kube: Kube, res: Resource, namespace: str | None, name: str, ops: list[dict[str, Any]]
) -> dict[str, Any]:
    """Apply `ops` (led by the resourceVersion test) to one object; the object as stored after.
    Refuses a patch without that test: every write here is guarded."""
    first = ops[0] if ops else {}
    if first.get("op") != "test" or first.get("path") != RV_PATH or not first.get("value"):
        raise WriteFailed(422, "unguarded-patch", "a patch must start with a test of metadata.resourceVersion")
    what = f'{res.kind} "{name}"{" in namespace " + namespace if namespace else ""}'
    try:
        return await kube.json_patch(res, namespace, name, ops)
    except NotFound:
        raise WriteFailed(404, "workload-not-found", f"{what} not found (deleted since it was read?)") from None
    except Forbidden as e:
        raise WriteFailed(403, "forbidden", f"not allowed to patch {what}: {e.message}") from None
    except Unavailable as e:
        raise WriteFailed(503, "cluster-unavailable", f"cannot patch {what}: {e.message}") from None
    except KubeError as e:
        # A failed `test` comes back as a bare 422 ("an error in our request"): the object's
        # current version tells a conflict from a patch the server refused for another reason.
        if e.status == 409 or (e.status == 422 and await _moved(kube, res, namespace, name, first["value"])):
            raise WriteFailed(
                409,
                "conflict",
                f"{what} changed since it was read (resourceVersion "
                f"{first['value']} is no longer current); nothing was written: "
                "read it again and retry",
            ) from None
        raise WriteFailed(
            422 if e.status == 422 else 503, "patch-refused", f"the API server refused the patch of {what}: {e.message}"
        ) from None


async def _moved(kube: Kube, res: Resource, namespace: str | None, name: str, rv: str) -> bool:
    try:
        current = await kube.get(res, namespace, name)
    except KubeError:
        return True  # gone, or unreadable now: not a refusal of the patch's content
    return (current.get("metadata") or {}).get("resourceVersion") != rv

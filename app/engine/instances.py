"""Instance ids, per-field extraction and the positional zip (reference `GetExtractedInstances`).

Every path of a component yields one output per instance; output i belongs to id i.  Counts
must match exactly, conversions follow encoding/json, and the error texts are the reference's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..jqlang.inputs import exact
from ..jqlang.jqbatch import Result
from ..jqlang.values import ConversionError, go_json_type, to_int32
from ..karta.model import FRAGMENT_FIELDS, ComponentDefinition
from .memo import Memo


class ExtractionError(Exception):
    def __init__(self, message: str, path: str = "", expression: str | None = None):
        super().__init__(message)
        self.message, self.path, self.expression = message, path, expression


@dataclass
class Scale:
    replicas: int | None = None
    min_replicas: int | None = None
    max_replicas: int | None = None

    def effective_min(self) -> int:
        """Gang reading: minReplicas if > 0, else replicas if > 0, else 0."""
        if self.min_replicas is not None and self.min_replicas > 0:
            return self.min_replicas
        if self.replicas is not None and self.replicas > 0:
            return self.replicas
        return 0


def desired(scale: Scale | None) -> int:
    """CLI reading: no scale -> 1; replicas (even 0) -> it; else minReplicas; else 1."""
    if scale is None:
        return 1
    if scale.replicas is not None:
        return scale.replicas
    if scale.min_replicas is not None:
        return scale.min_replicas
    return 1


_POD_PARTS = ("pod_template_spec", "pod_spec", "metadata", "fragmented")


@dataclass
class ExtractedInstance:
    id: str
    pod_template_spec: dict | None = None
    pod_spec: dict | None = None
    metadata: dict | None = None
    fragmented: dict | None = None
    scale: Scale | None = None
    # JSON texts of the parts above that extraction printed for its type check (by part name),
    # kept so that key() need not print them again (the pod view is reused by it).
    texts: dict[str, bytes | None] = field(default_factory=dict, compare=False, repr=False)

    def key(self) -> tuple[bytes | None, ...] | None:
        """The pod definition as JSON texts (one per part, None when absent): equal keys, equal
        pod definitions.  None when a part cannot be printed."""
        out: list[bytes | None] = []
        for name in _POD_PARTS:
            v = getattr(self, name)
            if v is None:
                out.append(None)
                continue
            text = self.texts.get(name) or json_text(v)
            if text is None:
                return None
            out.append(text)
        return tuple(out)


@dataclass
class ComponentValues:
    name: str
    ids: list[str]
    instances: list[ExtractedInstance] = field(default_factory=list)  # sorted by id (byte order)


Lookup = dict[str, Result]


def _outputs(results: Lookup, expr: str, path: str, suffix: str = "") -> list[Any]:
    """The outputs of expr; the error's location is path + suffix (joined only on error)."""
    r = results[expr]
    if not r.ok:
        raise ExtractionError(r.error or "", path + suffix, expr)
    return r.values or []


def json_text(v: Any) -> bytes | None:
    """v as JSON text in its own key order, or None when it cannot be printed (an integer
    beyond 64 bits, a lone surrogate, nesting beyond 255).  Distinct JSON values print
    distinctly (1, 1.0, "1" and true; key order too, which the first error found depends on)."""
    try:
        return exact(orjson.dumps(v))  # kept, by instances and as cache keys
    except TypeError:
        return None


_TYPES = {
    "object": (dict,),
    "string": (str,),
    "array": (list,),
}


# The parts of the Kubernetes types the engine reads, as encoding/json would type-check them:
# (field, Go struct name, expected JSON kind, nested checks).  Fields outside these shapes are
# never fed to jq (input projection), so they cannot be checked here.
_STR_MAP = ("object", "string")  # map[string]string
_QTY_MAP = ("object", "quantity")  # ResourceList
_OBJECTS: tuple[str, tuple[str, dict[str, Any]]] = (
    "array",
    ("object", {}),
)  # a list of structs, whose fields are not checked here
_RESOURCES = {"requests": ("ResourceRequirements", _QTY_MAP), "limits": ("ResourceRequirements", _QTY_MAP)}
_CONTAINER = {
    "name": ("Container", "string"),
    "image": ("Container", "string"),
    "restartPolicy": ("Container", "string"),
    "resources": ("Container", ("object", _RESOURCES)),
}
_POD_SPEC = {
    "containers": ("PodSpec", ("array", ("object", _CONTAINER))),
    "initContainers": ("PodSpec", ("array", ("object", _CONTAINER))),
    "schedulerName": ("PodSpec", "string"),
    "priorityClassName": ("PodSpec", "string"),
    "nodeSelector": ("PodSpec", _STR_MAP),
    "overhead": ("PodSpec", _QTY_MAP),
    "resources": ("PodSpec", ("object", _RESOURCES)),
    # placement (the pod view copies these): their JSON kinds, not every nested field
    "tolerations": ("PodSpec", _OBJECTS),
    "affinity": ("PodSpec", ("object", {})),
    "topologySpreadConstraints": ("PodSpec", _OBJECTS),
    "runtimeClassName": ("PodSpec", "string"),
    "resourceClaims": ("PodSpec", _OBJECTS),
}
_META = {"labels": ("ObjectMeta", _STR_MAP), "annotations": ("ObjectMeta", _STR_MAP)}
_SHAPES: dict[str, Any] = {
    "v1.PodTemplateSpec": (
        "object",
        {"metadata": ("PodTemplateSpec", ("object", _META)), "spec": ("PodTemplateSpec", ("object", _POD_SPEC))},
    ),
    "v1.PodSpec": ("object", _POD_SPEC),
    "v1.ObjectMeta": ("object", _META),
    "map[string]string": _STR_MAP,
    "v1.ResourceRequirements": ("object", _RESOURCES),
    "[]v1.Container": ("array", ("object", _CONTAINER)),
    "v1.Container": ("object", _CONTAINER),
    "[]v1.Toleration": _OBJECTS,
}
_GO_NAMES = {"string": "string", "quantity": "resource.Quantity"}


def _where(where: Any) -> str:
    """The Go error's location, built only when there is an error (most values are fine, and
    formatting a location per field was a tenth of an interpretation)."""
    if where == "value":
        return "value"
    if where[0] == "field":
        return f"struct field {where[1]}.{where[2]}"
    return f"value of map key {where[1]!r}"


Check = Callable[[Any, Any], "str | None"]  # (value, where) -> the first type error, or None


def type_checker(spec: Any) -> Check:
    """The first encoding/json type error of a value against `spec` (None: there is none), as a
    function made once per spec: closures holding each level's fields and locations, rather than
    a walk unpacking the spec at every value (a template's type check is a new workload's
    largest Python walk; this halves it)."""
    if type(spec) is str:
        go_name = _GO_NAMES[spec]
        if spec == "string":

            def string(v: Any, where: Any) -> str | None:
                if v is None or type(v) is str:
                    return None
                return f"cannot unmarshal {go_json_type(v)} into Go {_where(where)} of type {go_name}"

            return string

        def quantity(v: Any, where: Any) -> str | None:
            t = type(v)
            if v is None or t is str or t is int or t is float:
                return None
            return f"cannot unmarshal {go_json_type(v)} into Go {_where(where)} of type {go_name}"

        return quantity
    kind, inner = spec
    if kind == "object" and type(inner) is dict:
        fields = [(name, ("field", struct, name), type_checker(sub)) for name, (struct, sub) in inner.items()]

        def struct(v: Any, where: Any) -> str | None:
            if v is None:
                return None
            if type(v) is not dict:
                return f"cannot unmarshal {go_json_type(v)} into Go {_where(where)} of type object"
            get = v.get
            for name, at, check in fields:
                x = get(name)
                if x is not None and (err := check(x, at)):
                    return err
            return None

        return struct
    item = type_checker(inner)
    if kind == "object":

        def mapping(v: Any, where: Any) -> str | None:
            if v is None:
                return None
            if type(v) is not dict:
                return f"cannot unmarshal {go_json_type(v)} into Go {_where(where)} of type object"
            for key, x in v.items():
                if x is not None and (err := item(x, ("key", key))):
                    return err
            return None

        return mapping

    def array(v: Any, where: Any) -> str | None:
        if v is None:
            return None
        if type(v) is not list:
            return f"cannot unmarshal {go_json_type(v)} into Go {_where(where)} of type array"
        for x in v:
            if x is not None and (err := item(x, where)):
                return err
        return None

    return array


_CHECKS: dict[str, Check] = {go_type: type_checker(shape) for go_type, shape in _SHAPES.items()}


# Type-check outcomes by (Go type, JSON text): extracted pod templates repeat across
# interpretations, and printing one (C) costs a tenth of walking it (Python).  (Extracted values
# are JSON values, for which the text determines the outcome.)  The texts are the caller's (up
# to a request body each): bounded by their bytes too.
_problems: Memo[tuple[str, bytes], str | None] = Memo(maxsize=4096, max_bytes=32 * 1024 * 1024)


def _problem(v: Any, go_type: str, text: bytes | None) -> str | None:
    check = _CHECKS[go_type]
    if text is None:
        return check(v, "value")
    key = (go_type, text)
    try:
        return _problems[key]
    except KeyError:
        pass
    return _problems.put(key, check(v, "value"), len(text))


def _convert(v: Any, index: int, want: str, go_type: str, nil: bool = False) -> tuple[Any, bytes | None]:
    """JSON round trip into a Go type: null -> zero value (nil for pointers, maps and slices
    when `nil`), wrong JSON kind -> error.  Also returns the value's JSON text when the type
    check printed it (None otherwise)."""
    if v is None:
        if nil and want != "string":
            return None, None
        return {"object": {}, "string": "", "array": []}[want], None
    if not isinstance(v, _TYPES[want]):
        raise ConversionError(
            f"failed to convert object at index {index} to type {go_type}: json: cannot "
            f"unmarshal {go_json_type(v)} into Go value of type {go_type}"
        )
    if go_type not in _CHECKS:
        return v, None
    text = json_text(v)
    err = _problem(v, go_type, text)
    if err:
        raise ConversionError(f"failed to convert object at index {index} to type {go_type}: json: {err}")
    return v, text


def _zip_error(ids: list[str], results: list[Any]) -> str:
    return f"instance ids count ({len(ids)}) does not match results count ({len(results)})"


def _culprit(
    lists: dict[str, list[Any]], where: dict[str, tuple[str, str]], count: int, path: str
) -> tuple[str, str | None]:
    """The path and expression behind a count mismatch: the first path that yielded the reported
    count (the reference only reports the count; naming the path is what lets a user fix it).
    `where` holds each path's location under `path`."""
    for key, vals in lists.items():
        if len(vals) == count:
            suffix, expr = where[key]
            return path + suffix, expr
    return path, None


def instance_ids(c: ComponentDefinition, results: Lookup, path: str) -> list[str]:
    if not c.instance_id_path:
        return [""]
    raw = _outputs(results, c.instance_id_path, path, ".instanceIdPath")
    ids = []
    for i, v in enumerate(raw):
        if v is None:
            ids.append("")
        elif isinstance(v, str):
            ids.append(v)
        else:
            raise ExtractionError(
                f"failed to extract instance ids for component {c.name}: failed to convert object at index {i} "
                f"to type string: json: cannot unmarshal {go_json_type(v)} into Go value of type string",
                f"{path}.instanceIdPath",
                c.instance_id_path,
            )
    if "" in ids:
        raise ExtractionError(
            f"instance id path contained empty string values [{','.join(ids)}]",
            f"{path}.instanceIdPath",
            c.instance_id_path,
        )
    return ids


def extract_component(c: ComponentDefinition, results: Lookup, path: str) -> ComponentValues:
    ids = instance_ids(c, results, path)
    per_id: dict[str, ExtractedInstance] = {i: ExtractedInstance(i) for i in ids}
    sd = c.spec_definition
    if sd is not None:
        _spec_parts(sd, ids, per_id, results, path)
        frag = sd.fragmented_pod_spec_definition
        if frag is not None:
            _fragmented(frag, ids, per_id, results, f"{path}.specDefinition.fragmentedPodSpecDefinition")
    if c.scale_definition is not None:
        _scales(c, ids, per_id, results, f"{path}.scaleDefinition")
    # The tree sorts instance keys as byte strings; a duplicate id gets a node of its own, each
    # holding the last value zipped to that id (the reference zips into a map, then walks ids).
    ordered = sorted(ids, key=str.encode)
    return ComponentValues(c.name or "", ids, [per_id[i] for i in ordered])


# The whole-object parts of a spec definition: (its path attribute, the instance attribute,
# the path's location under the component, the error prefix, the Go type).
_SPEC_PARTS = (
    (
        "pod_template_spec_path",
        "pod_template_spec",
        ".specDefinition.podTemplateSpecPath",
        "failed to get pod template specs",
        "v1.PodTemplateSpec",
    ),
    ("pod_spec_path", "pod_spec", ".specDefinition.podSpecPath", "failed to get pod specs", "v1.PodSpec"),
    ("metadata_path", "metadata", ".specDefinition.metadataPath", "failed to get pod metadata", "v1.ObjectMeta"),
)


def _spec_parts(sd: Any, ids: list[str], per_id: dict[str, ExtractedInstance], results: Lookup, path: str) -> None:
    for path_attr, attr, suffix, wrap, go_type in _SPEC_PARTS:
        expr = getattr(sd, path_attr)
        if not expr:
            continue
        outs = _outputs(results, expr, path, suffix)
        try:
            converted = [_convert(v, i, "object", go_type) for i, v in enumerate(outs)]
        except ConversionError as e:
            raise ExtractionError(f"{wrap}: {e}", path + suffix, expr) from None
        if len(converted) != len(ids):
            raise ExtractionError(f"{wrap}: {_zip_error(ids, converted)}", path + suffix, expr)
        for i, (v, text) in zip(ids, converted, strict=True):
            inst = per_id[i]
            setattr(inst, attr, v)
            inst.texts[attr] = text


_FRAGMENT_TYPES = {
    "schedulerName": ("string", "string"),
    "labels": ("object", "map[string]string"),
    "annotations": ("object", "map[string]string"),
    "resources": ("object", "v1.ResourceRequirements"),
    "resourceClaims": ("array", "[]v1.PodResourceClaim"),
    "podAffinity": ("object", "v1.PodAffinity"),
    "nodeAffinity": ("object", "v1.NodeAffinity"),
    "containers": ("array", "[]v1.Container"),
    "container": ("object", "v1.Container"),
    "priorityClassName": ("string", "string"),
    "image": ("string", "string"),
    "nodeSelector": ("object", "map[string]string"),
    "tolerations": ("array", "[]v1.Toleration"),
}
# (path attribute, the path's location under the fragment definition, result key, JSON kind, Go type)
_FRAGMENTS = [
    (attr, f".{go_name[0].lower()}{go_name[1:]}", key, *_FRAGMENT_TYPES[key]) for attr, go_name, key in FRAGMENT_FIELDS
]


def _fragmented(frag: Any, ids: list[str], per_id: dict[str, ExtractedInstance], results: Lookup, path: str) -> None:
    lists: dict[str, list[Any]] = {}
    where: dict[str, tuple[str, str]] = {}
    for attr, suffix, key, want, go_type in _FRAGMENTS:
        expr = getattr(frag, attr)
        if not expr:
            continue
        where[key] = (suffix, expr)
        outs = _outputs(results, expr, path, suffix)
        try:
            lists[key] = [_convert(v, i, want, go_type, nil=True)[0] for i, v in enumerate(outs)]
        except ConversionError as e:
            raise ExtractionError(f"failed to get fragmented pod specs: {e}", path + suffix, expr) from None
    count = max(map(len, lists.values()), default=0)
    if count != len(ids):
        raise ExtractionError(
            f"failed to get fragmented pod specs: {_zip_error(ids, [None] * count)}",
            *_culprit(lists, where, count, path),
        )
    for n, i in enumerate(ids):
        # Shorter lists are padded with zero values (absent), so fragments never misalign here.
        per_id[i].fragmented = {k: v[n] for k, v in lists.items() if n < len(v)}


_SCALE_PATHS = (
    ("replicas_path", ".replicasPath"),
    ("min_replicas_path", ".minReplicasPath"),
    ("max_replicas_path", ".maxReplicasPath"),
)


def _scales(
    c: ComponentDefinition, ids: list[str], per_id: dict[str, ExtractedInstance], results: Lookup, path: str
) -> None:
    sc = c.scale_definition
    lists: dict[str, list[int | None]] = {}
    where: dict[str, tuple[str, str]] = {}
    for attr, suffix in _SCALE_PATHS:
        expr = getattr(sc, attr)
        if not expr:
            continue
        where[attr] = (suffix, expr)
        try:
            lists[attr] = [to_int32(v, i) for i, v in enumerate(_outputs(results, expr, path, suffix))]
        except ConversionError as e:
            raise ExtractionError(f"failed to get scales: {e}", path + suffix, expr) from None
    count = max(map(len, lists.values()), default=0)
    if count != len(ids):
        raise ExtractionError(
            f"failed to get scales: {_zip_error(ids, [None] * count)}", *_culprit(lists, where, count, path)
        )
    # Shorter lists leave the rest unset.
    columns = [lists.get(attr) for attr, _ in _SCALE_PATHS]
    for n, i in enumerate(ids):
        per_id[i].scale = Scale(*[col[n] if col is not None and n < len(col) else None for col in columns])

"""Read YAML/JSON text into documents, safely.

Manifests and definitions come from users, so parsing is bounded: YAML aliases may share a
node many times (a "billion laughs" file is tiny in memory but explodes when serialised), and
very deep nesting exhausts recursion later.  Both are measured on the parsed graph and refused
with a clear `DocumentError` instead of a crash or a hang.  So are numbers JSON cannot carry -
integers beyond 64 bits and YAML's `.nan` / `.inf` - which would otherwise fail later, wherever
the document is next written as JSON (`UnencodableValue`, naming where the number is).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import orjson
import yaml

try:  # libyaml is several times faster; fall back to the pure-Python loader
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

MAX_NODES = 2_000_000  # expanded JSON nodes per document (a 3 MiB manifest has far fewer)
MAX_DEPTH = 256  # nesting depth (Kubernetes objects stay well under 30)
INT_MIN, INT_MAX = -(2**63), 2**64 - 1  # what orjson (and so every JSON the service writes) can carry


class DocumentError(ValueError):
    """Text that cannot be read as YAML/JSON documents, or that exceeds the bounds."""


class UnencodableValue(DocumentError):
    """A number JSON cannot carry: an integer beyond 64 bits, NaN or an infinity."""

    def __init__(self, path: str, value: Any):
        self.path = path
        what = "an integer beyond 64 bits" if isinstance(value, int) else f"{value!r}, which JSON cannot represent"
        super().__init__(f"{path or 'the document'} holds {what}")


def _encodable(v: Any) -> bool:
    if type(v) is int:
        return INT_MIN <= v <= INT_MAX
    return type(v) is not float or math.isfinite(v)


def _unencodable(doc: Any, path: str = "") -> UnencodableValue | None:
    """Where the first number JSON cannot carry is (a second walk, only once one was seen)."""
    stack: list[tuple[Any, str]] = [(doc, path)]
    seen: set[int] = set()
    while stack:
        node, at = stack.pop()
        if isinstance(node, (dict, list)):
            if id(node) in seen:
                continue
            seen.add(id(node))
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for k, v in items:
                stack.append((v, f"{at}[{k}]" if isinstance(node, list) else f"{at}.{k}" if at else str(k)))
        elif not _encodable(node):
            return UnencodableValue(at, node)
    return None


def _check_bounds(doc: Any) -> None:
    # Expanded size with memoisation on shared (aliased) nodes: O(distinct nodes).
    sizes: dict[int, int] = {}
    if not _encodable(doc):
        raise UnencodableValue("", doc)
    stack: list[tuple[Any, int, bool]] = [(doc, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise DocumentError(f"document nesting is deeper than {MAX_DEPTH} levels")
        key = id(node)
        if done:
            kids = node.values() if isinstance(node, dict) else node
            total = 1
            for k in kids:
                if isinstance(k, (dict, list)):
                    total += sizes.get(id(k), 1)
                else:  # the scalar test inlined: this loop runs for every value of every body
                    total += 1
                    t = type(k)
                    if (t is int and not INT_MIN <= k <= INT_MAX) or (t is float and not math.isfinite(k)):
                        raise _unencodable(doc) or UnencodableValue("", k)
            if total > MAX_NODES:
                raise DocumentError(f"document expands to more than {MAX_NODES} values (YAML aliases?)")
            sizes[key] = total
            continue
        if key in sizes:
            continue
        stack.append((node, depth, True))
        kids = node.values() if isinstance(node, dict) else node
        for k in kids:
            if isinstance(k, (dict, list)) and id(k) not in sizes:
                stack.append((k, depth + 1, False))


class _KubeLoader(_Loader):
    """Safe loader that reads YAML the way Kubernetes tooling does (sigs.k8s.io/yaml):
    timestamps stay strings, and a key repeated in one mapping is an error."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, yaml.MappingNode):
            raise yaml.constructor.ConstructorError(
                None, None, f"expected a mapping node, but found {node.id}", node.start_mark
            )
        # Keys written in this mapping must be unique; keys merged in with `<<` may be overridden.
        explicit: set[str] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = _json_key(self.construct_object(key_node, deep=True))
            if key in explicit:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
                )
            explicit.add(key)
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            mapping[_json_key(self.construct_object(key_node, deep=True))] = self.construct_object(
                value_node, deep=deep
            )
        return mapping


def _json_key(key: Any) -> str:
    """Mapping keys become strings, as YAML-to-JSON conversion does (`1: a` -> "1")."""
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, (int, float)):
        return repr(key)
    raise yaml.constructor.ConstructorError(None, None, f"a mapping key must be a scalar, got {type(key).__name__}")


def _refuse(tag: str):
    def construct(loader: Any, node: yaml.Node) -> Any:
        raise yaml.constructor.ConstructorError(None, None, f"YAML tag {tag} has no JSON equivalent", node.start_mark)

    return construct


_KubeLoader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))
for _tag in ("set", "binary", "omap", "pairs"):
    _KubeLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse(f"!!{_tag}"))


def iter_documents(text: str | bytes) -> Iterator[Any]:
    """Yield every non-empty document of a YAML stream or JSON text."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DocumentError(f"input is not valid UTF-8: {e}") from None
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            doc = json.loads(text)
        except RecursionError:
            raise DocumentError(f"document nesting is deeper than {MAX_DEPTH} levels") from None
        except ValueError:
            doc = None  # may still be YAML flow style; fall through
        else:
            _check_bounds(doc)
            yield from _unlist(doc)
            return
    try:
        for doc in yaml.load_all(text, Loader=_KubeLoader):
            if doc is None:
                continue
            _check_bounds(doc)
            yield from _unlist(doc)
    except DocumentError:
        raise
    except yaml.YAMLError as e:
        raise DocumentError(f"invalid YAML: {e}") from None
    except UnicodeError as e:
        raise DocumentError(f"input is not valid Unicode text: {e}") from None
    except KeyError as e:  # PyYAML's bool constructor on a tagged non-boolean (`!!bool ""`)
        raise DocumentError(f"invalid YAML: {e.args[0]!r} is not a boolean") from None
    except (ValueError, TypeError, IndexError, OverflowError) as e:  # PyYAML's own failures on odd scalars
        raise DocumentError(f"invalid YAML: {e}") from None
    except RecursionError:
        raise DocumentError(f"document nesting is deeper than {MAX_DEPTH} levels") from None


# An integer beyond 64 bits has at least 19 digits in a row.  Found by mapping every digit to 0
# and searching for 19 zeros: ~10x faster than a regex over the body.
_DIGITS_TO_0, _LONG_NUMBER = bytes.maketrans(b"123456789", b"000000000"), b"0" * 19


def loads_json(body: bytes) -> Any:
    """One JSON document, read by orjson (C speed), numbers checked (`_loads_checked`)."""
    doc = _loads_checked(body)
    try:  # JSON has no aliases, so only depth can hurt: orjson writes at most 254 levels (C speed)
        orjson.dumps(doc)
    except orjson.JSONEncodeError:
        raise DocumentError("document nesting is deeper than 254 levels") from None
    return doc


def refuse_unencodable_json(body: bytes) -> None:
    """Raise `UnencodableValue` if a JSON text holds a number JSON output cannot carry: for
    bodies that Python's parser reads (FastAPI's), which takes NaN, Infinity, 1e400 and integers
    of any size.  Malformed JSON is left to that parser to report."""
    try:
        _loads_checked(body)
    except UnencodableValue:
        raise
    except DocumentError:
        pass


def _loads_checked(body: bytes) -> Any:
    """orjson refuses NaN and huge exponents, and reads an integer beyond 64 bits as a float
    without a word: then (rarely) the body is read again by Python's parser, exact and lenient,
    to refuse the number by path, as YAML's are."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        _name_unencodable(body)  # NaN, Infinity, 1e400: say where
        raise DocumentError(f"not valid JSON: {e}") from None
    if _LONG_NUMBER in body.translate(_DIGITS_TO_0):  # a long number (or 19 digits in a string)
        _name_unencodable(body)
    return doc


def _name_unencodable(body: bytes) -> None:
    try:
        exact = json.loads(body)
    except (ValueError, RecursionError):
        return  # not JSON even to Python: the caller reports orjson's reason
    found = _unencodable(exact)
    if found is not None:
        raise found


def _unlist(doc: Any) -> Iterator[Any]:
    """A Kubernetes `List` (or `KartaList`) stands for its items; a JSON array likewise."""
    if isinstance(doc, list):
        yield from doc
    elif isinstance(doc, dict) and isinstance(doc.get("items"), list) and str(doc.get("kind", "")).endswith("List"):
        yield from doc["items"]
    else:
        yield doc


def parse_documents(text: str | bytes) -> list[Any]:
    return list(iter_documents(text))

"""Read YAML/JSON text into documents, safely.

Manifests and definitions come from users, so parsing is bounded: YAML aliases may share a
node many times (a "billion laughs" file is tiny in memory but explodes when serialised), and
very deep nesting exhausts recursion later.  Both are measured on the parsed graph and refused
with a clear `DocumentError` instead of a crash or a hang.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import yaml

try:  # libyaml is several times faster; fall back to the pure-Python loader
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

MAX_NODES = 2_000_000  # expanded JSON nodes per document (a 3 MiB manifest has far fewer)
MAX_DEPTH = 256  # nesting depth (Kubernetes objects stay well under 30)


class DocumentError(ValueError):
    """Text that cannot be read as YAML/JSON documents, or that exceeds the bounds."""


def _check_bounds(doc: Any) -> None:
    # Expanded size with memoisation on shared (aliased) nodes: O(distinct nodes).
    sizes: dict[int, int] = {}
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
                total += sizes.get(id(k), 1) if isinstance(k, (dict, list)) else 1
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


class _KubeLoader(_Loader):  # type: ignore[misc,valid-type]
    """Safe loader that reads YAML the way Kubernetes tooling does (sigs.k8s.io/yaml):
    timestamps stay strings, and a key repeated in one mapping is an error."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                dup = key in seen
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "found an unhashable mapping key", key_node.start_mark) from None
            if dup:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_KubeLoader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))


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
    except yaml.YAMLError as e:
        raise DocumentError(f"invalid YAML: {e}") from None
    except RecursionError:
        raise DocumentError(f"document nesting is deeper than {MAX_DEPTH} levels") from None


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

"""Turn documents, files and folders into checked `Definition`s.

A definition is always returned with its findings, valid or not, so callers can report every
problem; only valid ones are ever resolved for interpretation.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from ..documents import DocumentError, parse_documents
from .findings import Finding, errors
from .lint import lint_findings
from .model import API_VERSION, KIND, Karta, conventional_name
from .schema import schema_findings
from .validate import reference_findings

Source = Literal["builtin", "directory", "configmap", "inline", "cluster"]
DEFINITION_SUFFIXES = (".yaml", ".yml", ".json")
# Folders that hold fixtures next to a definition (catalog layout), never definitions.
SKIPPED_DIRS = {"testdata", "fixtures", "__pycache__"}


@dataclass
class Definition:
    karta: Karta
    raw: dict[str, Any]
    source: Source
    origin: str  # file path, configmap/key, or "inline"
    digest: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.karta.name

    @property
    def valid(self) -> bool:
        return not errors(self.findings)

    @property
    def gvk(self) -> tuple[str, str, str] | None:
        g = self.karta.root_gvk
        if g is None or not g.version or not g.kind:
            return None
        return g.key()


def digest_of(raw: dict[str, Any]) -> str:
    """sha256 of the canonical definition: name and spec, sorted keys, compact."""
    canon = {
        "apiVersion": raw.get("apiVersion"),
        "kind": raw.get("kind"),
        "metadata": {"name": (raw.get("metadata") or {}).get("name")},
        "spec": raw.get("spec"),
    }
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


class NotAKarta(ValueError):
    """A document that is not a `run.ai/v1alpha1` `Karta`."""


def is_karta(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == KIND and doc.get("apiVersion") == API_VERSION


def definition_from_document(doc: Any, source: Source, origin: str) -> Definition:
    if not isinstance(doc, dict):
        raise NotAKarta(f"{origin}: a definition must be a mapping, got {type(doc).__name__}")
    if not is_karta(doc):
        raise NotAKarta(
            f"{origin}: not a Karta definition (apiVersion {doc.get('apiVersion')!r}, "
            f"kind {doc.get('kind')!r}; expected {API_VERSION!r}, {KIND!r})"
        )
    try:
        karta = Karta.model_validate(doc)
    except ValidationError as e:
        findings = [
            Finding(".".join(str(p) for p in err["loc"]), f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}")
            for err in e.errors()
        ]
        return Definition(Karta(), doc, source, origin, digest_of(doc), findings)
    findings = schema_findings(karta) + reference_findings(karta) + lint_findings(karta)
    if not karta.name:
        if karta.root_gvk is not None:  # name it by the upstream convention so it can be listed
            name = conventional_name(karta.root_gvk)
            meta = dict(doc.get("metadata") or {}, name=name)
            doc = dict(doc, metadata=meta)
            karta = Karta.model_validate(doc)
            findings.append(Finding("metadata.name", f'metadata.name is missing; using "{name}"', "warning"))
        else:
            findings.append(Finding("metadata.name", "metadata.name: Required value"))
    return Definition(karta, doc, source, origin, digest_of(doc), findings)


def definitions_from_text(
    text: str | bytes, source: Source, origin: str, *, skip_other_kinds: bool
) -> list[Definition]:
    """Every Karta in a YAML/JSON stream. Other kinds are skipped in folders, errors in files."""
    out = []
    for i, doc in enumerate(parse_documents(text)):
        where = origin if i == 0 else f"{origin}#{i}"
        if skip_other_kinds and not is_karta(doc):
            continue
        out.append(definition_from_document(doc, source, where))
    return out


def iter_definition_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = []
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path).parts
        if any(part in SKIPPED_DIRS or part.startswith(".") for part in rel[:-1]):
            continue
        if p.is_file() and p.suffix in DEFINITION_SUFFIXES and not p.name.startswith("."):
            files.append(p)
    return files


def load_path(path: str | Path, source: Source = "directory") -> list[Definition]:
    """Load a file (every document must be a Karta) or a folder (non-Karta files are skipped).

    Raises `DocumentError`/`NotAKarta`/`OSError` for an explicit file that cannot be used.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    in_dir = path.is_dir()
    out: list[Definition] = []
    for f in iter_definition_files(path):
        try:
            out += definitions_from_text(f.read_bytes(), source, str(f), skip_other_kinds=in_dir)
        except DocumentError:
            if not in_dir:
                raise
            # a broken fixture or unrelated file in a folder is not a definition
    return out


def builtin_dir() -> Path:
    """The built-in catalog: packaged copy in a wheel, else the repository's `definitions/`."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "builtin_definitions"
    if packaged.is_dir():
        return packaged
    return here.parent / "definitions"


def load_builtin() -> list[Definition]:
    """The built-in catalog's definitions: one `definition.yaml` per `<group>/<Kind>/<version>/`
    folder (tests/test_catalog.py holds the layout), read once per process: the package's files
    do not change while it runs, and the fixtures and cases beside them are not definitions."""
    return list(_builtin(builtin_dir()))


@functools.cache
def _builtin(d: Path) -> tuple[Definition, ...]:
    if not d.is_dir():
        return ()
    out: list[Definition] = []
    for f in sorted(d.glob("*/*/*/definition.yaml")):
        out += definitions_from_text(f.read_bytes(), "builtin", str(f), skip_other_kinds=True)
    return tuple(out)

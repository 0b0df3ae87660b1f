"""Which schema checks which (apiVersion, kind), and the verdict on one object."""
from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ..api.project import data_dir
from . import rules
from .openapi import to_json_schema

SCHEMA_DIR = data_dir("schemas")   # see schemas/SOURCES.md
REF = "#/components/schemas/"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
SUFFIXES = (".yaml", ".yml", ".json")
_OPENAPI_FILE = re.compile(r"(?:api|apis__(?P<group>.+))__(?P<version>v[^_]+)_openapi$")


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Keeps timestamps as strings, as the Kubernetes decoder does."""


_Loader.yaml_implicit_resolvers = {c: [r for r in rs if r[0] != "tag:yaml.org,2002:timestamp"]
                                   for c, rs in _Loader.yaml_implicit_resolvers.items()}


def read_documents(path: Path) -> list:
    """Every document of a YAML (multi-document) or JSON file; a `kind: List` stands for its items."""
    text = path.read_text(encoding="utf-8")
    docs = [json.loads(text)] if path.suffix == ".json" else list(yaml.load_all(text, Loader=_Loader))
    out = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            out += doc["items"]
        elif doc is not None:
            out.append(doc)
    return out


def _api_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


class Catalog:
    """(apiVersion, kind) -> its schema, from CRD files and Kubernetes OpenAPI v3 documents
    (`api__v1_openapi.json`, `apis__<group>__<version>_openapi.json`) under the folders given;
    a later folder overrides an earlier one. Validators are built on first use."""

    def __init__(self, folders=(SCHEMA_DIR,), strict: bool = True):
        self.strict = strict
        self.sources: dict[tuple[str, str], tuple] = {}
        self._meta: dict | None = None               # OpenAPI components defining ObjectMeta
        self._converted: dict[int, dict] = {}
        self._validators: dict[tuple[str, str], tuple] = {}
        for folder in map(Path, folders):
            for path in sorted(p for p in folder.rglob("*") if p.suffix in SUFFIXES):
                for doc in read_documents(path):
                    self._register(doc, path)

    def _register(self, doc, path: Path) -> None:
        if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
            spec = doc["spec"]
            for version in spec["versions"]:
                schema = (version.get("schema") or {}).get("openAPIV3Schema")
                if version.get("served", True) and schema:
                    key = (_api_version(spec["group"], version["name"]), spec["names"]["kind"])
                    self.sources[key] = ("crd", schema, path)
        elif isinstance(doc, dict) and "schemas" in doc.get("components", {}):
            served = _OPENAPI_FILE.fullmatch(path.stem)
            if not served:
                return
            own = _api_version(served["group"] or "", served["version"])
            components = doc["components"]["schemas"]
            if OBJECT_META in components and self._meta is None:
                self._meta = components
            for name, schema in components.items():    # the document also carries other groups' types
                for gvk in schema.get("x-kubernetes-group-version-kind", []):
                    if _api_version(gvk["group"], gvk["version"]) == own and not gvk["kind"].endswith("List"):
                        self.sources[(own, gvk["kind"])] = ("openapi", (components, name), path)

    def _components(self, components: dict) -> dict:
        if id(components) not in self._converted:
            self._converted[id(components)] = {n: to_json_schema(s, self.strict) for n, s in components.items()}
        return self._converted[id(components)]

    def _validator(self, key: tuple[str, str]) -> tuple[Draft202012Validator, dict | None]:
        """The structural validator, and the CRD schema whose defaults and CEL rules apply (or None)."""
        if key not in self._validators:
            source, payload, _ = self.sources[key]
            if source == "openapi":
                components, name = payload
                root = {"$ref": REF + name, "components": {"schemas": self._components(components)}}
                self._validators[key] = (Draft202012Validator(root), None)
            else:
                root = to_json_schema(payload, self.strict)
                if self._meta is not None:   # a CRD leaves metadata open; the API server checks ObjectMeta
                    props = root.setdefault("properties", {})
                    meta = [{"$ref": REF + OBJECT_META}]
                    if (payload.get("properties") or {}).get("metadata", {}).get("properties"):
                        meta.append(to_json_schema(payload["properties"]["metadata"], self.strict, branch=True))
                    props["metadata"] = {"allOf": meta}
                    root["components"] = {"schemas": self._components(self._meta)}
                self._validators[key] = (Draft202012Validator(root), payload)
        return self._validators[key]

    def problems(self, obj) -> list[str] | None:
        """Every '<path>: <message>' wrong with one object; None if its kind has no schema here."""
        if not isinstance(obj, dict) or not obj.get("apiVersion") or not obj.get("kind"):
            return ["(root): not a Kubernetes object (apiVersion and kind are required)"]
        key = (str(obj["apiVersion"]), str(obj["kind"]))
        if key not in self.sources:
            return None
        validator, crd = self._validator(key)
        if crd is not None:
            obj = rules.defaulted(crd, obj)
        errors = list(validator.iter_errors(obj))
        found = [describe(best_match(errors))] if errors else []
        found += [f"{path}: {message}" for path, message in (rules.violations(crd, obj) if crd else [])]
        return found

    def check(self, obj) -> tuple[str, str]:
        """('ok' | 'FAIL' | 'unknown', message) for one parsed object."""
        found = self.problems(obj)
        if found is None:
            return "unknown", ""
        if not found:
            return "ok", ""
        return "FAIL", found[0] + (f" (+{len(found) - 1} more)" if len(found) > 1 else "")

    def report(self, obj) -> tuple[str, str]:
        """(status, 'ok|FAIL|unknown <apiVersion>/<kind> <name>[: message]')."""
        status, message = self.check(obj)
        obj = obj if isinstance(obj, dict) else {}
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        name = meta.get("name") or meta.get("generateName") or "<unnamed>"
        line = f"{status} {obj.get('apiVersion') or '?'}/{obj.get('kind') or '?'} {name}"
        return status, line + (f": {message}" if message else "")


def describe(error) -> str:
    """'<path>: <message>', naming unknown fields plainly and cutting long values short."""
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" if re.fullmatch(r"[\w$-]+", p)
                   else f"[{json.dumps(p)}]" for p in error.absolute_path).lstrip(".") or "(root)"
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        extra = [k for k in error.instance if k not in error.schema.get("properties", {})]
        return f"{path}: unknown field{'s' if len(extra) > 1 else ''} " + ", ".join(map(json.dumps, extra))
    message = error.message if len(error.message) <= 200 else error.message[:197] + "..."
    return f"{path}: {message}"


def manifest_files(paths) -> list[Path]:
    """The files named, plus every .yaml/.yml/.json under the directories named (sorted); the
    `.pulumi` files `plan --out` writes for cloud resources are not Kubernetes objects."""
    files = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"no such file or directory: {path}")
    return files

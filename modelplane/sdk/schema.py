"""A JSON Schema for a whole stack file (`stacks/Pulumi.<stack>.yaml`), generated from the pydantic
models the loader validates with, for editors (YAML language server) and CI.

Descriptions come from the models themselves: a class docstring describes its object, and the
trailing `# comment` on a field's line describes the field — the comments the code already carries,
read from source, so there is one text for both. Keys of other providers (`gcp:project`) and
`secure:` values are allowed; a `modelplane:` key that is not a known setting must be a secret
(`{secure: ...}`), which is how `pulumi config set --secret modelplane:NAME` stores it.
"""
from __future__ import annotations

import inspect
import re

from pydantic import BaseModel

from ..api.loader import NAMESPACE, StackSpec, load_catalog

SCHEMA_URI = "https://json-schema.org/draft/2020-12/schema"
_FIELD = re.compile(r"^\s+([a-z_][a-z0-9_]*)\s*:[^#]*#\s*(.+?)\s*$")


def _models(root: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """Every model reachable from `root`, by class name (the name pydantic gives its $defs)."""
    out: dict[str, type[BaseModel]] = {}
    todo = [root]
    while todo:
        cls = todo.pop()
        if cls.__name__ in out:
            continue
        out[cls.__name__] = cls
        for field in cls.model_fields.values():
            for arg in _types(field.annotation):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    todo.append(arg)
    return out


def _types(annotation):
    yield annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        yield from _types(arg)


def _comments(cls: type[BaseModel]) -> dict[str, str]:
    """field name -> its trailing comment in the class body."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    out = {}
    for line in source.splitlines():
        m = _FIELD.match(line)
        if m and m.group(1) in cls.model_fields:
            out[m.group(1)] = m.group(2)
    return out


def _describe(defs: dict, models: dict[str, type[BaseModel]]) -> None:
    for name, schema in defs.items():
        cls = models.get(name)
        if cls is None:
            continue
        if cls.__doc__ and "description" not in schema:
            schema["description"] = inspect.cleandoc(cls.__doc__)
        for field, text in _comments(cls).items():
            alias = cls.model_fields[field].alias or field
            prop = schema.get("properties", {}).get(alias)
            if prop is not None:
                prop.setdefault("description", text)


def stack_schema(catalog=None) -> dict:
    """The JSON Schema of a stack file: its `config:` mapping with every `modelplane:` setting.
    Pool classes are an enum of `catalog`'s classes (default: the package's catalog)."""
    spec = StackSpec.model_json_schema(by_alias=True, mode="validation")
    defs = spec.pop("$defs", {})
    models = _models(StackSpec)
    _describe(defs, models)
    _describe({"StackSpec": spec}, {"StackSpec": StackSpec})
    known = sorted(spec["properties"])
    settings = {f"{NAMESPACE}:{k}": v for k, v in spec["properties"].items()}
    defs["NodePool"]["properties"]["class"]["enum"] = sorted((catalog or load_catalog()).classes)
    listed = ", ".join(f"{NAMESPACE}:{k}" for k in known)
    # Editors report a misspelt setting against this schema: say which settings exist (errorMessage
    # is the YAML language server's own keyword; validators ignore it).
    defs["Secure"] = {"type": "object", "title": "secret (any other modelplane: key)",
                      "description": "An encrypted value (pulumi config set --secret).",
                      "errorMessage": f"not a modelplane setting: the settings are {listed}; any other "
                                      f"{NAMESPACE}: key must be a secret ({{secure: ...}}, written by "
                                      f"pulumi config set --secret)",
                      "properties": {"secure": {"type": "string"}}, "required": ["secure"],
                      "additionalProperties": False}
    return {
        "$schema": SCHEMA_URI,
        "title": "modelplane stack file (stacks/Pulumi.<stack>.yaml)",
        "description": "Pulumi stack config for modelplane; other providers' keys pass through.",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": settings,
                # Any other modelplane: key is a secret the settings refer to (kubeconfigSecret, tokenSecret...).
                "patternProperties": {f"^{NAMESPACE}:(?!({'|'.join(known)})$)": {"$ref": "#/$defs/Secure"}},
                "additionalProperties": True,
            },
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
        },
        "$defs": defs,
    }

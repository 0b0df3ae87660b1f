"""Write `modelplane/sdk/fleet_types.py`: the shapes of Fleet's entries as TypedDicts and enums,
generated from the pydantic models in `modelplane/api/` (one source of truth).

Two readers use that file. The Pulumi SDK's component analyzer infers the multi-language package
schema from FleetArgs' annotations: a TypedDict becomes an object type (`#/types/...`), an Enum an
enum type, the string after a key its description. Type checkers (pyright, mypy) read the same
TypedDicts, with each enum as a `Literal` of its values (under `TYPE_CHECKING`), so a dict in the
stack file's own keys type-checks.

Keys are the stack file's (the models' aliases); a key that is a Python keyword gets a trailing
underscore (`class_`), which the schema, the SDK's camel-casing and Fleet turn back into `class`.

    python -m modelplane.sdk.typegen         # rewrite the file; tests/test_sdk.py checks it is current
"""
from __future__ import annotations

import inspect
import json
import keyword
import re
import types
import typing
from pathlib import Path

from pydantic import BaseModel, BeforeValidator
from pydantic_core import PydanticUndefined

from ..api import InferenceCluster, ModelDeployment, ModelService, Provider
from ..api.service import Dns
from .schema import _comments

TARGET = Path(__file__).with_name("fleet_types.py")

# Fleet argument -> the model of one entry (the stack file setting of the same name).
ENTRIES: dict[str, type[BaseModel]] = {"clusters": InferenceCluster, "deployments": ModelDeployment,
                                       "services": ModelService, "providers": Provider, "dns": Dns}


def _key(alias: str) -> str:
    return alias + "_" if keyword.iskeyword(alias) else alias


def _member(value) -> str:
    """An enum member's name: the value in PascalCase (on-demand -> OnDemand)."""
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", str(value)) if p]
    name = "".join(p[0].upper() + p[1:] for p in parts)
    return name if name.isidentifier() else f"V{name}"


def _unwrap(annotation):
    """The annotation without `| None` (an optional field is a NotRequired key); the package
    schema has no other unions."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unions other than Optional cannot be a package schema type: {annotation}")
        return args[0]
    return annotation


def _default(info) -> str | None:
    """The field's default as JSON, when it says something (not None, not empty)."""
    value = info.get_default(call_default_factory=True) if info.default_factory else info.default
    if value is PydanticUndefined or value is None or value in ([], {}, ""):
        return None
    if isinstance(value, BaseModel):
        value = value.model_dump(by_alias=True, exclude_none=True, mode="json")
    text = json.dumps(value, separators=(", ", ": "))
    return text if len(text) <= 100 else None


class _Writer:
    def __init__(self):
        self.done: set[str] = set()
        self.enums: list[str] = []
        self.classes: list[str] = []

    def type_of(self, owner: type[BaseModel], alias: str, annotation) -> str:
        if annotation in (str, int, float, bool):
            return annotation.__name__
        if annotation is typing.Any:
            return "Any"            # free-form by design (Helm values): the schema's pulumi.json#/Any
        if typing.get_origin(annotation) is typing.Annotated:     # constraints stay with the model
            return self.type_of(owner, alias, typing.get_args(annotation)[0])
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is list:
            return f"list[{self.type_of(owner, alias, args[0])}]"
        if origin is dict:
            return f"dict[{self.type_of(owner, alias, args[0])}, {self.type_of(owner, alias, args[1])}]"
        if origin is typing.Literal:
            return self.enum(owner, alias, args)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            self.model(annotation)
            return annotation.__name__
        raise TypeError(f"{owner.__name__}.{alias}: no package schema type for {annotation}")

    def enum(self, owner: type[BaseModel], alias: str, values) -> str:
        name = owner.__name__ + alias[0].upper() + alias[1:]
        if name not in self.done:
            self.done.add(name)
            listed = ", ".join(str(v) for v in values[:-1]) + (" or " if len(values) > 1 else "") + str(values[-1])
            doc = f"{owner.__name__}.{alias}: " + (_comments(owner).get(_field(owner, alias)) or listed)
            lines = [f"class {name}(str, Enum):", f"    {doc!r}", ""]
            lines += [f"    {_member(v)} = {v!r}" for v in values]
            literal = ", ".join(repr(v) for v in values)
            lines += ["", "", "if TYPE_CHECKING:", f"    {name}Value = Literal[{literal}] | {name}",
                      "else:", f"    {name}Value = {name}"]
            self.enums.append("\n".join(lines))
        return f"{name}Value"

    def input_alias(self, owner: type[BaseModel], alias: str, text: str, declared) -> str:
        """A type that accepts a shorthand: the shorthand too when type checking (`kai: False`),
        the type alone for the package schema, which has no unions."""
        name = f"{text}Input"
        if name not in self.done:
            self.done.add(name)
            checking = " | ".join(self.type_of(owner, alias, a) for a in typing.get_args(declared) or (declared,))
            self.classes.append("\n".join(["if TYPE_CHECKING:", f"    {name} = {checking}", "else:",
                                            f"    {name} = {text}"]))
        return name

    def model(self, cls: type[BaseModel]) -> None:
        if cls.__name__ in self.done:
            return
        self.done.add(cls.__name__)
        comments = _comments(cls)
        body = []
        for field, info in cls.model_fields.items():
            alias = info.alias or field
            inner = _unwrap(info.annotation)
            text = self.type_of(cls, alias, inner)
            shorthand = _input_type(info)
            if shorthand is not None:
                text = self.input_alias(cls, alias, text, shorthand)
            required = info.is_required()
            body.append(f"    {_key(alias)}: {text if required else f'NotRequired[{text}]'}")
            doc = (comments.get(field) or "").strip()
            default = _default(info)
            if default is not None:
                doc = (doc + ("" if doc.endswith(".") else ".") + " " if doc else "") + f"Default: {default}."
            if doc:
                body.append(f"    {doc!r}")
        head = [f"class {cls.__name__}(TypedDict):", f"    {inspect.cleandoc(cls.__doc__ or cls.__name__)!r}", ""]
        self.classes.append("\n".join(head + body))


def _input_type(info):
    """What a field accepts besides its type (a BeforeValidator's declared input, such as a
    substrate switch's `true`), when that is more than the type."""
    for meta in info.metadata:
        declared = getattr(meta, "json_schema_input_type", PydanticUndefined)
        if isinstance(meta, BeforeValidator) and declared is not PydanticUndefined and declared is not typing.Any:
            return declared
    return None


def _field(cls: type[BaseModel], alias: str) -> str:
    return next(f for f, info in cls.model_fields.items() if (info.alias or f) == alias)


def source() -> str:
    """The text of fleet_types.py."""
    writer = _Writer()
    for model in ENTRIES.values():
        writer.model(model)
    entries, imports = [], []
    for model in ENTRIES.values():
        name = model.__name__
        imports.append(f"    from .{model.__module__.removeprefix('modelplane')} import {name} as _{name}")
        entries.append(f"    {name}Entry = {name} | _{name}")
    fallbacks = [f"    {m.__name__}Entry = {m.__name__}" for m in ENTRIES.values()]
    header = '''"""The shapes of Fleet's entries (the stack file's settings) for type checkers and the package schema.

Generated by `python -m modelplane.sdk.typegen` from the pydantic models in modelplane/api/; do not edit.
Keys are the stack file's; `class_` is the pool's `class`. Enum types read as Literal values when
type checking, and as Enums for the Pulumi SDK, which turns them into the schema's enum types.
"""
# ruff: noqa: E501
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

'''
    tail = ["if TYPE_CHECKING:", "    # an entry is the dict above or the typed model of the same name",
            *imports, "", *entries, "else:", *fallbacks]
    return header + "\n\n" + "\n\n\n".join(writer.enums + writer.classes) + "\n\n\n" + "\n".join(tail) + "\n"


if __name__ == "__main__":
    TARGET.write_text(source())
    print(f"wrote {TARGET}")

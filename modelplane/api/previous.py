"""`plan --previous FILE`: a previous `plan --json` document, checked before anything runs."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import InputError, Problem
from .base import Name
from .cluster import MAX_NODES
from .errors import problems_from
from .loader import Source, display_path
from .yamlread import parse

FIX = "pass the output of `modelplane plan STACK --json` for this stack, unedited"
# The plan document's version (report.document writes it): a reader checks it before the rest.
API_VERSION = "modelplane.ai/v1alpha1"


class _Doc(BaseModel):
    # Only the keys the planner reads are checked; the rest of the document is report.
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True, defer_build=True)   # built for --previous only


class TopologyDoc(_Doc):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    tensor: int = Field(ge=1, le=64)
    pipeline: int = Field(ge=1, le=64)
    data: int = Field(ge=1, le=256)
    dataLocal: int = Field(ge=1, le=64)
    expert: bool = False


class RoleDoc(_Doc):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    pool: Name
    nodes: int = Field(ge=0, le=MAX_NODES)
    gpusPerNode: int = Field(ge=0, le=64)
    workers: int = Field(ge=0, le=10_000)
    topology: TopologyDoc | None = None     # absent in plans from before it was recorded


class PlacementDoc(_Doc):
    deployment: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    replica: int = Field(ge=0, le=999)
    cluster: Name
    roles: dict[Name, RoleDoc] = Field(min_length=1)
    slot: int = Field(default=0, ge=0, le=1)


class PlanDoc(_Doc):
    stack: str
    placements: list[PlacementDoc]


def _constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def read_previous(path: Path | None, stack: str) -> list[dict] | None:
    """The placements of a previous plan of `stack`, or InputError naming the file and field."""
    if path is None:
        return None
    display = display_path(Path(path))
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError([Problem(display, "(file)", f"cannot read: {exc.strerror or exc}", "check the path")]) from None
    try:
        text = raw.decode("utf-8")
        doc = json.loads(text, parse_constant=_constant)
    except UnicodeDecodeError:
        raise InputError([Problem(display, "(file)", "not UTF-8 text", FIX)]) from None
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        what = getattr(exc, "msg", None) or str(exc)
        raise InputError([Problem(display, "(file)", f"not a JSON document: {what}", FIX, line)]) from None
    except RecursionError:
        raise InputError([Problem(display, "(file)", "nests too deeply to be a plan", FIX)]) from None
    try:
        node = parse(text, display)[0]    # JSON is YAML: its nodes give the line of a path
    except InputError:
        node = None
    src = Source(display, doc, node)
    if isinstance(doc, list):
        raise InputError([Problem(display, "(file)", "a bare list of placements (an older format)", FIX, 1)])
    if not isinstance(doc, dict) or "placements" not in doc or "stack" not in doc:
        raise InputError([Problem(display, "(file)", "not a plan document: it needs 'stack' and 'placements'", FIX, 1)])
    version = doc.get("apiVersion")
    if version is not None and version != API_VERSION:      # plans from before the version had none
        raise InputError([Problem(display, "apiVersion", f"apiVersion: {version!r} is not a plan this modelplane "
                                  f"reads ({API_VERSION})", f"plan the previous state with this modelplane: {FIX}",
                                  src.line(("apiVersion",)))])
    try:
        plan = PlanDoc.model_validate(doc)
    except ValidationError as exc:
        raise InputError([replace(p, fix=FIX) for p in problems_from(exc, PlanDoc, display, src.line)]) from None
    if plan.stack != stack:
        raise InputError([Problem(display, "stack", f"this is a plan of stack {plan.stack!r}, not {stack!r}",
                                  f"pass a previous plan of {stack!r}", src.line(("stack",)))])
    seen: dict[tuple[str, int], int] = {}
    for i, p in enumerate(plan.placements):
        first = seen.setdefault((p.deployment, p.replica), i)
        if first != i:
            raise InputError([Problem(display, f"placements[{i}]", f"{p.deployment} replica {p.replica} is placed "
                                      f"twice (also placements[{first}])", FIX, src.line(("placements", i)))])
    return [p.model_dump() for p in plan.placements]

"""The substrate's switches as a stack file writes them (`true`, `false` or `{enabled, version,
values}`), what each one overrides in catalog/substrate.yaml, and the checks on an override."""
from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BeforeValidator

from .base import Model, invalid
from .project import data_dir

SCHEMAS = data_dir("schemas")   # valuesSchema paths are relative to it
SEMVER = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?")

# The catalog/substrate.yaml entries each switch installs. `version` applies to all of them (each
# group is released together under one version); `values` merge into the first one's release.
CHARTS = {
    "draDriver": ("draDriver",),
    "kai": ("kai",),
    "lws": ("lws",),
    "kserve": ("kserve", "kserveCrds", "kserveRuntimeConfigs"),
    "keda": ("keda",),
    "certManager": ("certManager",),
    "gateway": ("envoyGateway", "envoyGatewayCrds"),
    "autoscaler": ("clusterAutoscaler",),
}
# Entries a switch installs besides its versioned group (their versions are pinned on their own).
SWITCH_OF = {**{key: switch for switch, keys in CHARTS.items() for key in keys},
             "gatewayApi": "gateway", "aiGateway": "gateway", "aiGatewayCrds": "gateway"}


class Component(Model):
    """One substrate component. `true`/`false` in a stack file is `{enabled: true/false}`."""

    enabled: bool = True              # false: the cluster already runs it
    preinstalled: bool = False        # true: the cluster's owners installed it; modelplane wires workloads for it, installs nothing
    version: str | None = None        # the chart version to install; default: catalog/substrate.yaml's pin
    values: dict[str, Any] = {}       # Helm values deep-merged over modelplane's (yours win)

    def __bool__(self) -> bool:       # `if cluster.substrate.kai:` reads as it did for plain switches
        return self.enabled


def _component(value):
    if isinstance(value, bool):
        return {"enabled": value}
    if isinstance(value, (dict, Component)):
        return value
    raise invalid(f"expected true, false or a mapping, got {type(value).__name__}",
                  "write true, false or {enabled: true, version: ..., values: {...}}")


# Stack files (and the JSON Schema) take a bool or a mapping; the model always holds a Component.
Switch = Annotated[Component, BeforeValidator(_component, json_schema_input_type=bool | Component)]


def deep_merge(ours: dict, theirs: dict) -> dict:
    """`theirs` over `ours`: mappings merge key by key, anything else (lists too) is replaced, as
    Helm merges a values file over a chart's defaults."""
    out = dict(ours)
    for key, value in theirs.items():
        out[key] = deep_merge(out[key], value) if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return out


def overrides(substrate) -> dict[str, dict]:
    """catalog/substrate.yaml key -> {version?, values?} that a cluster's switches set."""
    out = {}
    for switch, keys in CHARTS.items():
        comp = getattr(substrate, _field(substrate, switch))
        for i, key in enumerate(keys):
            over = {"version": comp.version} if comp.version else {}
            if i == 0 and comp.values:
                over["values"] = comp.values
            if over:
                out[key] = over
    return out


def preinstalled(substrate) -> frozenset[str]:
    """Switch names whose component the cluster's owners installed (enabled, not installed by us)."""
    return frozenset(s for s in CHARTS if (c := getattr(substrate, _field(substrate, s))).enabled and c.preinstalled)


def toggles(substrate) -> dict[str, bool]:
    """Switch name (as in the stack file) -> enabled."""
    return {switch: getattr(substrate, _field(substrate, switch)).enabled for switch in CHARTS}


def _field(substrate, alias: str) -> str:
    return next(n for n, f in type(substrate).model_fields.items() if (f.alias or n) == alias)


def _version(text: str) -> tuple:
    m = SEMVER.fullmatch(text)
    major, minor, patch, pre = int(m[1]), int(m[2]), int(m[3]), m[4]
    return (major, minor, patch, 0 if pre else 1)     # a pre-release sorts before its release


@lru_cache(maxsize=None)
def values_validator(path: str):
    from jsonschema import Draft7Validator, validators   # here: only a values override needs it (~0.1 s)

    schema = json.loads((SCHEMAS / path).read_text())
    # KServe's schema names draft-07 by its https URL, which jsonschema does not recognise.
    draft = str(schema.get("$schema", ""))
    cls = Draft7Validator if "draft-07" in draft else validators.validator_for(schema, default=Draft7Validator)
    return cls(schema)


def check_component(switch: str, comp: Component, entries: dict) -> list[tuple[tuple, str, str]]:
    """(path under the switch, message, fix) for what is wrong with one switch's override.
    `entries`: catalog/substrate.yaml's `substrate` mapping."""
    out = []
    main = entries.get(CHARTS[switch][0], {})
    pinned = str(main.get("version", ""))
    if comp.version is not None:
        minimum = main.get("minimum")
        if not SEMVER.fullmatch(comp.version):
            out.append((("version",), f"{comp.version!r} is not an exact chart version",
                        f"pin one release, e.g. {pinned!r}: ranges would install whatever is newest"))
        elif minimum and _version(comp.version) < _version(str(minimum["version"])):
            out.append((("version",), f"{switch} {comp.version} is older than {minimum['version']}: "
                        f"{minimum['why']}", f"use {minimum['version']} or newer (modelplane pins {pinned})"))
    schema = main.get("valuesSchema")
    if comp.values and schema and (comp.version is None or comp.version == pinned):
        for err in sorted(values_validator(schema).iter_errors(comp.values), key=lambda e: list(e.absolute_path)):
            if err.validator == "required":   # Helm checks the values merged over the chart's defaults
                continue
            path = ("values", *err.absolute_path)
            message = err.message if len(err.message) <= 200 else err.message[:197] + "..."
            out.append((path, f"not accepted by {main.get('chart')} {pinned}'s values.schema.json: {message}",
                        f"see schemas/{schema} for the chart's values"))
    return out


def check_substrate(substrate, entries: dict) -> list[tuple[str, tuple, str, str]]:
    """(switch, path under it, message, fix) for every override a cluster's substrate gets wrong."""
    return [(switch, *finding) for switch in CHARTS
            for finding in check_component(switch, getattr(substrate, _field(substrate, switch)), entries)]

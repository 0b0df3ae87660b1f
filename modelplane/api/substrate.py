"""The substrate's switches as a stack file writes them (`true`, `false` or `{enabled, version,
values}`), what each one overrides in catalog/substrate.yaml, and the checks on an override."""
from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BeforeValidator, model_validator

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
             "aiGateway": "gateway", "aiGatewayCrds": "gateway"}


class Component(Model):
    """One substrate component. `true`/`false` in a stack file is `{enabled: true/false}`."""

    enabled: bool = True              # false: the cluster already runs it
    preinstalled: bool = False        # true: the cluster's owners installed it; modelplane wires workloads for it, installs nothing
    version: str | None = None        # the chart version to install; default: catalog/substrate.yaml's pin
    values: dict[str, Any] = {}       # Helm values deep-merged over modelplane's (yours win)

    def __bool__(self) -> bool:       # `if cluster.substrate.kai:` reads as it did for plain switches
        return self.enabled


# The endpoint picker modelplane runs for KServe's shared pools (render/picker.py): KServe v0.20.0's
# scheduler preset image (config/llmisvcconfig/config-llm-scheduler.yaml L49).
EPP_IMAGE = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_REGISTRY = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:\d+)?(/[a-z0-9]([-a-z0-9._]*[a-z0-9])?)*")


class EndpointPicker(Model):
    """Which endpoint-picker image the cluster pulls: modelplane's, from a mirror, pinned by digest,
    or a whole other reference (a build of your own)."""

    image: str | None = None      # the whole reference, e.g. registry.acme.io/llm-d/epp:v0.9.0
    registry: str | None = None   # replaces ghcr.io, e.g. mirror.acme.io/ghcr (a pull-through mirror)
    digest: str | None = None     # sha256:<64 hex>, appended as image@sha256:...

    @model_validator(mode="after")
    def _check(self):
        if self.digest is not None and not _DIGEST.fullmatch(self.digest):
            raise invalid(f"digest {self.digest!r} is not sha256:<64 lowercase hex digits>",
                          "copy the digest from `crane digest <image>` or the registry, e.g. sha256:3f1c...")
        if self.registry is not None and not _REGISTRY.fullmatch(self.registry):
            raise invalid(f"registry {self.registry!r} is not a registry host with an optional path",
                          "write a host and path without scheme or trailing slash, e.g. mirror.acme.io/ghcr")
        if self.image is not None and self.registry is not None:
            raise invalid("set image or registry, not both",
                          "image replaces the whole reference; registry only its host (ghcr.io)")
        if self.image is not None and "@" in self.image and self.digest is not None:
            raise invalid("image already carries a digest", "drop digest, or the @sha256:... from image")
        return self

    def reference(self) -> str:
        """The image reference the picker Deployments run."""
        ref = self.image or EPP_IMAGE
        if self.registry is not None:
            ref = f"{self.registry}/{EPP_IMAGE.split('/', 1)[1]}"
        return f"{ref}@{self.digest}" if self.digest else ref


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

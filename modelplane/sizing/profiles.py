"""Sizing profiles: AIConfigurator's estimates for one model, as data under the catalog.

A profile file (`<catalog>/profiles/<org>--<model>.yaml`) holds, per GPU system and workload
(input and output tokens per request), the shapes the estimator swept and for each shape its
Pareto-optimal points: time to first token, inter-token latency (TPOT) and the requests per
second one replica serves at that latency. `plan` only reads them, so it needs neither the
estimator nor its minutes of CPU, and a plan stays byte-identical.

Profiles are found in the `profiles/` folder of the stack's `catalogDir`, then of the package's
`catalog/`, then in the user cache (`~/.cache/modelplane/profiles/`, what `plan` estimated
itself when the extra is installed); the first that has the (model, system, workload) wins.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import Field, ValidationError

from ..api.base import Model
from ..api.errors import problems_from
from ..errors import InputError
from ..api.loader import read_yaml

BACKEND = "vllm"          # the engine modelplane renders (KServe's llm-d preset and the native image)


class Parallel(Model):
    """One worker of a shape as AIConfigurator names it: attention tp x pp x dp, MoE tp x ep."""

    workers: int = Field(ge=1, le=256)
    tp: int = Field(ge=1, le=64)
    pp: int = Field(default=1, ge=1, le=64)
    dp: int = Field(default=1, ge=1, le=256)
    moe_tp: int = Field(default=1, ge=1, le=256)
    moe_ep: int = Field(default=1, ge=1, le=256)

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def label(self) -> str:
        moe = f" etp{self.moe_tp} ep{self.moe_ep}" if self.moe_tp > 1 or self.moe_ep > 1 else ""
        return f"{self.workers}x tp{self.tp}" + (f" pp{self.pp}" if self.pp > 1 else "") + \
            (f" dp{self.dp}" if self.dp > 1 else "") + moe


Point = tuple[float, float, float]     # ttftMs, itlMs, requests per second per replica


class Shape(Model):
    mode: Literal["aggregated", "disaggregated"]
    gpus: int = Field(ge=1)
    decode: Parallel
    prefill: Parallel | None = None
    points: list[Annotated[list[float], Field(min_length=3, max_length=3)]] = Field(min_length=1)

    def label(self) -> str:
        if self.prefill is None:
            return f"agg {self.decode.label()}"
        return f"{self.prefill.workers}P{self.decode.workers}D prefill {self.prefill.label()} / decode {self.decode.label()}"


class Workload(Model):
    input_tokens: int = Field(ge=1)
    output_tokens: int = Field(ge=1)
    created: date = Field(strict=False)
    shapes: list[Shape] = []


class SystemProfile(Model):
    system: str
    backend: Literal["vllm", "sglang", "trtllm"] = BACKEND
    database_version: str
    gpus_per_node: int = Field(ge=1)
    workloads: list[Workload] = []


class Estimator(Model):
    name: str
    version: str


class ProfileFile(Model):
    model: str
    estimator_model: str
    estimator: Estimator
    systems: list[SystemProfile] = []


@dataclass(frozen=True)
class Found:
    """One workload of one system of a model's profile, with where it was read."""

    model: str
    system: SystemProfile
    workload: Workload
    estimator: Estimator
    estimator_model: str
    file: str


def file_name(uri: str) -> str:
    """hf://Qwen/Qwen3-32B -> Qwen--Qwen3-32B.yaml"""
    return uri.split("://", 1)[-1].replace("/", "--") + ".yaml"


def read(path: Path) -> ProfileFile:
    src = read_yaml(path)
    try:
        return ProfileFile.model_validate(src.data or {})
    except ValidationError as exc:
        raise InputError(problems_from(exc, ProfileFile, src.file, src.line)) from None


class Profiles:
    """Profiles by model URI from a list of folders (earlier folders win), read on first use."""

    def __init__(self, folders: list[Path]):
        self.folders = [Path(f) for f in folders]
        self._read: dict[tuple[str, Path], ProfileFile | None] = {}

    def _file(self, uri: str, folder: Path) -> tuple[ProfileFile | None, str]:
        path = folder / file_name(uri)
        key = (uri, folder)
        if key not in self._read:
            self._read[key] = read(path) if path.is_file() else None
        return self._read[key], str(path)

    def find(self, uri: str, system: str, isl: int, osl: int) -> Found | None:
        for folder in self.folders:
            doc, where = self._file(uri, folder)
            if doc is None or doc.model != uri:
                continue
            for sp in doc.systems:
                if sp.system != system:
                    continue
                for w in sp.workloads:
                    if (w.input_tokens, w.output_tokens) == (isl, osl):
                        return Found(uri, sp, w, doc.estimator, doc.estimator_model, where)
        return None

    def workloads(self, uri: str, system: str) -> list[tuple[int, int]]:
        """Every (input, output) tokens profiled for a model on a system (for messages)."""
        out = set()
        for folder in self.folders:
            doc, _ = self._file(uri, folder)
            for sp in doc.systems if doc else ():
                if sp.system == system:
                    out |= {(w.input_tokens, w.output_tokens) for w in sp.workloads}
        return sorted(out)


def pareto(points) -> list[Point]:
    """The points no other point beats on all of TTFT, ITL (lower) and requests/s (higher)."""
    pts = sorted({(float(t), float(i), float(r)) for t, i, r in points}, key=lambda p: (-p[2], p[0], p[1]))
    kept: list[Point] = []
    for p in pts:
        if not any(q[0] <= p[0] and q[1] <= p[1] and q[2] >= p[2] for q in kept):
            kept.append(p)
    return kept


def merge(existing: ProfileFile | None, estimate: dict, uri: str, today: date) -> ProfileFile:
    """A profile file with one estimator run (aic.py's JSON) added, replacing the same system and workload."""
    shapes = []
    for s in estimate["shapes"]:
        decode = Parallel.model_validate(s["decode"])
        prefill = Parallel.model_validate(s["prefill"]) if s.get("prefill") else None
        shapes.append(Shape(mode=s["mode"], gpus=int(s["gpus"]), decode=decode, prefill=prefill,
                            points=[list(p) for p in pareto(s["points"])]))
    shapes.sort(key=shape_order)
    workload = Workload(input_tokens=estimate["inputTokens"], output_tokens=estimate["outputTokens"], created=today,
                        shapes=shapes)
    systems = {sp.system: sp for sp in (existing.systems if existing else [])}
    old = systems.get(estimate["system"])
    others = [w for w in (old.workloads if old else [])
              if (w.input_tokens, w.output_tokens) != (workload.input_tokens, workload.output_tokens)]
    systems[estimate["system"]] = SystemProfile(
        system=estimate["system"], backend=estimate["backend"], database_version=str(estimate["databaseVersion"]),
        gpus_per_node=int(estimate["gpusPerNode"]),
        workloads=sorted([*others, workload], key=lambda w: (w.input_tokens, w.output_tokens)))
    return ProfileFile(model=uri, estimator_model=estimate["estimatorModel"],
                       estimator=Estimator.model_validate(estimate["estimator"]),
                       systems=[systems[k] for k in sorted(systems)])


def shape_order(s: Shape):
    p = s.prefill
    return (s.mode, s.gpus, (p.workers, p.tp, p.pp, p.dp, p.moe_tp, p.moe_ep) if p else (),
            (s.decode.workers, s.decode.tp, s.decode.pp, s.decode.dp, s.decode.moe_tp, s.decode.moe_ep))


HEADER = ("# Sizing profile written by `modelplane size` from NVIDIA AIConfigurator's estimates (docs/sizing.md).\n"
          "# points: [ttftMs, itlMs, requestsPerSecond of one replica], the Pareto-optimal ones per shape.\n"
          "# Regenerate with `modelplane size`; hand edits are read as they are.\n")


class _Dumper(yaml.SafeDumper):
    pass


def _flow_list(dumper, data):
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


class _Flow(list):
    pass


class _FlowMap(dict):
    pass


_Dumper.add_representer(_Flow, _flow_list)
_Dumper.add_representer(_FlowMap, lambda d, m: d.represent_mapping("tag:yaml.org,2002:map", m.items(), flow_style=True))


def dump(profile: ProfileFile) -> str:
    """The file's text: keys in schema order, one point per line, deterministic."""
    doc = profile.model_dump(by_alias=True, mode="json", exclude_none=True)
    for sp in doc["systems"]:
        for w in sp["workloads"]:
            for s in w["shapes"]:
                for role in ("prefill", "decode"):
                    if role in s:
                        s[role] = _FlowMap(s[role])
                s["points"] = [_Flow(p) for p in s["points"]]
    doc["estimator"] = _FlowMap(doc["estimator"])
    return HEADER + yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)

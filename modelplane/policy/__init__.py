"""Validation rules as a CrossGuard policy pack: defined once here, served by `policies/`."""
from __future__ import annotations

from pathlib import Path

from . import resource, routing, serving, stack  # noqa: F401  (registers the policies)
from .gate import PACK_DIR, Analyzer, PackError, PolicyConfigError, Resource, read_config, resolve
from .registry import ADVISORY, DISABLED, MANDATORY, POLICIES, Policy

CONFIG_DIR = PACK_DIR / "config"

__all__ = ["ADVISORY", "DISABLED", "MANDATORY", "POLICIES", "Analyzer", "PackError", "Policy", "PolicyConfigError", "Resource",
           "default_config", "evaluate", "read_config", "resolve", "resources_of", "with_fixes"]


def default_config(production: bool) -> Path:
    """The config a stack gets when none is given: production.json for production stacks, else
    dev.json, from the project's policies/config/ when it has one, else the package's."""
    from ..api.project import current

    return current().policy_config(production)


def with_fixes(violations: list[dict]) -> list[dict]:
    """Each verdict with its policy's fix hint (what to change to pass), as the CLI reports it; a
    verdict that knows a fix for its own case (a `no-outage` from a node pool replace) keeps it, and
    a policy with a fix per case (Policy.fixes) gives the one its message matches."""
    return [{**v, "fix": v.get("fix") or POLICIES[v["policy"]].fix_for(v.get("message") or "")}
            if v.get("policy") in POLICIES else dict(v) for v in violations]


def resources_of(run) -> list[Resource]:
    """The offline run's resources as the analyzer sees them: custom resources with their inputs,
    components with the outputs they registered."""
    return [Resource(r.type, r.urn, r.name, r.outputs if not r.custom else r.inputs, r.parent, r.custom)
            for r in run.records]


def evaluate(run, config: dict | None = None, analyzer: Analyzer | None = None, engine: str = "direct") -> list[dict]:
    """Violations of the pack over an offline run. engine="direct" (the default) runs the rules in
    this process (direct.py: the same verdicts, no subprocess, no gRPC); engine="pulumi", or an
    `analyzer` passed in, runs the pack as the Pulumi CLI does, through the analyzer's gRPC protocol."""
    if engine not in ("direct", "pulumi"):
        raise ValueError(f"engine {engine!r}: use 'direct' or 'pulumi'")
    if config is None:
        config = read_config(default_config(run.result.spec.production))
    if analyzer is not None:
        analyzer.configure(config)
        return analyzer.analyze(resources_of(run))
    if engine == "direct":
        from . import direct
        return direct.evaluate(resources_of(run), config, finite=getattr(run, "finite", False),
                               plain=getattr(run, "plain", frozenset()))
    with Analyzer(stack=run.stack) as a:
        a.configure(config)
        return a.analyze(resources_of(run))

"""What a plan records, whichever engine produced it: every registered resource with its inputs,
and the offline stand-ins for what only a real cloud or another stack's state would know.
Pure: the direct engine (direct.py) and the Pulumi engine under mocks (offline.py) share it."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import assemble
from .api import load_stack, stack_file
from .api.loader import catalog_of, display_path, read_yaml, stack_names
from .errors import InputError, Problem, did_you_mean
from .fleet import inventory_of

PROJECT = "modelplane"
ORGANIZATION = "organization"      # what a self-managed backend calls the organization

OFFLINE_KUBECONFIG = "offline-placeholder-kubeconfig"


class Unknown:
    """A value known only after an update (the direct engine's; pulumi.output.Unknown under mocks)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Unknown"


UNKNOWN = Unknown()


def is_unknown(value) -> bool:
    """An unknown input of either engine (without importing Pulumi)."""
    return type(value).__name__ == "Unknown" and type(value).__module__ in (__name__, "pulumi.output")

# Outputs a real provider computes; mocks echo inputs, so fill in what dependents read.
_COMPUTED = {
    "gcp:container/cluster:Cluster": {"endpoint": "203.0.113.10",
                                      "masterAuth": {"clusterCaCertificate": "b2ZmbGluZQ=="}},
    "aws:eks/cluster:Cluster": {"endpoint": "https://offline.eks.invalid",
                                "certificateAuthority": {"data": "b2ZmbGluZQ=="},
                                "vpcConfig": {"vpcId": "vpc-0ff1ine", "clusterSecurityGroupId": "sg-0ff1ine"}},
    "aws:ec2/launchTemplate:LaunchTemplate": {"latestVersion": 1},
    "aws:iam/role:Role": {"arn": "arn:aws:iam::000000000000:role/offline"},
}


@dataclass
class Record:
    type: str
    name: str
    urn: str
    parent: str
    provider: str
    custom: bool
    dependencies: tuple[str, ...] = ()
    ignore_changes: tuple[str, ...] = ()
    import_id: str = ""             # the `import` resource option: an existing object to take over
    inputs: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)     # what a component registered (register_outputs)


def _merge(inputs: dict, computed: dict) -> dict:
    out = dict(inputs)
    for key, value in computed.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


@dataclass
class OfflineRun:
    stack: str
    result: assemble.Result
    records: list[Record]
    lost: tuple[str, ...] = ()      # clusters planned without (what-if)


def _fleet_references(spec, catalog, path: Path) -> dict[str, dict]:
    """Plan each infra stack of `modelplane:fleet` from its own file; name the reference if one is missing."""
    problems = []
    known = stack_names()
    for i, name in enumerate(spec.fleet):
        if not stack_file(name).exists():
            guess = did_you_mean(name, known)
            problems.append(Problem(display_path(path), f"config.{PROJECT}:fleet[{i}]",
                                    f"fleet names stack {name!r}, which has no stacks/Pulumi.{name}.yaml",
                                    f"did you mean {guess!r}?" if guess else f"stacks here: {', '.join(known)}"))
    if problems:
        raise InputError(problems)
    return _infra_references(spec.fleet)


def _infra_references(names) -> dict[str, dict]:
    """What each infra stack would export, planned from its own file (kubeconfigs stand in)."""
    refs = {}
    for name in names:
        catalog = catalog_of((read_yaml(stack_file(name)).data or {}).get("config"))
        infra = load_stack(stack_file(name), catalog)
        invs = [inventory_of(c, catalog) for c in sorted(infra.clusters, key=lambda c: c.name)]
        # Gateway addresses exist once the infra stack is up; offline they are named, not known.
        refs[name] = {"inventory": invs, "kubeconfigs": {inv["name"]: OFFLINE_KUBECONFIG for inv in invs},
                      "gateways": {inv["name"]: f"(gateway address exported by stack {name})" for inv in invs}}
    return refs



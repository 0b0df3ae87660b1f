"""What a plan records, whichever engine produced it: every registered resource with its inputs,
and the offline stand-ins for what only a real cloud or another stack's state would know.
Pure: the direct engine (direct.py) and the Pulumi engine under mocks (offline.py) share it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .assemble import Result

PROJECT = "modelplane"
ORGANIZATION = "organization"      # what a self-managed backend calls the organization

OFFLINE_KUBECONFIG = "offline-placeholder-kubeconfig"
SECRET_OUTPUTS = ("kubeconfigs",)  # outputs of another stack that are secret (as an infra stack exports them)

# The engine's markers in resource properties (pulumi.runtime.rpc): a secret is a dict with the
# signature key set to the secret signature beside its value; an unknown string is this text.
SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
UNKNOWN_TEXT = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
# Every unknown sentinel of the protocol, by the type it stands for (pulumi_policy/proxy.py names them
# so in its errors): a string equal to one of them is no value the engine would pass on as known.
UNKNOWN_SENTINELS = {
    "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7": "boolean",
    "3eeb2bf0-c639-47a8-9e75-3b44932eb421": "number",
    UNKNOWN_TEXT: "string",          # also what policy/gate.py `_plain` sends for a non-JSON value
    "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2": "Array",
    "030794c1-ac77-496b-92df-f27374a8bd58": "asset",
    "e48ece36-62e2-4504-bad9-02848725956a": "archive",
    "dd056dcd-154b-4c76-9bd3-c8f88648b5ff": "Object",
}


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
    protect: bool = False           # the `protect` option (inherited from the parent when unset)
    delete_before_replace: bool = False
    replace_on_changes: tuple[str, ...] = ()
    retain_on_delete: bool = False  # the `retainOnDelete` option
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
    result: Result
    records: list[Record]
    lost: tuple[str, ...] = ()      # clusters planned without (what-if)
    finite: bool = False            # every number in the records is finite (the direct engine checks)
    # URNs whose record holds its inputs as the direct engine was given them, plain JSON with
    # integers: what the report writes for them as they are (output/report.py manifest_of)
    plain: frozenset = field(default=frozenset(), repr=False, compare=False)

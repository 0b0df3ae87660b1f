"""The public component: `Fleet`, one scheduling run over a fleet of GPU clusters.

A Fleet takes everything the scheduler must see at once — the clusters it builds, the clusters
other stacks built (`stacks`), every deployment, service, provider and DNS zone — places every
replica and creates the resources, exactly as the config-driven program does with the same
settings (both call `assemble`). Entries have the shape of the stack file's `modelplane:` settings
(see `modelplane schema`), as dicts or as the typed models `modelplane.InferenceCluster`,
`modelplane.ModelDeployment`, ... Hostable for every Pulumi language (`provider/`).
"""

import keyword
from enum import Enum
from typing import Any, NotRequired, Optional, Sequence, TypedDict

import pulumi
from pydantic import BaseModel

from ..api.loader import NAMESPACE, Source, catalog_of, parse_stack_config
from ..engine.assemble import Built, Remote, assemble
from ..components.materialize import materialize
from ..render.graph import STACK_REFERENCE, key_of
from .fleet_types import DnsEntry, InferenceClusterEntry, ModelDeploymentEntry, ModelServiceEntry, ProviderEntry
from .. import scheduler


class RolePlacement(TypedDict):
    """Where one role of a replica runs."""

    pool: str
    """The node pool."""
    nodes: int
    """Nodes reserved for the role (its autoscaling maximum)."""
    gpusPerNode: int
    """GPUs on each of those nodes."""
    workers: int
    """Engine workers reserved for the role."""


class Placement(TypedDict):
    """One replica: its cluster and a pool per GPU role (the scheduler's Placement.to_json)."""

    deployment: str
    """`namespace/name` of the deployment."""
    replica: int
    """The replica's index."""
    cluster: str
    """The cluster it runs on."""
    roles: dict[str, RolePlacement]
    """Per GPU role (decode, prefill): where it runs."""


class Rejection(TypedDict):
    """Why a cluster or pool could not take a replica."""

    cluster: str
    """The cluster considered."""
    pool: NotRequired[str]
    """The pool, when the reason is about one."""
    reason: str
    """clusterSelector, queue, nodeSelector, shape, coLocation or capacity."""
    detail: str
    """What exactly did not fit."""


class UnplacedReplica(TypedDict):
    """A replica that found no room (the scheduler's Unplaced.to_json)."""

    deployment: str
    """`namespace/name` of the deployment."""
    replica: int
    """The replica's index."""
    reasons: list[Rejection]
    """Every reason, per cluster and pool."""


class ServiceEndpoint(TypedDict):
    """Where a service is reachable."""

    hostname: NotRequired[str]
    """The service's hostname, if it has one."""
    clusters: list[str]
    """Clusters whose gateways carry it."""


class FleetArgs(TypedDict, total=False):
    """The inputs of a Fleet; every entry has the shape of the stack file setting of the same name
    (typed in modelplane/sdk/fleet_types.py, generated from the models)."""

    clusters: pulumi.Input[Sequence[InferenceClusterEntry]]
    """Clusters this fleet builds on GKE or EKS, or adopts (existing): modelplane:clusters entries."""
    deployments: pulumi.Input[Sequence[ModelDeploymentEntry]]
    """Models to serve, every replica placed by the scheduler: modelplane:deployments entries."""
    services: pulumi.Input[Sequence[ModelServiceEntry]]
    """Stable model names weighted over deployments and providers: modelplane:services entries."""
    providers: pulumi.Input[Sequence[ProviderEntry]]
    """Hosted OpenAI-compatible APIs that services may route to: modelplane:providers entries."""
    dns: pulumi.Input[DnsEntry]
    """Weighted DNS records across the clusters' gateways: the modelplane:dns setting."""
    stacks: pulumi.Input[list[str]]
    """Infra stacks whose exported clusters join this fleet: org/project/stack, or a stack of this project."""
    production: pulumi.Input[bool]
    """Production policy settings: unplaced replicas and degraded services fail the gate."""
    repack: pulumi.Input[bool]
    """Plan from scratch once, ignoring where replicas run now (see modelplane plan --repack)."""
    unprotect: pulumi.Input[list[str]]
    """Clusters (`<cluster>`) and pools (`<cluster>/<pool>`) whose Pulumi protect to lift, so a later up may delete them."""
    catalog_dir: pulumi.Input[str]
    """Your own InferenceClasses: a directory of catalog YAML files, or one file."""
    secrets: pulumi.Input[dict[str, pulumi.Input[str]]]
    """Secret values the settings name by key (kubeconfigSecret, tokenSecret, apiKey.secret), plain or
    Outputs (the kubeconfig of a cluster your program creates); default: the stack's secret config."""
    previous: pulumi.Input[list[Placement]]
    """Where replicas ran before; default: this stack's own placements output, so placements stay sticky."""


_SETTINGS = ("clusters", "deployments", "services", "providers", "dns", "production", "repack", "unprotect")


def _plain(value):
    """An entry as stack file data: models dumped by alias, enum members as their values, and
    `class_` (a keyword's Python spelling) as `class`."""
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_unset=True, mode="json")
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {(k[:-1] if k.endswith("_") and keyword.iskeyword(k[:-1]) else k): _plain(v) for k, v in value.items()}
    if isinstance(value, float) and value.is_integer():
        return int(value)       # other Pulumi languages send every number as a double
    return value


def _value(ref: pulumi.StackReference, output: str) -> pulumi.Output:
    """A stack output as known data, None when the stack has no such output yet (a first run)."""
    async def read():
        details = await ref.get_output_details(output)
        return details.value if details.value is not None else details.secret_value
    return pulumi.Output.from_input(read())


def _stack_name(name: str) -> str:
    return name if name.count("/") == 2 else f"{pulumi.get_organization()}/{pulumi.get_project()}/{name}"


class Fleet(pulumi.ComponentResource):
    """One scheduling run: clusters, placements and the workloads, services and DNS they imply."""

    inventory: pulumi.Output[list[Any]]
    """The clusters this fleet built: pools, GPUs, device classes, queues (plain data)."""
    kubeconfigs: pulumi.Output[dict[str, str]]
    """Kubeconfig of every cluster this fleet built or adopted, by cluster name (secret)."""
    gateways: pulumi.Output[dict[str, Any]]
    """The inference Gateway's address per cluster this fleet built, once provisioned."""
    placements: pulumi.Output[list[Placement]]
    """Where every replica runs: deployment, replica, cluster and pool per role."""
    unplaced: pulumi.Output[list[UnplacedReplica]]
    """Replicas that found no room, with every reason."""
    endpoints: pulumi.Output[dict[str, ServiceEndpoint]]
    """Per service (`namespace/name`): its hostname and the clusters whose gateways carry it."""

    def __init__(self, name: str, args: FleetArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("modelplane:index:Fleet", name, None, opts)
        settings: dict[str, Any] = dict(args or {})
        catalog_dir = settings.get("catalog_dir")
        # the package's classes, the project's catalog/, then catalog_dir (relative to the project)
        catalog = catalog_of({"catalogDir": catalog_dir} if catalog_dir else {})
        secrets = settings.get("secrets")
        given: dict[str, Any] = secrets if isinstance(secrets, dict) else {}
        spec = self.spec = _spec(name, settings, given, catalog)
        stacks = list(settings.get("stacks") or [])
        refs = [pulumi.StackReference(_stack_name(s), opts=pulumi.ResourceOptions(parent=self)) for s in stacks]
        previous = settings.get("previous")
        if previous is None and not spec.repack:
            own = pulumi.StackReference(_stack_name(pulumi.get_stack()), opts=pulumi.ResourceOptions(parent=self))
            previous = _value(own, "placements")

        def secret(key: str) -> pulumi.Output:
            if key in given:
                return pulumi.Output.secret(pulumi.Output.from_input(given[key]))
            return pulumi.Config(NAMESPACE).require_secret(key)

        def build(values) -> dict:
            *inventories, before = values
            keys = [key_of(STACK_REFERENCE, ref._name) for ref in refs]
            remote = [Remote(s, key, inv or []) for s, key, inv in zip(stacks, keys, inventories)]
            prior = [] if spec.repack else [scheduler.Placement.from_json(p) for p in (before or [])]
            self.built = assemble(spec, catalog, f"Fleet {name}", remote, prior, fleet_key="stacks")
            made = materialize(self.built.graph, dict(zip(keys, refs)), parent=self, secret=secret)
            return _outputs(self.built, made.value(self.built.outputs))

        # Stack references and the previous placements are known at preview (they are read from
        # state), so the resources below are registered during preview as well as update.
        done = pulumi.Output.all(*[_value(r, "inventory") for r in refs], previous).apply(build)
        self.inventory = done.apply(lambda o: o["inventory"])
        self.kubeconfigs = pulumi.Output.secret(done.apply(lambda o: o["kubeconfigs"]))
        self.gateways = done.apply(lambda o: o["gateways"])
        self.placements = done.apply(lambda o: o["placements"])
        self.unplaced = done.apply(lambda o: o["unplaced"])
        self.endpoints = done.apply(lambda o: o["endpoints"])
        self.register_outputs({"inventory": self.inventory, "kubeconfigs": self.kubeconfigs,
                               "gateways": self.gateways, "placements": self.placements,
                               "unplaced": self.unplaced, "endpoints": self.endpoints})


def _spec(name: str, args: dict, secrets: dict, catalog):
    """The args checked exactly like a stack file's settings (errors name `Fleet <name>`)."""
    from ..engine.program import config_values

    config = {f"{NAMESPACE}:{k}": _plain(args[k]) for k in _SETTINGS if args.get(k) is not None}
    # Secrets the settings name (kubeconfigSecret, tokenSecret, apiKey.secret): the `secrets`
    # argument, else the stack's modelplane: secret config keys, as in the config-driven program.
    config.update({k: v for k, v in config_values().items() if k.startswith(f"{NAMESPACE}:")
                   and isinstance(v, dict) and set(v) == {"secure"}})
    config.update({f"{NAMESPACE}:{key}": {"secure": "<secret>"} for key in secrets})
    return parse_stack_config(config, Source(f"Fleet {name}", None), catalog)


def _outputs(built: Built, outputs: dict) -> dict:
    routes, spec = built.result.routes, built.result.spec
    endpoints = {s.key: {"hostname": s.hostname, "clusters": sorted(routes[s.key].clusters)} for s in spec.services}
    return {**outputs, "endpoints": endpoints}

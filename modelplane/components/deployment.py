"""ModelDeployment: registers each placed replica's rendered objects on its target cluster; and
ModelNamespace: the ServiceAccount (and token Secret) model pods use in a team namespace, and the
ReferenceGrants that let services of other namespaces route to it."""
from __future__ import annotations

import pulumi

from ..api import ModelDeployment as DeploymentSpec
from ..api.deployment import GPU_ROLES
from ..render import model_identity, render_replica
from ..render.names import ROLE
from ..render.order import rank, role_edges, scale_change
from .k8s import register


class Target:
    """What a deployment needs of a cluster: its inventory, provider and substrate (None for a
    cluster of another stack, whose substrate that stack owns)."""

    def __init__(self, inventory: dict, provider: pulumi.ProviderResource, installed=None):
        self.inventory, self.provider, self.installed = inventory, provider, installed

    def ready_in(self, namespace: str) -> list:
        """What objects in `namespace` wait for: the substrate's sinks, the namespace and its queue."""
        return self.installed.ready_in(namespace) if self.installed is not None else []


class ModelNamespace(pulumi.ComponentResource):
    """Per cluster and team namespace: the model ServiceAccount and, if needed, the HF token Secret."""

    def __init__(self, cluster: str, namespace: str, token_key: str | None, target: Target,
                 extra: list[dict] = (), opts: pulumi.ResourceOptions | None = None):
        super().__init__("modelplane:index:ModelNamespace", f"{cluster}-{namespace}", None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=target.provider, depends_on=target.ready_in(namespace))
        self.resources = [register(cluster, obj, child) for obj in [*model_identity(namespace, token_key), *extra]]
        self.register_outputs({})


class ModelDeployment(pulumi.ComponentResource):
    def __init__(self, spec: DeploymentSpec, placements: list, targets: dict[str, Target],
                 opts: pulumi.ResourceOptions | None = None, weights_gib: float = 0.0,
                 served_names: list[str] | None = None, namespaces: dict[str, ModelNamespace] | None = None,
                 progress: dict | None = None, previous: dict | None = None):
        """`previous`: replica -> its previous placement (InPlace size changes follow the scale order)."""
        super().__init__("modelplane:index:ModelDeployment", f"{spec.namespace}-{spec.name}", None, opts)
        self.resources = []
        deps = {r.name: r.depends_on for r in spec.roles}
        for placement in placements:
            edges = role_edges(spec.role_names(), deps, *scale_change(spec, placement, (previous or {}).get(
                placement.replica)))
            ranks = rank(edges)
            target = targets[placement.cluster]
            ns = (namespaces or {}).get(placement.cluster)
            base = pulumi.ResourceOptions(parent=self, provider=target.provider,
                                          depends_on=[*target.ready_in(spec.namespace), *([ns] if ns else [])])
            by_role: dict[str, list] = {}
            # Extra roles start after the roles they depend on: registration order follows a
            # topological order, and each role's objects depend on its dependencies' objects.
            objs = render_replica(spec, placement, target.inventory, weights_gib, served_names)
            # Adopted objects are imported (ID namespace/name) by the first `up` instead of created.
            adopted = {(a.kind, a.name) for a in spec.adopted(placement.replica, placement.cluster).values()}
            for obj in sorted(objs, key=lambda o: ranks.get(_role(o), 0)):
                role = _role(obj)
                needs = [res for dep in sorted(edges.get(role, ())) for res in by_role.get(dep, [])]
                opts_ = pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=needs)) if needs else base
                if (obj["kind"], obj["metadata"]["name"]) in adopted:
                    opts_ = pulumi.ResourceOptions.merge(opts_, pulumi.ResourceOptions(
                        import_=f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"))
                res = register(placement.cluster, obj, opts_)
                # One LLMInferenceService runs every GPU role of the replica.
                provides = GPU_ROLES if obj["kind"] == "LLMInferenceService" else (role,)
                for r in provides:
                    by_role.setdefault(r, []).append(res)
                self.resources.append(res)
        # What the policy pack's stack rules read: the spec, where it landed and those clusters' facts.
        self.register_outputs({
            "spec": spec.model_dump(by_alias=True, exclude_none=True, mode="json"),
            "placements": [p.to_json() for p in placements],
            "clusters": {c: targets[c].inventory for c in sorted({p.cluster for p in placements})},
            "weightsGiB": weights_gib,
            "progress": progress or {},
        })


def _role(obj: dict) -> str | None:
    """The role an object belongs to; the LLMInferenceService runs decode (and prefill)."""
    return obj["metadata"]["labels"].get(ROLE) or ("decode" if obj["kind"] == "LLMInferenceService" else None)

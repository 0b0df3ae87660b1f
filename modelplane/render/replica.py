"""Everything one placed replica needs on its cluster, as plain Kubernetes dicts."""
from __future__ import annotations

from ..api.deployment import ExtraRole, ModelDeployment
from ..scheduler import Placement
from . import kai, keda, kserve, native
from .dra import claim_template
from .names import DEPLOYMENT, REPLICA, ROLE, labels, meta, replica_name
from .pod import GpuWiring, engine_container, env_list, pod_spec


class RenderError(ValueError):
    """A placement that cannot be rendered for its cluster (e.g. its KAI queue is missing)."""


def _check_queue(md: ModelDeployment, inv: dict) -> None:
    kai_facts = inv["kai"]
    if kai_facts["enabled"] and md.queue_name not in kai_facts["queues"]:
        raise RenderError(f"deployment {md.key} uses KAI queue {md.queue_name!r}, which cluster "
                          f"{inv['name']} does not have (queues: {', '.join(kai_facts['queues']) or 'none'}); "
                          f"add {{namespace: {md.queue_name}}} to that cluster's queues")


def _check_keda(md: ModelDeployment, inv: dict) -> None:
    if md.autoscaling and not inv.get("keda", {}).get("enabled"):
        raise RenderError(f"deployment {md.key} autoscales {', '.join(a.role for a in md.autoscaling)} with KEDA, "
                          f"which cluster {inv['name']} does not run; enable substrate.keda on that cluster")


def _autoscaled(workload: dict, auto, lbls: dict) -> list[dict]:
    """KEDA owns the replica count: leave it out of the workload so an update never resets it."""
    workload["spec"].pop("replicas", None)
    name = workload["metadata"]["name"]
    return [workload, keda.scaled_object(name, workload["metadata"]["namespace"], lbls, keda.target_of(workload), auto)]


def _extra_role(md: ModelDeployment, base: str, idx: int, role: ExtraRole) -> list[dict]:
    name = f"{base}-{role.name}"
    lbls = labels(md.name, idx, role.name)
    selector = {DEPLOYMENT: md.name, REPLICA: str(idx), ROLE: role.name}
    container = {"name": role.name, "image": role.image}
    if role.args:
        container["args"] = list(role.args)
    if role.env:
        container["env"] = env_list(role.env)
    container["ports"] = [{"name": "http", "containerPort": role.port, "protocol": "TCP"}]
    container["resources"] = {"requests": {"cpu": role.cpu, "memory": role.memory}}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name, md.namespace, lbls),
                  "spec": {"replicas": role.replicas, "selector": {"matchLabels": selector},
                           "template": {"metadata": {"labels": lbls}, "spec": {"containers": [container]}}}}
    auto = next((a for a in md.autoscaling if a.role == role.name), None)
    objs = _autoscaled(deployment, auto, lbls) if auto else [deployment]
    return [*objs, native.service(name, md.namespace, lbls, selector, role.port)]


def render_replica(md: ModelDeployment, placement: Placement, inv: dict) -> list[dict]:
    _check_queue(md, inv)
    _check_keda(md, inv)
    autos = {a.role: a for a in md.autoscaling}
    idx = placement.replica
    base = replica_name(md.name, idx)
    pools = {p["name"]: p for p in inv["pools"]}
    use_dra, use_kai = inv["dra"]["enabled"], inv["kai"]["enabled"]
    objects, workloads = [], {}
    gpu_roles = md.gpu_roles()
    if use_kai:
        # An autoscaled role's gang minimum is its minReplicas; the scheduler reserved room for its max.
        pods = kai.gang_pods({role: {"nodes": rp.nodes, "workers": rp.workers} for role, rp in placement.roles.items()},
                             {role: a.min_replicas for role, a in autos.items()})
        objects.append(kai.pod_group(base, md.namespace, labels(md.name, idx), md.queue_name, md.priority_class, pods))
    for role, rp in placement.roles.items():
        _, workers, engine = gpu_roles[role]
        topology = workers.topology
        device = pools[rp.pool]["device"]
        lbls = labels(md.name, idx, role, rp.pool)
        dra_here = use_dra and device["driver"] in inv["dra"]["deviceClasses"]
        template_name = f"{base}-{role}-gpus" if dra_here else None
        if template_name:
            objects.append(claim_template(template_name, md.namespace, lbls, device, rp.gpus_per_node))
        gpu = GpuWiring(rp.gpus_per_node, device["driver"], template_name)
        pod_labels, pod_annotations = kai.pod_metadata(base, md.queue_name, role) if use_kai else ({}, {})
        if md.backend == "kserve":
            pod = pod_spec(engine_container(engine, gpu, kserve.CONTAINER), gpu, rp.pool, use_kai)
            workloads[role] = kserve.workload(rp.workers, topology, pod, {**lbls, **pod_labels}, pod_annotations)
        else:
            args = native.engine_args(md.model.uri, md.served_name, topology, engine.port)
            pod = pod_spec(engine_container(engine, gpu, native.CONTAINER, args), gpu, rp.pool, use_kai)
            selector = {DEPLOYMENT: md.name, REPLICA: str(idx), ROLE: role}
            name = f"{base}-{role}"
            work = native.workload(name, md.namespace, lbls, selector, rp.workers, topology.nodes_per_worker,
                                   pod_labels, pod_annotations, pod)
            objects += _autoscaled(work, autos[role], lbls) if role in autos else [work]
            objects.append(native.service(name, md.namespace, lbls, selector, engine.port))
    if md.backend == "kserve":
        objects.append(kserve.llm_inference_service(meta(base, md.namespace, labels(md.name, idx)), md.model.uri,
                                                    md.served_name, workloads["decode"], workloads.get("prefill")))
    for role in md.roles:
        objects += _extra_role(md, base, idx, role)
    return objects

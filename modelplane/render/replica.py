"""Everything one placed replica needs on its cluster, as plain Kubernetes dicts."""
from __future__ import annotations

from ..api.deployment import ExtraRole, ModelDeployment, Topology
from ..api.fabric import carries
from ..api.rules import kserve_autoscaling
from ..scheduler import Placement
from ..scheduler.bindings import resolve
from ..scheduler.model import TOPOLOGY_AXES
from . import kai, keda, kserve, native, picker, presets
from .dra import CHANNEL_DEVICE_CLASS, claim_template, compute_domain, nic_claim_template
from .names import DEPLOYMENT, REPLICA, ROLE, await_ready, labels, meta, replica_name, workload_name
from .pod import GpuWiring, container, env_list, pod_spec, sourcing, token_env
from .pod import pod_annotations as wiring_annotations


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


def _check_pipeline_preset(md: ModelDeployment, inv: dict) -> None:
    """KServe finds the pipeline-parallel presets by name; only our KServe substrate installs them."""
    pipelined = md.backend == "kserve" and any(w.topology.pipeline > 1 for _, w, _ in md.gpu_roles().values())
    if pipelined and not inv.get("kserve", {}).get("enabled", True):
        names = (presets.DECODE_NAME, presets.PREFILL_NAME) if md.disaggregated else (presets.NAME,)
        raise RenderError(f"deployment {md.key} runs pipeline parallelism on the kserve backend, which needs the "
                          f"LLMInferenceServiceConfig {' / '.join(names)}; cluster {inv['name']} brings its own "
                          "KServe (substrate.kserve: false), so modelplane does not install it there: apply "
                          "modelplane.render.presets.all_presets('kserve') on that cluster, or use backend: native")


def _autoscaled(workload: dict, auto, lbls: dict, reserved: int | None = None) -> list[dict]:
    """KEDA owns the replica count: leave it out of the workload so an update never resets it.
    `reserved`: the workers the plan holds nodes for (a GPU role's envelope may have shrunk)."""
    workload["spec"].pop("replicas", None)
    name = workload["metadata"]["name"]
    return [workload, keda.scaled_object(name, workload["metadata"]["namespace"], lbls, keda.target_of(workload), auto,
                                         reserved)]


def _extra_role(md: ModelDeployment, base: str, idx: int, role: ExtraRole, replicas: int | None = None,
                name: str | None = None) -> list[dict]:
    """`name`: the Deployment's name (an adopted one keeps its own); the Service keeps ours."""
    service = f"{base}-{role.name}"
    name = name or service
    lbls = labels(md.name, idx, role.name)
    selector = {DEPLOYMENT: md.name, REPLICA: str(idx), ROLE: role.name}
    main = {"name": role.name, "image": role.image}
    if role.args:
        main["args"] = list(role.args)
    if role.env:
        main["env"] = env_list(role.env)
    main["ports"] = [{"name": "http", "containerPort": role.port, "protocol": "TCP"}]
    main["resources"] = {"requests": {"cpu": role.cpu, "memory": role.memory}}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": meta(name, md.namespace, lbls, await_ready("Deployment", md.await_seconds)),
                  "spec": {"replicas": role.replicas if replicas is None else replicas,
                           "selector": {"matchLabels": selector},
                           "template": {"metadata": {"labels": lbls}, "spec": {"containers": [main]}}}}
    auto = next((a for a in md.autoscaling if a.role == role.name), None)
    objs = _autoscaled(deployment, auto, lbls) if auto else [deployment]
    return [*objs, native.service(service, md.namespace, lbls, selector, role.port)]


def wiring(md: ModelDeployment, inv: dict, pool: dict, idx: int, role: str, gpus_per_node: int,
           nodes_per_worker: int, slot: int = 0) -> tuple[GpuWiring, list[dict]]:
    """How the role's pods get GPUs (DRA claim or device plugin) and, where the role needs the
    pool's fabric (api.fabric.carries: multi-node workers; disaggregated replicas on RDMA), its
    NICs; plus the claim templates this needs."""
    device, fabric = pool["device"], pool.get("fabric", {})
    base = replica_name(md.name, idx, slot)
    lbls = labels(md.name, idx, role, pool["name"])
    objects = []
    gpu_claim = nic_claim = None
    if inv["dra"]["enabled"] and device["driver"] in inv["dra"]["deviceClasses"]:
        gpu_claim = f"{base}-{role}-gpus"
        objects.append(claim_template(gpu_claim, md.namespace, lbls, device, gpus_per_node))
    needs_fabric = carries(fabric, nodes_per_worker > 1, md.disaggregated)
    efa, gpudirect = 0, None
    if needs_fabric and fabric.get("nicDeviceClass"):
        nic_claim = f"{base}-{role}-nics"
        objects.append(nic_claim_template(nic_claim, md.namespace, lbls, fabric["nicDeviceClass"]))
    if needs_fabric:
        efa = int(fabric.get("efaInterfaces", 0))
        gpudirect = fabric.get("gpudirect")
    channel, caps = None, pool.get("capabilities", {})
    if nodes_per_worker > 1 and caps.get("interconnect", {}).get("nvlinkDomain"):
        # A multi-node worker inside one NVLink domain shares GPU memory through an IMEX channel.
        if CHANNEL_DEVICE_CLASS not in inv["dra"]["deviceClasses"]:
            raise RenderError(f"deployment {md.key}: {role} spans {nodes_per_worker} nodes of pool {pool['name']} on "
                              f"cluster {inv['name']}, one NVLink domain, whose pods need an IMEX channel of a DRA "
                              f"ComputeDomain; the cluster has no {CHANNEL_DEVICE_CLASS} device class: set dra: true "
                              "with the substrate's draDriver (modelplane turns its ComputeDomain part on), or list "
                              "the class in existing.deviceClasses if your own NVIDIA DRA driver provides it")
        channel = f"{base}-{role}-imex"
        objects.append(compute_domain(f"{base}-{role}-nvlink", md.namespace, lbls, channel))
    arm64 = caps.get("arch") == "arm64"
    # NCCL's net plugin matters only between nodes: single-node pods (NIXL's KV transfer) are not pinned.
    plugin = fabric.get("netPlugin") if nodes_per_worker > 1 else None
    return GpuWiring(gpus_per_node, device["driver"], gpu_claim, nic_claim, efa, gpudirect, channel, arm64,
                     plugin), objects


def _kserve_env(md: ModelDeployment, engine, gpu: GpuWiring) -> list[dict]:
    env = env_list(engine.env)
    if md.disaggregated:   # NIXL's side channel listens on the pod IP (KServe's P/D samples)
        env.append({"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    if gpu.nic_claim_template:   # the presets find the RoCE HCAs and set NCCL_IB_HCA / UCX_NET_DEVICES
        env.append({"name": "KSERVE_INFER_ROCE", "value": "true"})
    return env


def render_cluster_entry(md: ModelDeployment, inv: dict) -> list[dict]:
    """What every replica of a deployment on one cluster shares, so requests spread over all of them
    by readiness and load: KServe's shared InferencePool and its endpoint picker (render/picker.py);
    on the native backend one Service over the serving pods of every replica there. A cluster
    without a Gateway gets none: nothing routes to it (KServe keeps a picker per replica there)."""
    if inv.get("gateway") is None:
        return []
    if picker.runs_picker(md.backend, inv["gateway"]):
        return picker.picker_objects(md.name, md.namespace, md.disaggregated,
                                     inv.get("kserve", {}).get("endpointPicker", picker.EPP_IMAGE))
    _, workers, engine = md.gpu_roles()["decode"]
    selector = {DEPLOYMENT: md.name, ROLE: "decode"}
    return [native.service(native.shared_service(md.name), md.namespace, labels(md.name), selector, engine.port,
                           leader_only=workers.topology.nodes_per_worker > 1)]


def render_replica(md: ModelDeployment, placement: Placement, inv: dict, weights_gib: float = 0.0,
                   served_names: list[str] | None = None) -> list[dict]:
    """`served_names`: model names the engine answers to (its own first, then service aliases)."""
    _check_queue(md, inv)
    _check_keda(md, inv)
    _check_pipeline_preset(md, inv)
    served = served_names or [md.served_name]
    autos = {a.role: a for a in md.autoscaling}
    idx = placement.replica
    # Objects a surged replica needs beside its old self (PodGroup, claim templates, workloads) take
    # its name slot; Services keep the slot-0 name and select the pods of both by label.
    base = replica_name(md.name, idx, placement.slot)
    stable = replica_name(md.name, idx)
    pools = {p["name"]: p for p in inv["pools"]}
    use_kai = inv["kai"]["enabled"]
    objects, workloads = [], {}
    gpu_roles = md.gpu_roles()
    if use_kai:
        # An autoscaled role's gang minimum is its minReplicas; the scheduler reserved room for its max.
        pods = kai.gang_pods({role: {"nodes": rp.nodes, "workers": rp.workers} for role, rp in placement.roles.items()},
                             {role: a.min_replicas for role, a in autos.items()})
        objects.append(kai.pod_group(base, md.namespace, labels(md.name, idx), md.queue_name, md.priority_class, pods))
    for role, rp in placement.roles.items():
        _, workers, engine = gpu_roles[role]
        topology = recorded(rp) or workers.topology     # a replica kept at its recorded shape runs that
        gpu, claims = wiring(md, inv, pools[rp.pool], idx, role, rp.gpus_per_node, topology.nodes_per_worker,
                             placement.slot)
        objects += claims
        lbls = labels(md.name, idx, role, rp.pool)
        pod_labels, pod_annotations = kai.pod_metadata(base, md.queue_name, role) if use_kai else ({}, {})
        pod_annotations = {**pod_annotations, **wiring_annotations(gpu)}
        if md.backend == "kserve":
            args = kserve.quote_args(engine.args)
            if len(served) > 1:   # the presets serve model.name; later flags win, so list them all
                args += kserve.quote_args(["--served-model-name", *served,
                                           f"publishers/{md.namespace}/models/{served[0]}"])
            # On a GPUDirect or net-plugin pool, an image that can load the plugin (the presets' cannot load
            # TCPXO's, nor carry EFA's)
            image = engine.image or (gpu.gpudirect or gpu.net_plugin or {}).get("kserveImage")
            main = container(kserve.CONTAINER, image, gpu, weights_gib, args=args, env=_kserve_env(md, engine, gpu),
                             capabilities=presets.WORKER_CAPABILITIES)
            pod = pod_spec(main, gpu, rp.pool, use_kai)
            workloads[role] = kserve.workload(rp.workers, topology, pod, {**lbls, **pod_labels}, pod_annotations)
            if role in autos:   # the loader refuses this; a program that skips it must not get spec.scaling
                refused = kserve_autoscaling(md, autos[role], md.autoscaling.index(autos[role]))
                raise RenderError(f"deployment {md.key}: {refused.message} (fix: {refused.fix})")
            continue
        args = native.engine_args(md.model.uri, served, topology, engine.port) + list(engine.args)
        env = env_list(engine.env) + ([token_env()] if md.model.token_secret else [])
        selector = {DEPLOYMENT: md.name, REPLICA: str(idx), ROLE: role}
        name = f"{stable}-{role}"
        work_name = workload_name(md, idx, placement.cluster, role)
        if topology.nodes_per_worker > 1:
            lead_cmd, work_cmd = (native.ray_commands(args) if native.uses_ray(topology) else
                                  native.data_parallel_commands(args, topology.data_local))
            lead_cmd, work_cmd = sourcing(lead_cmd, gpu), sourcing(work_cmd, gpu)
            leader = pod_spec(container(native.CONTAINER, engine.image, gpu, weights_gib, command=lead_cmd, env=env,
                                        port=engine.port, health_path=engine.health_path), gpu, rp.pool, use_kai)
            worker = pod_spec(container(native.CONTAINER, engine.image, gpu, weights_gib, command=work_cmd, env=env),
                              gpu, rp.pool, use_kai)
            work = native.leader_worker_set(work_name, md.namespace, lbls, rp.workers, topology.nodes_per_worker,
                                            pod_labels, pod_annotations, leader, worker, md.await_seconds)
        else:
            main = container(native.CONTAINER, engine.image, gpu, weights_gib, args=args, env=env, port=engine.port,
                             health_path=engine.health_path)
            work = native.deployment(work_name, md.namespace, lbls, selector, rp.workers, pod_labels, pod_annotations,
                                     pod_spec(main, gpu, rp.pool, use_kai), md.await_seconds)
        objects += _autoscaled(work, autos[role], lbls, rp.workers) if role in autos else [work]
        objects.append(native.service(name, md.namespace, lbls, selector, engine.port,
                                      leader_only=topology.nodes_per_worker > 1))
    if md.backend == "kserve":
        objects.append(kserve.llm_inference_service(meta(workload_name(md, idx, placement.cluster), md.namespace,
                                                         labels(md.name, idx), await_ready("LLMInferenceService", md.await_seconds)),
                                                    md.model.uri,
                                                    served[0], workloads["decode"], workloads.get("prefill"),
                                                    inv.get("gateway"), picker.pool_name(md.name)))
    # InPlace: bound extra roles follow the decode workers this replica was placed with.
    bound = resolve(md.scaling.binding_map(), placement.roles["decode"].workers) if md.in_place else {}
    for role in md.roles:
        objects += _extra_role(md, stable, idx, role, bound.get(role.name),
                               workload_name(md, idx, placement.cluster, role.name))
    return objects


def recorded(rp) -> Topology | None:
    """The worker topology a placed role was created with, when the placement records it."""
    if not rp.topology:
        return None
    return Topology.model_validate({**dict(zip(TOPOLOGY_AXES, rp.topology)), "expert": rp.topology[4:] == (1,)})

"""Stack policies on what makes a placed replica serve on a real cluster: the fabric its pods
rely on is wired, its backend can run it, its capacity outlives it, its queue has the quota."""
from __future__ import annotations

import json

from ..api.deployment import ModelDeployment
from ..api.fabric import EFA_RESOURCE, all2all_refusal, carries, image_refusal
from ..api.parallelism import check_engine_args
from ..api.rules import check_engines
from ..render.dra import NIC_CLAIM_NAME
from ..render.gpudirect import DAEMON, INTERFACES_ANNOTATION
from ..render.presets import IMAGE as KSERVE_PRESET_IMAGE
from ..render.names import DEPLOYMENT, REPLICA, ROLE
from ..engine.fleet import idle_prefill
from ..scheduler.model import MULTI_NODE_FABRICS
from .registry import ADVISORY, policy
from .stackview import of_type
from .resource import pod_templates
from .stack import _key, _spec_findings, deployments, inventories, pools_of, replicas


def _pods_by_replica(resources) -> dict[tuple, dict[str, list[dict]]]:
    """(namespace, deployment, replica) -> role -> (pod metadata, pod spec) (LLMInferenceService:
    spec is decode, spec.prefill prefill); one pass over the resources."""
    out: dict[tuple, dict[str, list[dict]]] = {}
    for r in resources:
        if not r.resource_type.startswith("kubernetes:"):
            continue
        meta = r.props.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get(DEPLOYMENT) is None or labels.get(REPLICA) is None:
            continue
        roles = out.setdefault((meta.get("namespace"), labels.get(DEPLOYMENT), labels.get(REPLICA)), {})
        for where, pod_meta, pod in pod_templates(r.props):
            role = labels.get(ROLE) or ("prefill" if where.startswith("spec.prefill") else "decode")
            roles.setdefault(role, []).append((pod_meta, pod))
    return out


def _gpudirect_missing(pod_meta: dict, pod: dict, gpudirect: dict) -> str | None:
    """What a pod of a multi-node worker on a GPUDirect pool lacks: every GPU network and the daemon
    the plugin talks to, NCCL pinned to the plugin (else a plugin that fails to load leaves NCCL on
    TCP with no error), an engine image that can load it."""
    try:
        interfaces = json.loads((pod_meta.get("annotations") or {}).get(INTERFACES_ANNOTATION, "[]"))
    except ValueError:
        interfaces = []
    names = {c.get("name") for c in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]}
    if len(interfaces) != gpudirect["nics"] + 1 or DAEMON[gpudirect["kind"]] not in names:
        return f"the GPU networks and the {DAEMON[gpudirect['kind']]} sidecar"
    for c in pod.get("containers") or []:
        why = _unpinned(c, _env(c), gpudirect, "loads")
        if why:
            return why
    return None


def _env(c: dict) -> dict:
    return {e.get("name"): e.get("value") for e in c.get("env") or []}


def _unpinned(c: dict, env: dict, facts: dict, verb: str) -> str | None:
    """A container not pinned to the fabric's NCCL net, or whose image is known to lack its plugin
    (no image: KServe's presets choose theirs)."""
    if env.get("NCCL_NET") != facts["ncclNet"]:
        return f"NCCL_NET={facts['ncclNet']} in container {c.get('name')} (NCCL would fall back to TCP silently)"
    why = image_refusal(facts, c.get("image") or KSERVE_PRESET_IMAGE)
    return f"an engine image that {verb} the plugin ({why})" if why else None


def _plugin_missing(pod: dict, plugin: dict) -> str | None:
    """What a multi-node pod on a pool with an NCCL net plugin (EFA's aws-ofi-nccl) lacks: NCCL pinned
    to it, and an image not known to lack it."""
    for c in pod.get("containers") or []:
        env = _env(c)
        why = _unpinned(c, env, plugin, "carries")
        if why:
            return why
        args = [str(a) for a in [*(c.get("command") or []), *(c.get("args") or [])]]
        backend = env.get("VLLM_ALL2ALL_BACKEND") or next(
            (a.split("--all2all-backend", 1)[1].lstrip("= ").split()[0] for a in args
             if "--all2all-backend" in a and a.split("--all2all-backend", 1)[1].lstrip("= ")), None)
        why = all2all_refusal(plugin, backend)
        if why:
            return f"vLLM's default all-to-all ({why})"
    return None


def _missing(pod_meta: dict, pod: dict, fabric: dict, multi_node: bool = False) -> str | None:
    if fabric.get("gpudirect"):
        return _gpudirect_missing(pod_meta, pod, fabric["gpudirect"])
    if multi_node and fabric.get("netPlugin"):
        why = _plugin_missing(pod, fabric["netPlugin"])
        if why:
            return why
    if fabric.get("nicDeviceClass"):
        if not any(c.get("name") == NIC_CLAIM_NAME for c in pod.get("resourceClaims") or []):
            return f"a claim on {fabric['nicDeviceClass']}"
    elif fabric.get("efaInterfaces"):
        if not all(EFA_RESOURCE in ((c.get("resources") or {}).get("limits") or {}) for c in pod.get("containers") or []):
            return f"{EFA_RESOURCE}: {fabric.get('efaInterfaces')}"
    return None


@policy("fabric-wired", "Multi-node and disaggregated replicas rely only on fabrics their pools wire: a multi-node "
        "worker never on a pool whose GPUDirect/RDMA/EFA fabric is not built, and pods on a wired pool claim its "
        "NICs (GKE DRANET), request its EFA interfaces or, for multi-node workers on GPUDirect-TCPX(O), attach its "
        "networks and daemon; multi-node workers on GPUDirect, EFA or GKE RoCE pools pin NCCL_NET to the fabric's "
        "plugin, run an image that can load it and no all-to-all backend refused there.", "stack",
        fix="place multi-node or disaggregated workers on a pool whose class's fabric modelplane wires "
            "(nodeSelector), or make each worker fit one node (workers.topology)")
def fabric_wired(resources, config=None):
    out, index = [], None
    for r, spec, p, inv in replicas(resources):
        pools = pools_of(inv)
        disaggregated = spec.get("prefill") is not None
        for role, rp in p["roles"].items():
            fabric = (pools.get(rp["pool"]) or {}).get("fabric") or {}
            multi_node = int(rp["nodes"]) > int(rp["workers"])
            if not fabric or not carries(fabric, multi_node, disaggregated):
                continue
            where = f"{_key(spec)} replica {int(p['replica'])} {role} on {p['cluster']}/{rp['pool']}"
            if multi_node and fabric.get("effective") not in MULTI_NODE_FABRICS:
                why = f" ({fabric['note']})" if fabric.get("note") else ""
                out.append((f"{where}: a multi-node worker relies on {fabric.get('declared')}, which this pool does "
                            f"not wire{why}", r.urn))
                continue
            if fabric.get("effective") not in MULTI_NODE_FABRICS:
                continue
            index = _pods_by_replica(resources) if index is None else index
            pods = index.get((spec["namespace"], spec["name"], str(int(p["replica"]))), {})
            missing = [why for pod_meta, pod in pods.get(role, []) if (why := _missing(pod_meta, pod, fabric, multi_node))]
            if missing:
                out.append((f"{where}: {len(missing)} pod template(s) lack {missing[0]}, so the {fabric['effective']} "
                            "fabric carries none of its traffic", r.urn))
    return out


@policy("engines", "Each backend can run what it is given: KServe's presets need a non-root image and run "
        "pipeline parallelism only through modelplane's presets, with data 1; the native backend needs an image; "
        "engine.args set no parallel size or expert parallelism other than the topology's.", "stack",
        fix="on backend: kserve use a non-root vLLM image and pipeline parallelism only with data 1; on backend: "
            "native set engine.image; leave parallel sizes and expert parallelism to workers.topology, not engine.args")
def engines(resources, config=None):
    return _spec_findings(resources, lambda md: check_engines(md) + check_engine_args(md))


@policy("flex-start-serving", "Serving on flex-start capacity: flex-start VMs run for at most seven days, then GKE "
        "reclaims them and the replica restarts wherever capacity is.", "stack", level=ADVISORY,
        fix="accept a restart at least every 7 days, or move the deployment to on-demand, Spot or reserved pools "
            "(nodeSelector, clusterSelector)")
def flex_start_serving(resources, config=None):
    out = []
    for r, spec, p, inv in replicas(resources):
        pools = pools_of(inv)
        flex = sorted({rp["pool"] for rp in p["roles"].values()
                       if (pools.get(rp["pool"]) or {}).get("capacityType") == "flex-start"})
        if flex:
            where = ", ".join(f"{p['cluster']}/{name}" for name in flex)
            out.append((f"{_key(spec)} replica {int(p['replica'])} runs on flex-start pool(s) {where}: each node "
                        "lives at most 7 days", r.urn))
    return out


@policy("capacity-block-region", "Capacity Block pools are in a Region where EC2 is known to sell the instance type "
        "as Capacity Blocks (the class's capacityBlocks list, or an offering `modelplane prices refresh` recorded); "
        "elsewhere `up` may find no block to buy. Where EC2 sells the type only per UltraServer (P6e-GB200), the "
        "pool holds one UltraServer's nodes, else a block leaves paid nodes idle or cannot hold the pool.", "stack",
        level=ADVISORY,
        fix="use a Region the class's capacityBlocks lists (or that `modelplane prices refresh` found offering "
            "Capacity Blocks), or another capacity type for the pool; size an UltraServer pool's maxNodes to one "
            "UltraServer type's nodes")
def capacity_block_region(resources, config=None):
    out = []
    for name, inv in sorted(inventories(resources).items()):
        for pool in inv.get("pools", []):
            if pool.get("capacityBlockNote"):
                out.append((f"{name}/{pool['name']} ({pool['class']}, Capacity Block in {inv.get('region')}): "
                            f"{pool['capacityBlockNote']}", None))
    return out


@policy("native-prefill-idle", "Disaggregated replicas on the native backend: nothing routes requests to their "
        "prefill pods (no P/D-aware router in front of decode), so the prefill GPUs stay idle.", "stack",
        level=ADVISORY,
        fix="use backend: kserve (its endpoint picker sends each prompt to prefill first), or drop the prefill block")
def native_prefill_idle(resources, config=None):
    out = []
    for r, spec, placements, _ in deployments(resources):
        if spec.get("backend") != "native" or spec.get("prefill") is None:
            continue
        md = ModelDeployment.model_validate(spec, strict=False)   # the engine sends numbers as doubles
        out += [(f"{row['deployment']} replica {row['replica']} on {row['cluster']}/{row['pool']}: {row['gpus']} "
                 f"prefill GPUs get no traffic: {row['reason']} (fix: {row['fix']})", r.urn)
                for row in idle_prefill(md, placements)]
    return out


@policy("queue-quota", "GPUs placed in a KAI queue stay within its quota: the replicas are non-preemptible, and "
        "KAI gives non-preemptible workloads only in-quota GPUs.", "stack",
        fix="raise the namespace's gpuQuota in the cluster's queues, or place fewer GPUs in that namespace")
def queue_quota(resources, config=None):
    used: dict[tuple[str, str], int] = {}
    quota: dict[tuple[str, str], int] = {}
    for r, spec, placements, clusters in deployments(resources):
        queue = spec.get("queue") or spec["namespace"]
        for p in placements:
            inv = clusters.get(p["cluster"]) or {}
            limit = (inv.get("kai") or {}).get("quotas", {}).get(queue)
            if limit is None or int(limit) < 0:
                continue
            key = (p["cluster"], queue)
            quota[key] = int(limit)
            used[key] = used.get(key, 0) + sum(int(rp["nodes"]) * int(rp["gpusPerNode"]) for rp in p["roles"].values())
    # the leaf Queue where this stack creates it (a cluster of an infra stack has none here)
    queues = {(r.name.split("/", 1)[0], (r.props.get("metadata") or {}).get("name")): r.urn
              for r in of_type(resources, "kubernetes:scheduling.run.ai/v2:Queue")}
    return [(f"{QUOTA_SUBJECT.format(queue=q, cluster=c)}: {used[(c, q)]} GPUs placed, its quota is {quota[(c, q)]}",
             queues.get((c, q))) for c, q in sorted(used) if used[(c, q)] > quota[(c, q)]]


QUOTA_SUBJECT = "queue {queue} on {cluster}"


def quota_subject(message: str) -> tuple[str, str] | None:
    """(cluster, queue) a queue-quota verdict names: where origins.py points it (the queue's
    gpuQuota, in the file that declares the cluster: this stack's or an infra stack's)."""
    head, _, rest = message.partition(" on ")
    if not head.startswith("queue ") or ":" not in rest:
        return None
    return rest.split(":", 1)[0], head[len("queue "):]

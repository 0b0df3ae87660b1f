"""Resource policies: each looks at one resource's properties (engine camelCase names)."""
from __future__ import annotations

import re
from functools import lru_cache

from ..api import load_catalog
from ..api.rules import compact_placement
from ..api.cluster import GPU_TAINT, POOL_LABEL
from ..api.deployment import _SECRET_NAME
from ..render.names import GPU_RESOURCE, KAI_POD_GROUP_ANNOTATION, KAI_QUEUE_LABEL, KAI_SCHEDULER
from ..render.routing import rule_problems
from .direct import READING, DictProxy
from .registry import policy

NODE_POOL, NODE_GROUP = "gcp:container/nodePool:NodePool", "aws:eks/nodeGroup:NodeGroup"
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
DNS_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
HTTP_ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"


@lru_cache(maxsize=1)
def multi_node_machines() -> tuple[dict, frozenset]:
    """(GKE machine type -> its class's GKE recipe, EKS instance types with EFA), from the catalog:
    the recipes are the one source of these facts."""
    gke, eks = {}, set()
    for cls in load_catalog().classes.values():
        prov = cls.provisioning
        if prov and prov.gke:
            gke[prov.gke.machine_type] = prov.gke
        if prov and prov.eks and prov.eks.efa_interfaces:
            eks.add(prov.eks.instance_type)
    return gke, frozenset(eks)


def node_pool_capacity(props: dict) -> str:
    """A GKE NodePool's capacity type, read back from its inputs."""
    node = props.get("nodeConfig") or {}
    if node.get("spot"):
        return "spot"
    if node.get("flexStart"):
        return "flex-start"
    if (node.get("reservationAffinity") or {}).get("consumeReservationType") == "SPECIFIC_RESERVATION":
        return "reservation"
    return "on-demand"


def pod_templates(props: dict):
    """(where, metadata, pod spec) for every pod template in a Kubernetes object's props. Three
    policies ask in turn for the same resource's (policy/direct.py runs each resource's policies
    together): the templates of the last props the direct gate read whole are kept, so the others
    get them without reading again; what a policy reads of them it still reads itself."""
    if _LAST[0] is props and (props.__class__ is DictProxy or _LAST[2] is READING[0]):
        return iter(_LAST[1])
    return _kept(props)


_LAST: list = [None, (), None]  # (props, their templates, the reading they were kept in)


def _kept(props):
    out = []
    for template in _templates(props):
        out.append(template)
        yield template
    # the direct gate's proxies are read-only; a dict only while the gate reads it as given
    if props.__class__ is DictProxy or READING[0] is not None:
        _LAST[0], _LAST[1], _LAST[2] = props, out, READING[0]


def _templates(props):
    spec = props.get("spec") or {}
    kind = props.get("kind")
    if kind == "LLMInferenceService":
        for where, w in (("spec", spec), ("spec.prefill", spec.get("prefill"))):
            if not w:
                continue
            meta = {"labels": w.get("labels") or {}, "annotations": w.get("annotations") or {}}
            for part in ("template", "worker"):
                if w.get(part):
                    yield f"{where}.{part}", meta, w[part]
    elif kind in ("Deployment", "StatefulSet", "Job") and spec:    # a Patch of one writes no template
        t = spec.get("template") or {}
        yield "spec.template", t.get("metadata") or {}, t.get("spec") or {}
    elif kind == "LeaderWorkerSet":
        lwt = spec.get("leaderWorkerTemplate") or {}
        for part in ("leaderTemplate", "workerTemplate"):
            t = lwt.get(part)
            if t:
                yield f"spec.leaderWorkerTemplate.{part}", t.get("metadata") or {}, t.get("spec") or {}


def uses_gpus(pod: dict) -> bool:
    if pod.get("resourceClaims"):
        return True
    return any(set((c.get("resources") or {}).get("limits") or {}) & set(GPU_RESOURCE.values())
               for c in pod.get("containers") or [])


@policy("gpu-pool-taint-and-label", "GPU node pools carry the GPU taint and the modelplane pool label.", "resource",
        fix="let modelplane render the pool from the stack file's nodePools entry; keep the nvidia.com/gpu taint "
            "and the modelplane.ai/pool label it sets (no labels, taints or transformations that replace them)",
        types=(NODE_POOL, NODE_GROUP))
def gpu_pool_tainted_and_labelled(resource_type: str, props: dict, config=None) -> list[str]:
    if resource_type == NODE_POOL:
        node = props.get("nodeConfig") or {}
        if not node.get("guestAccelerators"):
            return []
        taints, labels = node.get("taints") or [], node.get("labels") or {}
    else:
        if "NVIDIA" not in str(props.get("amiType", "")):
            return []
        taints, labels = props.get("taints") or [], props.get("labels") or {}
    out = []
    if not any(t.get("key") == GPU_TAINT["key"] and t.get("effect") == "NO_SCHEDULE" for t in taints):
        out.append(f"GPU pool lacks the taint {GPU_TAINT['key']}={GPU_TAINT['value']}:NoSchedule")
    if POOL_LABEL not in labels:
        out.append(f"GPU pool lacks the node label {POOL_LABEL}")
    return out


@policy("node-pool-bounds", "Node pool autoscaling bounds are ordered (min <= desired <= max).", "resource",
        fix="set the pool's minNodes no higher than its maxNodes in the stack file", types=(NODE_POOL, NODE_GROUP))
def node_pool_bounds(resource_type: str, props: dict, config=None) -> list[str]:
    if resource_type == NODE_POOL:
        a = props.get("autoscaling") or {}
        lo, hi = a.get("minNodeCount"), a.get("maxNodeCount")
    else:
        s = props.get("scalingConfig") or {}
        lo, hi = s.get("minSize"), s.get("maxSize")
        if lo is not None and hi is not None and not lo <= s.get("desiredSize", lo) <= hi:
            return [f"desiredSize {int(s['desiredSize'])} is outside {int(lo)}..{int(hi)}"]
    if lo is not None and hi is not None and lo > hi:
        return [f"autoscaling minimum {int(lo)} is greater than maximum {int(hi)}"]
    return []


@policy("multi-node-placement", "Pools of multi-node GPU classes use compact placement (GKE on-demand and Spot; "
        "a reservation fixes placement itself) or EFA through a launch template (EKS).", "resource",
        fix="build the pool from its class's own recipe (compact placement on GKE, EFA through the launch template "
            "on EKS): on GKE use on-demand, Spot or a reservation, on EKS a class with efaInterfaces",
        types=(NODE_POOL, NODE_GROUP))
def multi_node_placement(resource_type: str, props: dict, config=None) -> list[str]:
    recipes, efa = multi_node_machines()
    if resource_type == NODE_POOL:
        machine = (props.get("nodeConfig") or {}).get("machineType", "")
        gke = recipes.get(machine)
        if gke and compact_placement(gke, node_pool_capacity(props)) and \
                (props.get("placementPolicy") or {}).get("type") != "COMPACT":
            return [f"{machine} pool has no COMPACT placement policy; its nodes may land far apart for a gang"]
    if resource_type == NODE_GROUP:
        types = [t for t in props.get("instanceTypes") or [] if t in efa]
        if types and not props.get("launchTemplate"):
            return [f"{types[0]} node group has no launch template, so no EFA interfaces are attached"]
    return []


@policy("kai-wiring", "Every GPU pod uses the KAI scheduler, a queue label and a pod-group annotation.", "resource",
        fix="serve GPU workloads through modelplane:deployments, or give your own GPU pods schedulerName: "
            "kai-scheduler, a kai.scheduler/queue label and the pod-group annotation", types=("kubernetes:",))
def kai_wired(resource_type: str, props: dict, config=None) -> list[str]:
    out = []
    for where, meta, pod in pod_templates(props):
        if not uses_gpus(pod):
            continue
        if pod.get("schedulerName") != KAI_SCHEDULER:
            out.append(f"{where} does not use schedulerName {KAI_SCHEDULER}")
        if KAI_QUEUE_LABEL not in (meta.get("labels") or {}):
            out.append(f"{where} lacks the label {KAI_QUEUE_LABEL}")
        if KAI_POD_GROUP_ANNOTATION not in (meta.get("annotations") or {}):
            out.append(f"{where} lacks the annotation {KAI_POD_GROUP_ANNOTATION}")
    return out


@policy("image-pinned", "Container images are pinned: a tag other than latest, or a digest where required.",
        "resource", config={"requireDigest": {"type": "boolean", "default": False}},
        fix="pin engine.image to a version tag other than latest (a digest, image@sha256:..., where the policy "
            "config sets requireDigest); an endpoint picker (<deployment>-epp): the cluster's "
            "substrate.endpointPicker.digest, or .registry/.image for a mirror")
def image_pinned(resource_type: str, props: dict, config=None) -> list[str]:
    need_digest = bool((config or {}).get("requireDigest", False))
    out = []
    for where, _, pod in pod_templates(props):
        for c in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            image = c.get("image")
            if image is None and props.get("kind") == "LLMInferenceService":
                continue    # the image of KServe's preset, pinned by the KServe release
            image = image or ""
            last = image.rsplit("/", 1)[-1]
            if need_digest and not DIGEST.search(image):
                out.append(f"{where} container {c.get('name')}: image {image} is not pinned by digest (@sha256:...)")
            elif "@" not in last and (":" not in last or last.endswith(":latest")):
                out.append(f"{where} container {c.get('name')}: image {image} is not pinned (no tag, or :latest)")
    return out


@policy("no-plain-secrets", "Secret-looking environment variables come from a secretKeyRef, not a plain value.",
        "resource",
        fix="keep the value in a secret config key (pulumi config set --secret) and read it with "
            "valueFrom.secretKeyRef in engine.env")
def no_plain_secrets(resource_type: str, props: dict, config=None) -> list[str]:
    return [f"{where} container {c.get('name')}: env {e['name']} has a plain value; use valueFrom.secretKeyRef"
            for where, _, pod in pod_templates(props) for c in pod.get("containers") or []
            for e in c.get("env") or [] if e.get("value") and _SECRET_NAME.search(e.get("name", ""))]


@policy("resource-names", "Kubernetes names and label values fit their limits.", "resource",
        fix="shorten the cluster, namespace or deployment name so the names derived from it stay within Kubernetes' "
            "limits (63 characters for labels)", types=("kubernetes:",))
def resource_names(resource_type: str, props: dict, config=None) -> list[str]:
    if "metadata" not in props:
        return []
    meta, out = props.get("metadata") or {}, []
    name, kind = meta.get("name", ""), props.get("kind", "")
    limit = 63 if kind in ("Service", "Namespace", "LeaderWorkerSet") else 253
    if len(name) > limit:
        out.append(f"{kind} name {name!r} is {len(name)} characters; the limit is {limit}")
    if name and not DNS_NAME.fullmatch(name):
        out.append(f"{kind} name {name!r} is not a lowercase DNS name")
    out += [f"label {k} value {v!r} is longer than 63 characters" for k, v in (meta.get("labels") or {}).items()
            if len(str(v)) > 63]
    return out


@policy("route-rules", "Every HTTPRoute rule is one Envoy Gateway + AI Gateway programs: at most one InferencePool "
        "per rule, and an InferencePool never shares its rule with other backends.", "resource",
        fix="give every InferencePool a rule of its own (the service's loopback hop does this); do not edit the "
            "rendered HTTPRoutes", types=(HTTP_ROUTE,))
def route_rules(resource_type: str, props: dict, config=None) -> list[str]:
    return rule_problems(props)

"""Renderers: schema-valid objects, KServe/native fields, DRA selectors that select the real device."""
import re

import celpy
import pytest
from celpy import celtypes

from modelplane.api import ModelDeployment
from modelplane.render import RenderError, render_replica
from modelplane.render.dra import selector
from modelplane.scheduler import Placement


def quantity_bytes(text: str) -> int:
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti)?", str(text))
    return int(m.group(1)) * {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[m.group(2)]


class Quantity(celtypes.IntType):
    """Enough of Kubernetes' CEL quantity() for selectors: compareTo on byte values."""


def cel_select(expression: str, device: dict) -> bool:
    env = celpy.Environment()
    functions = {"quantity": lambda s: Quantity(quantity_bytes(s)),
                 "compareTo": lambda a, b: celtypes.IntType((int(a) > int(b)) - (int(a) < int(b)))}
    program = env.program(env.compile(expression), functions=functions)
    doc = celpy.json_to_cel({"device": {"driver": device["driver"], "attributes": device["attributes"]}})
    doc["device"]["capacity"] = celtypes.MapType({celtypes.StringType(d): celtypes.MapType(
        {celtypes.StringType(k): Quantity(v) for k, v in caps.items()}) for d, caps in device["capacity"].items()})
    return bool(program.evaluate(doc))


def nvidia(product, arch, mib):
    return {"driver": "gpu.nvidia.com", "attributes": {"gpu.nvidia.com": {"type": "gpu", "productName": product,
            "architecture": arch, "cudaComputeCapability": "9.0.0"}},
            "capacity": {"gpu.nvidia.com": {"memory": mib * 2**20}}}


DEVICES = {
    "H200": nvidia("NVIDIA H200", "Hopper", 143771),
    "H100": nvidia("NVIDIA H100 80GB HBM3", "Hopper", 81559),
    "L4": nvidia("NVIDIA L4", "Ada Lovelace", 22491),
    "MI300X": {"driver": "gpu.amd.com", "attributes": {"gpu.amd.com": {"type": "amdgpu", "productName": "AMD Instinct MI300X"}},
               "capacity": {"gpu.amd.com": {"memory": 196592 * 2**20}}},
}
CLASS_FOR = {"H200": "gke-h200-8x-a3ultra", "H100": "gke-h100-8x-a3high", "L4": "gke-l4-1x-g2", "MI300X": "mi300x-8x"}


@pytest.mark.parametrize("gpu", sorted(DEVICES))
def test_dra_selector_selects_the_real_device_and_only_it(catalog, gpu):
    device_facts = catalog.classes[CLASS_FOR[gpu]].device.model_dump(by_alias=True)
    expr = selector(device_facts)
    assert cel_select(expr, DEVICES[gpu]), expr                         # the usable-memory GPU matches
    for other, dev in DEVICES.items():
        if other != gpu and dev["driver"] == device_facts["driver"]:
            assert not cel_select(expr, dev), (gpu, other)              # and no other GPU does
    assert "modelplane" not in expr and f'device.attributes["{device_facts["driver"]}"]' in expr


def test_nominal_memory_threshold_would_reject_the_real_h200():
    assert not cel_select('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("141Gi")) >= 0', DEVICES["H200"])


def inventory(catalog, dra=True, kai=True, pool_class="gke-h200-8x-a3ultra", queues=("ml",), classes=None):
    cls = catalog.classes[pool_class]
    classes = [cls.device.driver] if classes is None and dra else (classes or [])
    return {"name": "east", "dra": {"enabled": dra, "deviceClasses": classes}, "kai": {"enabled": kai, "queues": list(queues)},
            "pools": [{"name": "h200", "device": cls.device.model_dump(by_alias=True), "maxNodes": 8}]}


def md(**kw):
    base = {"name": "kimi", "namespace": "ml", "model": {"uri": "hf://moonshotai/Kimi-K2-Instruct"}, "replicas": 1,
            "engine": {"image": "vllm/vllm-openai:v0.10.2", "args": ["--max-model-len=131072", "--trust-remote-code"],
                       "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}]},
            "workers": {"count": 1, "topology": {"tensor": 8}}}
    base.update(kw)
    return ModelDeployment.model_validate(base)


def placement(spec, replica=0, pool="h200"):
    from modelplane.engine.fleet import demand_from
    roles = {r.name: {"pool": pool, "nodes": r.nodes, "gpusPerNode": r.gpus_per_node, "workers": r.workers}
             for r in demand_from(spec).roles}
    return Placement.from_json({"deployment": spec.key, "replica": replica, "cluster": "east", "roles": roles})


def by_kind(objs):
    out = {}
    for o in objs:
        out.setdefault(o["kind"], []).append(o)
    return out


def assert_valid(schema_catalog, objs):
    for o in objs:
        status, line = schema_catalog.report(o)
        assert status == "ok", line


def test_single_node_llmis(catalog, schema_catalog):
    spec = md()
    objs = render_replica(spec, placement(spec), inventory(catalog))
    assert_valid(schema_catalog, objs)
    kinds = by_kind(objs)
    llmis = kinds["LLMInferenceService"][0]["spec"]
    assert llmis["model"] == {"uri": "hf://moonshotai/Kimi-K2-Instruct", "name": "ml/kimi"}
    assert llmis["replicas"] == 1 and llmis["parallelism"] == {"tensor": 8}
    assert "worker" not in llmis and "prefill" not in llmis
    pod = llmis["template"]
    main = pod["containers"][0]
    assert main["args"] == ["--max-model-len=131072", "--trust-remote-code"]
    assert main["resources"]["claims"] == [{"name": "gpus"}] and "limits" not in main["resources"]   # DRA: no limit
    assert pod["resourceClaims"][0]["resourceClaimTemplateName"] == "kimi-0-decode-gpus"
    assert pod["schedulerName"] == "kai-scheduler" and pod["nodeSelector"] == {"modelplane.ai/pool": "h200"}
    assert pod["volumes"][0]["emptyDir"] == {"medium": "Memory", "sizeLimit": "32Gi"}
    assert main["env"][0]["valueFrom"]["secretKeyRef"] == {"name": "hf", "key": "token"}
    assert llmis["labels"]["kai.scheduler/queue"] == "ml" and llmis["annotations"] == {"pod-group-name": "kimi-0",
                                                                     "kai.scheduler/skip-podgrouper": "true"}
    claim = kinds["ResourceClaimTemplate"][0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert claim["count"] == 8 and claim["deviceClassName"] == "gpu.nvidia.com"
    assert kinds["PodGroup"][0]["spec"]["minMember"] == 1


def test_5p3d_gang_is_11_pods_and_multi_node_has_worker(catalog, schema_catalog):
    spec = md(workers={"count": 3, "topology": {"tensor": 8, "pipeline": 2}},
              prefill={"workers": {"count": 5, "topology": {"tensor": 1}},
                       "engine": {"image": "vllm/vllm-openai:v0.10.2", "args": ["--kv-role=producer"]}})
    objs = render_replica(spec, placement(spec), inventory(catalog))
    assert_valid(schema_catalog, objs)
    kinds = by_kind(objs)
    pg = kinds["PodGroup"][0]["spec"]
    assert pg["minMember"] == 11
    assert pg["subGroups"] == [{"name": "decode", "minMember": 6}, {"name": "prefill", "minMember": 5}]
    llmis = kinds["LLMInferenceService"][0]["spec"]
    assert llmis["replicas"] == 3 and llmis["parallelism"] == {"tensor": 8, "pipeline": 2} and "worker" in llmis
    assert llmis["prefill"]["replicas"] == 5 and "worker" not in llmis["prefill"]
    counts = sorted(t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] for t in kinds["ResourceClaimTemplate"])
    assert counts == [1, 8]
    # native backend: LWS for the multi-node role, Deployment for the single-node one
    native = by_kind(render_replica(spec.model_copy(update={"backend": "native"}), placement(spec), inventory(catalog)))
    assert_valid(schema_catalog, [o for objs in native.values() for o in objs])
    lws = native["LeaderWorkerSet"][0]["spec"]
    assert lws["replicas"] == 3 and lws["leaderWorkerTemplate"]["size"] == 2
    assert native["Deployment"][0]["spec"]["replicas"] == 5


def test_no_dra_cluster_uses_device_plugin_limits(catalog, schema_catalog):
    spec = md()
    objs = render_replica(spec, placement(spec), inventory(catalog, dra=False))
    assert_valid(schema_catalog, objs)
    assert "ResourceClaimTemplate" not in by_kind(objs)
    pod = by_kind(objs)["LLMInferenceService"][0]["spec"]["template"]
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 8}
    assert "resourceClaims" not in pod and pod["nodeSelector"] == {"modelplane.ai/pool": "h200"}


def test_amd_uses_its_driver_domain(catalog, schema_catalog):
    spec = md()
    objs = render_replica(spec, placement(spec), inventory(catalog, pool_class="mi300x-8x"))
    assert_valid(schema_catalog, objs)
    exactly = by_kind(objs)["ResourceClaimTemplate"][0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["deviceClassName"] == "gpu.amd.com" and 'device.attributes["gpu.amd.com"].type == "amdgpu"' in \
        exactly["selectors"][0]["cel"]["expression"]


def test_amd_on_a_cluster_without_its_dra_driver_uses_the_device_plugin(catalog, schema_catalog):
    spec = md()
    inv = inventory(catalog, pool_class="mi300x-8x", classes=["gpu.nvidia.com"])
    objs = render_replica(spec, placement(spec), inv)
    assert_valid(schema_catalog, objs)
    assert "ResourceClaimTemplate" not in by_kind(objs)
    pod = by_kind(objs)["LLMInferenceService"][0]["spec"]["template"]
    assert pod["containers"][0]["resources"]["limits"] == {"amd.com/gpu": 8} and "resourceClaims" not in pod


def test_missing_queue_refuses_to_render(catalog):
    from modelplane.render import RenderError
    spec = md()
    with pytest.raises(RenderError, match="does not have"):
        render_replica(spec, placement(spec), inventory(catalog, queues=("other",)))


def test_replicas_sharing_a_cluster_get_distinct_names(catalog):
    spec = md(replicas=2)
    names0 = {o["metadata"]["name"] for o in render_replica(spec, placement(spec, 0), inventory(catalog))}
    names1 = {o["metadata"]["name"] for o in render_replica(spec, placement(spec, 1), inventory(catalog))}
    assert not names0 & names1


@pytest.mark.parametrize("role", ["decode", "prefill"])
def test_n3_kserve_gpu_autoscaling_is_never_rendered_as_wva(catalog, role):
    """N3: spec.scaling.wva without WVA installed stops KServe reconciling the service (scaling.go
    @ v0.20.0); a program that skips the loader gets the loader's message, not an LLMISVC."""
    spec = md(prefill={"workers": {"count": 2, "topology": {"tensor": 8}}},
              autoscaling=[{"role": role, "minReplicas": 2, "maxReplicas": 5}])
    inv = inventory(catalog)
    inv["keda"] = {"enabled": True}
    with pytest.raises(RenderError, match="the substrate installs no WVA.*fix: use backend: native"):
        render_replica(spec, placement(spec), inv)


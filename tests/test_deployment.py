"""ModelDeployment under mocks: 5P3D on both backends, KEDA autoscaling, dependsOn as resource dependencies."""
import pytest
import yaml

from modelplane import offline
from modelplane.api import load_catalog, parse_stack_config
from modelplane.api.loader import Source
from modelplane.errors import InputError


@pytest.fixture(scope="module")
def run():
    return offline.run("example-5p3d")


def objects(run, kind):
    return {r.name.rsplit("/", 1)[-1]: r for r in run.records if r.type.endswith(f":{kind}")}


def test_5p3d_kserve_gang_is_eleven_pods_with_multi_node_decode(run):
    pg = objects(run, "PodGroup")["kimi-0"].inputs["spec"]
    assert pg["minMember"] == 11 and pg["subGroups"] == [{"name": "decode", "minMember": 6},
                                                         {"name": "prefill", "minMember": 5}]
    spec = objects(run, "LLMInferenceService")["kimi-0"].inputs["spec"]
    assert spec["replicas"] == 3 and spec["parallelism"]["tensor"] == 8 and spec["parallelism"]["pipeline"] == 2
    assert "worker" in spec and spec["prefill"]["replicas"] == 5 and "worker" not in spec["prefill"]
    assert spec["model"]["name"] == "ml/kimi"


def test_5p3d_native_uses_lws_for_decode_and_keda_for_prefill_and_router(run):
    lws = objects(run, "LeaderWorkerSet")["kimi-native-0-decode"].inputs["spec"]
    assert lws["replicas"] == 3 and lws["leaderWorkerTemplate"]["size"] == 2
    deployments = objects(run, "Deployment")
    assert "replicas" not in deployments["kimi-native-0-prefill"].inputs["spec"]    # KEDA owns it
    assert "replicas" not in deployments["kimi-native-0-router"].inputs["spec"]
    scaled = {n: r.inputs["spec"] for n, r in objects(run, "ScaledObject").items()}
    assert scaled["kimi-native-0-prefill"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                                                 "name": "kimi-native-0-prefill"}
    assert (scaled["kimi-native-0-prefill"]["minReplicaCount"], scaled["kimi-native-0-prefill"]["maxReplicaCount"]) == (5, 6)
    assert scaled["kimi-native-0-router"]["minReplicaCount"] == 0
    assert scaled["kimi-native-0-prefill"]["triggers"][0]["type"] == "prometheus"
    # The gang waits for the minimum; the scheduler reserved room for the maximum.
    assert objects(run, "PodGroup")["kimi-native-0"].inputs["spec"]["minMember"] == 11
    placed = next(p for p in run.result.plan.placements if p.deployment == "ml/kimi-native")
    assert placed.roles["prefill"].workers == 6


def test_depends_on_becomes_resource_dependencies(run):
    router = objects(run, "Deployment")["kimi-native-0-router"]
    workloads = {objects(run, "LeaderWorkerSet")["kimi-native-0-decode"].urn, objects(run, "Deployment")["kimi-native-0-prefill"].urn}
    assert workloads <= set(router.dependencies)
    assert not objects(run, "Deployment")["kimi-native-0-prefill"].dependencies or \
        router.urn not in objects(run, "Deployment")["kimi-native-0-prefill"].dependencies
    prod = offline.run("prod")
    router = next(r for r in prod.records if r.name.endswith("/deployment/deepseek-r1-0-router"))
    llmis = next(r for r in prod.records if r.name.endswith("/llminferenceservice/deepseek-r1-0"))
    assert llmis.urn in router.dependencies


def stack(deployment, substrate=None):
    cluster = {"name": "c", "existing": {"kubeconfigSecret": "kc"}, "nodePools": [{"name": "h", "class": "h200-8x", "maxNodes": 8}],
               "queues": [{"namespace": "ml"}], **({"substrate": substrate} if substrate else {})}
    base = {"name": "m", "namespace": "ml", "model": {"uri": "hf://org/m"}, "replicas": 1,
            "engine": {"image": "vllm/vllm-openai:v0.10.2"}, "workers": {"count": 1, "topology": {"tensor": 8}}}
    return {"modelplane:kc": {"secure": "x"}, "modelplane:clusters": [cluster], "modelplane:deployments": [{**base, **deployment}]}


@pytest.mark.parametrize("deployment,path,words", [
    ({"autoscaling": [{"role": "decode", "maxReplicas": 2, "query": "q", "threshold": "1"}]},
     "modelplane:deployments[0].autoscaling[0].role", "no scale subresource"),
    ({"backend": "native", "autoscaling": [{"role": "decode", "minReplicas": 0, "maxReplicas": 2, "query": "q", "threshold": "1"}]},
     "modelplane:deployments[0].autoscaling[0].minReplicas", "cannot scale to zero"),
    ({"backend": "native", "autoscaling": [{"role": "decoder", "maxReplicas": 2, "query": "q", "threshold": "1"}]},
     "modelplane:deployments[0].autoscaling[0].role", "unknown role 'decoder'"),
])
def test_autoscaling_errors(deployment, path, words):
    with pytest.raises(InputError) as err:
        parse_stack_config(stack(deployment), Source("stacks/Pulumi.t.yaml", None), load_catalog())
    assert any(p.path == path and words in p.message for p in err.value.problems), err.value.render()


def test_autoscaling_on_a_cluster_without_keda_is_refused(tmp_path):
    doc = stack({"backend": "native", "autoscaling": [{"role": "decode", "maxReplicas": 2, "query": "q", "threshold": "1"}]},
                substrate={"keda": False})
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(yaml.safe_dump({"config": doc}))
    with pytest.raises(InputError, match="which cluster c does not run"):
        offline.run("t", path)

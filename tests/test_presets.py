"""Issue 24 section 3: our pipeline-parallel LLMInferenceServiceConfig preset; issue 36 item 6: its
decode and prefill siblings for disaggregated services.

The merged pod spec is built as KServe v0.20.0 builds it (config_merge.go): the presets' specs, then
the service's spec, each strategic-merged over the last (mergeSpecs, L777 on); then the preset's
Go templates are filled from the service (ReplaceVariables, L607). Each LWS pod's command then runs
in a real bash with `vllm` and `getent` stubbed, and the test checks the pods start one engine.
"""
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from modelplane.engine import offline
from modelplane.errors import InputError
from modelplane.render import presets

from helpers import objects
from test_render import assert_valid

MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name", "volumes": "name",
              "volumeMounts": "mountPath", "ports": "containerPort", "resourceClaims": "name"}


def strategic_merge(base, override, key=None):
    """Kubernetes strategic merge for the pod-spec lists KServe merges (patchMergeKey as in corev1);
    other lists are replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for k, v in override.items():
            out[k] = strategic_merge(base[k], v, k) if k in base else v
        return out
    if isinstance(base, list) and isinstance(override, list) and key in MERGE_KEYS:
        mk = MERGE_KEYS[key]
        out = [dict(x) for x in base]
        for item in override:
            at = next((i for i, x in enumerate(out) if x.get(mk) == item.get(mk)), None)
            if at is None:
                out.append(item)
            else:
                out[at] = strategic_merge(out[at], item)
        return out
    return override


def fill_templates(text: str, svc: dict) -> str:
    """The template forms the preset uses, with KServe's default EnableTLS: false."""
    spec, meta = svc["spec"], svc["metadata"]
    text = re.sub(r"\{\{ if \.GlobalConfig\.EnableTLS \}\}([^{]*)\{\{else\}\}([^{]*)\{\{- end \}\}", r"\2", text)
    text = re.sub(r"\{\{ if \.GlobalConfig\.EnableTLS \}\}([^{]*)\{\{- end \}\}", "", text)
    values = {".Spec.Model.Name": spec["model"]["name"], ".ObjectMeta.Namespace": meta["namespace"],
              "ChildName .ObjectMeta.Name `-kserve-self-signed-certs`": f"{meta['name']}-kserve-self-signed-certs",
              ".GlobalConfig.InferencePoolNamespacedName": f"{meta['namespace']}/{meta['name']}-inference-pool"}
    for path, role in ((".Spec", spec), (".Spec.Prefill", spec.get("prefill"))):
        if role and "pipeline" in role["parallelism"]:      # mock inputs are floats
            values[f"{path}.Parallelism.Tensor"] = int(role["parallelism"]["tensor"])
            values[f"{path}.Parallelism.Pipeline"] = int(role["parallelism"]["pipeline"])
    for expr, value in values.items():
        text = text.replace("{{ " + expr + " }}", str(value))
    assert "{{" not in text, text
    return text


def merged(preset: dict, svc: dict, keys=("template", "worker")) -> dict:
    spec = strategic_merge(preset["spec"], {k: v for k, v in svc["spec"].items() if k in keys})
    return json.loads(fill_templates(json.dumps(spec), svc))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    cluster = {"name": "lab", "existing": {"kubeconfigSecret": "kc", "version": "1.34"},
               "nodePools": [{"name": "h200", "class": "h200-8x", "maxNodes": 4}], "queues": [{"namespace": "ml"}]}
    md = {"name": "llama-405b", "namespace": "ml", "model": {"uri": "hf://meta-llama/Llama-3.1-405B-Instruct",
                                                             "tokenSecret": "hf"},
          "replicas": 1, "workers": {"count": 1, "topology": {"tensor": 8, "pipeline": 2}},
          "engine": {"args": ["--max-model-len=32768", '--kv-transfer-config={"kv_connector":"NixlConnector"}']}}
    path = tmp_path_factory.mktemp("pp") / "Pulumi.pp.yaml"
    path.write_text(yaml.safe_dump({"config": {"modelplane:kc": {"secure": "x"}, "modelplane:hf": {"secure": "y"},
                                               "modelplane:clusters": [cluster], "modelplane:deployments": [md]}}))
    return offline.run("pp", path)


def test_the_preset_is_schema_valid_and_named_as_kserve_looks_it_up(schema_catalog):
    preset = presets.pipeline_parallel("kserve")
    assert_valid(schema_catalog, [preset])
    assert preset["metadata"]["name"] == "kserve-config-llm-worker-pipeline-parallel"
    assert "baseRefs" not in preset["spec"]       # KServe's webhook forbids baseRefs in a config


def test_the_substrate_installs_it_after_kserve_s_webhook(run):
    records = [r for r in run.records if r.type.endswith(":LLMInferenceServiceConfig")]
    assert sorted(r.inputs["metadata"]["name"] for r in records) == [
        "kserve-config-llm-decode-worker-pipeline-parallel", "kserve-config-llm-prefill-worker-pipeline-parallel",
        "kserve-config-llm-worker-pipeline-parallel"]
    names = {r.urn: r.name for r in run.records}
    for record in records:
        assert record.inputs["metadata"]["namespace"] == "kserve"
        assert any("kserve-webhook-ready" in names[d] for d in record.dependencies)
    llmis = objects(run, "LLMInferenceService")["llama-405b-0"].inputs["spec"]
    assert "baseRefs" not in llmis        # KServe adds the preset by name (config_merge.go L261-263)


def _start(pod: dict, index: int, tmp_path, name: str = "llama-405b-0") -> list[str]:
    """Run the pod's main container command in bash with vllm and getent stubbed; vllm's argv."""
    main = next(c for c in pod["containers"] if c["name"] == "main")
    bin_dir = tmp_path / f"bin{index}"
    bin_dir.mkdir(parents=True)
    (bin_dir / "getent").write_text('#!/bin/sh\necho "10.8.0.1 $2"\n')
    (bin_dir / "vllm").write_text('#!/usr/bin/env python3\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "LWS_LEADER_ADDRESS": f"{name}-kserve-0.{name}",
           "LWS_WORKER_INDEX": str(index), "LWS_GROUP_SIZE": "2"}
    out = subprocess.run([*main["command"], *main.get("args", [])], env=env, capture_output=True, text=True,
                         timeout=30, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_leader_and_workers_start_one_distributed_engine(run, tmp_path):
    svc = objects(run, "LLMInferenceService")["llama-405b-0"].inputs
    spec = merged(presets.pipeline_parallel("kserve"), svc)
    size = int(svc["spec"]["parallelism"]["pipeline"])   # KServe's LWS size (ParallelismSpec.GetSize)
    pods = [spec["template"]] + [spec["worker"]] * (size - 1)
    argvs = [_start(pod, i, tmp_path) for i, pod in enumerate(pods)]
    gpus = int(objects(run, "ResourceClaimTemplate")["llama-405b-0-decode-gpus"].inputs["spec"]["spec"]["devices"][
        "requests"][0]["exactly"]["count"])
    for argv in argvs:
        assert argv[:2] == ["serve", "/mnt/models"]
        assert int(_flag(argv, "--nnodes")) == size == int(_flag(argv, "--pipeline-parallel-size"))
        assert int(_flag(argv, "--tensor-parallel-size")) == gpus == 8      # each node's share of the world
        assert _flag(argv, "--master-addr") == "10.8.0.1" and _flag(argv, "--master-port") == "29500"
        assert _flag(argv, "--distributed-executor-backend") == "mp"
        # the service's args reach every node intact (one word each)
        assert "--max-model-len=32768" in argv and '--kv-transfer-config={"kv_connector":"NixlConnector"}' in argv
    assert sorted(int(_flag(a, "--node-rank")) for a in argvs) == list(range(size))
    assert "--headless" not in argvs[0] and all("--headless" in a for a in argvs[1:])
    assert _flag(argvs[0], "--port") == "8000"       # the leader serves the API KServe's Service targets
    # probes on the leader only; the merged pods keep our GPU claim and the preset's volumes
    assert "readinessProbe" in spec["template"]["containers"][0]
    assert "readinessProbe" not in spec["worker"]["containers"][0] and "ports" not in spec["worker"]["containers"][0]
    for pod in (spec["template"], spec["worker"]):
        assert {v["name"] for v in pod["volumes"]} >= {"dshm", "model-cache", "tls-certs"}
        assert pod["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "llama-405b-0-decode-gpus"}]


def test_pipeline_with_data_stays_refused(tmp_path):
    """KServe's webhook refuses pipeline and data together (llm_inference_service_validation.go L283-289)."""
    base = {"name": "m", "namespace": "ml", "model": {"uri": "hf://org/m"}, "replicas": 1}
    cluster = {"name": "c", "existing": {"kubeconfigSecret": "kc", "version": "1.34"},
               "nodePools": [{"name": "h", "class": "h200-8x", "maxNodes": 8}], "queues": [{"namespace": "ml"}]}
    path = tmp_path / "Pulumi.t.yaml"
    path.write_text(yaml.safe_dump({"config": {"modelplane:kc": {"secure": "x"}, "modelplane:clusters": [cluster],
                                               "modelplane:deployments": [{**base, "workers": {"topology": {
                                                   "tensor": 8, "pipeline": 2, "data": 2}}}]}}))
    with pytest.raises(InputError) as err:
        offline.run("t", path)
    [problem] = err.value.problems
    assert problem.rule == "kserve-multi-node" and "data-parallel preset" in problem.message


PP = {"tensor": 8, "pipeline": 2}


@pytest.fixture(scope="module")
def pd_run(tmp_path_factory):
    """5 prefill + 3 decode workers of TP8 x PP2 on the kserve backend: 16 nodes of 8 H200."""
    cluster = {"name": "lab", "existing": {"kubeconfigSecret": "kc", "version": "1.34"},
               "nodePools": [{"name": "h200", "class": "h200-8x", "maxNodes": 16}], "queues": [{"namespace": "ml"}]}
    kv = '--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_both"}'
    md = {"name": "kimi", "namespace": "ml", "model": {"uri": "hf://moonshotai/Kimi-K2-Instruct"}, "replicas": 1,
          "workers": {"count": 3, "topology": PP}, "engine": {"args": [kv]},
          "prefill": {"workers": {"count": 5, "topology": PP}, "engine": {"args": [kv]}}}
    path = tmp_path_factory.mktemp("pd") / "Pulumi.pd.yaml"
    path.write_text(yaml.safe_dump({"config": {"modelplane:kc": {"secure": "x"}, "modelplane:clusters": [cluster],
                                               "modelplane:deployments": [md]}}))
    return offline.run("pd", path)


def test_5p3d_of_tp8_pp2_is_placed_and_rendered_through_our_presets(pd_run, schema_catalog):
    [placement] = pd_run.result.plan.placements
    assert {r: (p.workers, p.nodes, p.gpus_per_node) for r, p in placement.roles.items()} == {
        "decode": (3, 6, 8), "prefill": (5, 10, 8)}
    spec = objects(pd_run, "LLMInferenceService")["kimi-0"].inputs["spec"]
    assert spec["parallelism"] == {"tensor": 8, "pipeline": 2} == spec["prefill"]["parallelism"]
    assert "worker" in spec and "worker" in spec["prefill"] and "baseRefs" not in spec
    assert objects(pd_run, "PodGroup")["kimi-0"].inputs["spec"]["minMember"] == 16
    assert_valid(schema_catalog, [presets.decode_pipeline_parallel("kserve"), presets.prefill_pipeline_parallel("kserve")])


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_decode_and_prefill_nodes_start_one_engine_each(pd_run, tmp_path):
    svc = objects(pd_run, "LLMInferenceService")["kimi-0"].inputs
    decode = merged(presets.decode_pipeline_parallel("kserve"), svc)
    prefill = merged(presets.prefill_pipeline_parallel("kserve"), svc, keys=("prefill",))["prefill"]
    for role, spec, port in (("decode", decode, "8001"), ("prefill", prefill, "8000")):
        argvs = [_start(pod, i, tmp_path / role, "kimi-0") for i, pod in enumerate([spec["template"], spec["worker"]])]
        for argv in argvs:
            assert int(_flag(argv, "--pipeline-parallel-size")) == 2 == int(_flag(argv, "--nnodes"))
            assert int(_flag(argv, "--tensor-parallel-size")) == 8 and _flag(argv, "--port") == port
            assert '--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_both"}' in argv
        assert [int(_flag(a, "--node-rank")) for a in argvs] == [0, 1] and "--headless" in argvs[1]
        assert spec["template"]["resourceClaims"][0]["resourceClaimTemplateName"] == f"kimi-0-{role}-gpus"
    # decode's leader serves behind llm-d's routing sidecar (8000 -> the engine on 8001), as KServe's decode presets
    [sidecar] = decode["template"]["initContainers"]
    assert "--vllm-port=8001" in sidecar["command"] and sidecar["ports"] == [{"containerPort": 8000, "protocol": "TCP"}]
    assert "initContainers" not in decode["worker"] and "initContainers" not in prefill["template"]


def test_a_cluster_with_its_own_kserve_is_refused_for_pipeline(tmp_path):
    from modelplane.render import RenderError, render_replica
    from test_render import inventory, md, placement

    from modelplane.api import load_catalog
    spec = md(workers={"count": 1, "topology": {"tensor": 8, "pipeline": 2}}, engine={})
    inv = {**inventory(load_catalog()), "kserve": {"enabled": False}}
    with pytest.raises(RenderError, match="substrate.kserve: false"):
        render_replica(spec, placement(spec), inv)
    assert render_replica(spec, placement(spec), {**inv, "kserve": {"enabled": True}})

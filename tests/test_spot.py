"""Spot only where allowed (issue 44): critical and SLO-sized deployments stay off spot pools unless
they say `allowSpot: true` — one rule (ModelDeployment.spot_refusal) behind the Filter reason
`spot` and the policy `spot-allowed` (mandatory in production)."""
import json
from dataclasses import replace

from click.testing import CliRunner

from modelplane.api import ModelDeployment
from modelplane.cli import main
from modelplane.policy.stack import MODEL_DEPLOYMENT, spot_allowed
from modelplane.scheduler import schedule

from helpers import cluster, demand, pool, role
from test_bad_input import CLUSTERS, DEV
from test_model_known import GPT


def spec(**kw):
    base = {"name": "llama", "namespace": "chat", "model": {"uri": "hf://meta-llama/Llama-3.1-8B-Instruct"},
            "engine": {"image": "i:v1"}}
    return ModelDeployment.model_validate({**base, **kw})


def test_the_rule_critical_and_sized_stay_off_spot_unless_they_allow_it():
    slo = {"slo": {"ttftMs": 1000, "itlMs": 20},
           "traffic": {"requestsPerSecond": 5, "inputTokens": 1000, "outputTokens": 200}}
    assert spec(replicas=1).spot_refusal == ""
    assert spec(replicas=1, priority="low").spot_refusal == ""
    assert spec(replicas=1, priority="critical").spot_refusal == "priority: critical"
    assert spec(**slo).spot_refusal == "sized from an SLO"
    assert spec(replicas=1, priority="critical", allowSpot=True).spot_refusal == ""
    assert spec(**slo, allowSpot=True).spot_refusal == ""
    assert spec(replicas=1, allowSpot=False).spot_refusal == "allowSpot: false"


def test_a_sized_deployment_resolved_keeps_spot_refused():
    """The resolved spec is an ordinary deployment (no slo): it carries the refusal as allowSpot: false."""
    from modelplane.api.deployment import Topology
    from modelplane.sizing.resolve import resolved

    sized = spec(slo={"ttftMs": 1000, "itlMs": 20},
                 traffic={"requestsPerSecond": 5, "inputTokens": 1000, "outputTokens": 200})
    c = type("C", (), {"replicas": 2, "prefill": None,
                       "decode": type("S", (), {"workers": 1, "topology": Topology(tensor=1)})()})()
    out = resolved(sized, c)
    assert out.slo is None and out.allow_spot is False and out.spot_refusal == "allowSpot: false"
    assert resolved(sized.model_copy(update={"allow_spot": True}), c).spot_refusal == ""


def test_filter_keeps_a_critical_replica_off_spot_and_says_why():
    """Only a spot pool: the critical replica is unplaced with reason `spot` naming allowSpot; with a
    paid pool beside it, it goes there; a standard deployment may still use spot."""
    spot = pool("h100-spot", gpus=8, max_nodes=4, capacity="spot")
    critical = replace(demand("chat/llama"), priority=2, spot="priority: critical")
    plan = schedule([critical], [cluster("c", spot)])
    assert plan.placed("chat/llama") == 0
    [why] = [r for r in plan.rejections["chat/llama"] if r.reason == "spot"]
    assert (why.cluster, why.pool) == ("c", "h100-spot")
    assert why.detail == ("decode: h100-spot is spot capacity and chat/llama stays off spot (priority: critical); "
                          "set allowSpot: true on the deployment to allow it, or give it a reserved or on-demand pool")
    plan = schedule([critical], [cluster("c", spot, pool("h100", gpus=8, max_nodes=1))])
    assert [p.roles["decode"].pool for p in plan.placements] == ["h100"]
    plan = schedule([replace(critical, spot="")], [cluster("c", spot)])
    assert [p.roles["decode"].pool for p in plan.placements] == ["h100-spot"]


def test_a_retained_replica_on_spot_moves_off_it_once_refused():
    """A previous placement on spot is not kept once the deployment is refused spot (a sticky plan
    cannot keep a critical replica on spot)."""
    c = cluster("c", pool("h100-spot", gpus=8, max_nodes=1, capacity="spot"), pool("h100", gpus=8, max_nodes=2))
    before = schedule([demand("chat/llama")], [c])
    assert [p.roles["decode"].pool for p in before.placements] == ["h100-spot"]
    after = schedule([replace(demand("chat/llama"), spot="priority: critical")], [c], before.placements)
    assert [p.roles["decode"].pool for p in after.placements] == ["h100"]


def inventory(capacity: str) -> dict:
    return {"name": "c", "pools": [{"name": "h100", "capacityType": capacity}]}


def resources(spec_json: dict, capacity: str, sizing=None):
    props = {"spec": spec_json, "clusters": {"c": inventory(capacity)},
             "placements": [{"deployment": "chat/llama", "replica": 0, "cluster": "c",
                             "roles": {"decode": {"pool": "h100", "nodes": 1, "gpusPerNode": 8, "workers": 1}}}]}
    if sizing:
        props["sizing"] = sizing
    return [type("R", (), {"resource_type": MODEL_DEPLOYMENT, "props": props, "urn": "urn:llama"})()]


def test_policy_refuses_a_hand_written_placement_on_spot():
    critical = spec(replicas=1, priority="critical").model_dump(by_alias=True, mode="json")
    assert spot_allowed(resources(critical, "spot")) == [
        ("chat/llama replica 0: on spot pool h100 of c, but it stays off spot (priority: critical)", "urn:llama")]
    assert spot_allowed(resources(critical, "reservation")) == []
    allowed = spec(replicas=1, priority="critical", allowSpot=True).model_dump(by_alias=True, mode="json")
    assert spot_allowed(resources(allowed, "spot")) == []
    resolved = spec(replicas=1, allowSpot=False).model_dump(by_alias=True, mode="json")
    [(message, _)] = spot_allowed(resources(resolved, "spot", sizing={"slo": {}}))
    assert message.endswith("(sized from an SLO)")


def stack(tmp_path, extra: str = "") -> str:
    """The dev stack in production, its GPT deployment critical and on H100 only (the dev-gke
    H100 pool is spot)."""
    body = DEV.replace(GPT, "      model: {uri: hf://openai/gpt-oss-20b}\n      replicas: 1\n      priority: critical\n"
                            f"{extra}      nodeSelector: {{cel: 'gpu.product == \"H100\"'}}\n"
                            "      workers: {count: 1, topology: {tensor: 1}}\n", 1)
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(body.replace(CLUSTERS, "  modelplane:production: true\n" + CLUSTERS, 1))
    return str(path)


def plan(path, *args):
    return CliRunner().invoke(main, ["plan", "dev", "--config-file", path, *args])


def test_in_production_a_critical_deployment_that_only_fits_spot_is_refused_naming_allow_spot(tmp_path):
    path = stack(tmp_path)
    result = plan(path)
    assert result.exit_code == 1 and "placement-complete (mandatory" in result.output, result.output
    doc = json.loads(plan(path, "--json").stdout)
    [stuck] = [u for u in doc["unplaced"] if u["deployment"] == "ml-team/gpt-oss-20b"]
    assert [r["reason"] for r in stuck["reasons"] if r["pool"] == "h100"] == ["spot"]
    assert "set allowSpot: true" in [r for r in stuck["reasons"] if r["pool"] == "h100"][0]["detail"]
    explain = plan(path, "--explain", "ml-team/gpt-oss-20b")
    assert "stays off spot (priority: critical); set allowSpot: true" in explain.output, explain.output


def test_with_allow_spot_it_runs_on_spot(tmp_path):
    path = stack(tmp_path, "      allowSpot: true\n")
    doc = json.loads(plan(path, "--json").stdout)
    assert not [u for u in doc["unplaced"] if u["deployment"] == "ml-team/gpt-oss-20b"]
    assert "spot-allowed" not in plan(path).output

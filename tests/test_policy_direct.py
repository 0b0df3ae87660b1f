"""Issue 30: the pack's verdicts in-process (modelplane/policy/direct.py) are exactly the gRPC analyzer's.

The analyzer (the pack as a subprocess, as the Pulumi CLI runs it) starts once for the module; every
comparison configures it and then asks both paths about the same resources.
"""
import copy
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from modelplane.engine import direct as direct_engine, offline
from modelplane.api.loader import stack_names
from modelplane.policy import (CONFIG_DIR, Analyzer, Resource, default_config, direct, evaluate, read_config,
                               resources_of, with_fixes)
from modelplane.policy.gate import _plain
from helpers import planned

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))

import stackgen  # noqa: E402

UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
SIG, SECRET = "4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270"
PRODUCTION = read_config(CONFIG_DIR / "production.json")
CONFIGS = {"pack-defaults": {}, "production": PRODUCTION, "all-mandatory": {"all": "mandatory"}}
FLEETS = ((5, 50), (20, 200))


@pytest.fixture(scope="module")
def analyzer():
    with Analyzer(stack="direct") as a:
        yield a


def plain_urns(resources) -> frozenset:
    """The resources the direct engine would record as given (its `_plain`), whatever wrote their props."""
    return frozenset(r.urn for r in resources
                     if r.custom and direct_engine._plain({k: v for k, v in r.props.items() if v is not None}))


def both(analyzer, resources, config):
    analyzer.configure(config)
    eager = direct.evaluate(resources, config)
    # props read lazily (what the direct engine's finite records get) give the same verdicts
    assert direct.evaluate(resources, config, finite=True) == eager
    # and so do props read as given where the direct engine records them so (issue 48)
    assert direct.evaluate(resources, config, finite=True, plain=plain_urns(resources)) == eager
    return analyzer.analyze(resources), eager


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every example stack (infra stacks too) and two seeded generated fleets."""
    out = {stack: planned(stack) for stack in stack_names()}
    work = tmp_path_factory.mktemp("fleets")
    for clusters, replicas in FLEETS:
        name = f"fleet{clusters}x{replicas}"
        # the direct engine's records (the Pulumi engine's, tests/test_engines.py) at a fifteenth of the CPU
        out[name] = direct_engine.run(name, stackgen.write(work / f"Pulumi.{name}.yaml", clusters, replicas))
    return out


def test_every_stack_and_fleet_gets_the_analyzers_verdicts(analyzer, runs):
    assert {"dev", "prod", "infra-gke-us-central1", "fleet5x50", "fleet20x200"} <= set(runs)
    seen = 0
    for name, run in runs.items():
        resources = resources_of(run)
        stack_default = read_config(default_config(run.result.spec.production))
        for label, config in {"stack-default": stack_default, **CONFIGS}.items():
            grpc, mine = both(analyzer, resources, config)
            assert mine == grpc, (name, label)
            seen += len(grpc)
    assert seen >= 20     # real violations were compared, not only empty lists


def test_evaluate_defaults_to_the_direct_engine_and_keeps_the_pulumi_one(analyzer, runs):
    run = runs["prod"]
    config = {"all": "mandatory", "gpu-budget": {"maxGpus": 1}}
    assert evaluate(run, config) == evaluate(run, config, analyzer) == evaluate(run, config, engine="pulumi")
    assert evaluate(run) == evaluate(run, engine="pulumi") != []
    with pytest.raises(ValueError, match="engine"):
        evaluate(run, engine="grpc")


def _resources(run) -> list[Resource]:
    return [Resource(r.type, r.urn, r.name, copy.deepcopy(r.props), r.parent, r.custom) for r in resources_of(run)]


def _workload(props) -> bool:
    return props.get("kind") in ("LLMInferenceService", "Deployment", "LeaderWorkerSet")


def _container(props) -> dict | None:
    from modelplane.policy.resource import pod_templates
    return next((pod["containers"][0] for _, _, pod in pod_templates(props) if pod.get("containers")), None)


def tampered(run) -> list[Resource]:
    """The run's resources with violations of resource and stack policies, unknown values, secrets,
    integers, tuples and non-JSON values written into their props (as the tamper tests do)."""
    resources = _resources(run)
    pools = [r for r in resources if r.type == "gcp:container/nodePool:NodePool"]
    for i, r in enumerate(pools):
        node = r.props.setdefault("nodeConfig", {})
        node["guestAccelerators"] = [{"type": "nvidia-h200-141gb", "count": 8}]
        node["taints"], node["labels"] = [], {}
        r.props["autoscaling"] = {"minNodeCount": 5, "maxNodeCount": 1}          # ints, as a program may send
        if i == 1:
            node["machineType"] = object()      # not JSON: gate sends the unknown sentinel
    workloads = [r for r in resources if r.custom and _workload(r.props) and _container(r.props)]
    for i, r in enumerate(workloads):
        container = _container(r.props)
        container["image"] = "vllm/vllm-openai:latest"
        secret = {"name": "HF_TOKEN", "value": {SIG: SECRET, "value": "hf_x"}}
        container["env"] = (*(container.get("env") or []), secret)       # a tuple: gate sends a list
        if i == 0:
            r.props["metadata"]["labels"]["team"] = UNKNOWN
        if i == 1:
            r.props["metadata"]["name"] = "X" * 70
    for r in resources:
        kind = r.props.get("kind")
        if kind == "PodGroup":
            r.props["spec"] = {SIG: SECRET, "value": {**r.props["spec"], "minMember": 1, "queue": "nope"}}
        if kind == "ResourceClaimTemplate":
            for req in r.props["spec"]["spec"]["devices"]["requests"]:
                req["exactly"] = {**req["exactly"], "count": 2, "deviceClassName": "gpu.amd.com"}
        if r.type == "modelplane:index:ModelDeployment" and r.props.get("spec"):
            for p in r.props.get("placements") or []:
                for role, rp in p["roles"].items():
                    if role == "prefill":
                        rp["workers"] = 1
                    rp["nodes"] = int(rp["nodes"])
            r.props["placements"] = tuple(r.props.get("placements") or [])
        if r.type == "modelplane:index:ModelDeployment" and "llama" in r.name:
            r.props["progress"] = UNKNOWN       # rollout-complete cannot run during preview
    return resources


TAMPER_CONFIG = {"all": "mandatory", "kai-wiring": "disabled", "node-pool-bounds": "remediate",
                 "image-pinned": {"enforcementLevel": "advisory", "requireDigest": True},
                 "gpu-budget": {"maxGpus": 8}, "cost-budget": {"maxHourlyCost": 10, "namespaces": {"ml": 1.5}}}


@pytest.mark.parametrize("stack", ["dev", "prod", "example-inplace"])
def test_violations_unknowns_and_secrets_get_the_analyzers_verdicts(analyzer, runs, stack):
    resources = tampered(runs[stack])
    for config in (TAMPER_CONFIG, {}, PRODUCTION):
        grpc, mine = both(analyzer, resources, config)
        assert mine == grpc, config
    grpc, mine = both(analyzer, resources, TAMPER_CONFIG)
    fired = {v["policy"] for v in mine}
    kinds = {direct.POLICIES[p].kind for p in fired}
    assert kinds == {"resource", "stack"}, fired
    assert all(v["fix"] for v in with_fixes(mine)), [v for v in with_fixes(mine) if not v["fix"]]   # issue 47
    assert "kai-wiring" not in fired                        # disabled
    assert {"gpu-budget", "image-pinned", "no-plain-secrets"} <= fired
    assert any(v["policy"] == "gpu-budget" and v["message"].endswith("the budget is 8") for v in mine)
    assert any("can't run policy" in v["message"] and v["level"] == "advisory" for v in mine)   # an unknown read
    if stack == "dev":
        assert {"node-pool-bounds", "gpu-pool-taint-and-label", "resource-names", "kai-gang", "dra-claims"} <= fired
        assert {v["level"] for v in mine if v["policy"] == "node-pool-bounds"} == {"mandatory"}   # remediate
        assert any(".nodeConfig.machineType can't be known" in v["message"] for v in mine)
        assert any(".metadata.labels.team can't be known" in v["message"] for v in mine)
        assert any(v["policy"] == "rollout-complete" and "can't run" in v["message"] for v in mine)
    if stack == "example-inplace":
        assert "scaling-bindings" in fired


def _shuffled(value, rnd):
    if isinstance(value, dict):
        items = list(value.items())
        rnd.shuffle(items)
        return {k: _shuffled(v, rnd) for k, v in items}
    if isinstance(value, (list, tuple)):
        return [_shuffled(v, rnd) for v in value]
    return value


@pytest.mark.parametrize("stack", ["dev", "prod", "example-inplace", "fleet5x50"])
def test_verdicts_do_not_depend_on_dict_key_order(runs, stack):
    """The pack sees keys in the order of protobuf's Struct map (a hash order), the direct path in
    the program's: the verdicts must not depend on it."""
    rnd = random.Random(30)
    for resources in (_resources(runs[stack]), tampered(runs[stack])):
        reordered = [Resource(r.type, r.urn, r.name, _shuffled(r.props, rnd), r.parent, r.custom) for r in resources]
        for config in (TAMPER_CONFIG, PRODUCTION):
            assert direct.evaluate(reordered, config) == direct.evaluate(resources, config)


def test_a_malformed_value_fails_like_the_pack():
    """NaN is no JSON number: the pack's MessageToDict refuses it (and gate.py ends the pack)."""
    from modelplane.policy import PackError

    pool = Resource("gcp:container/nodePool:NodePool", "urn:pulumi:s::modelplane::gcp:container/nodePool:NodePool::p",
                    "p", {"autoscaling": {"minNodeCount": float("nan")}})
    with Analyzer(stack="nan") as own, pytest.raises(PackError):
        own.configure({})
        own.analyze([pool])
    with pytest.raises(PackError):
        direct.evaluate([pool], {})


def test_only_records_with_finite_numbers_are_read_lazily():
    """A NaN must fail the pack before any policy runs, so props are converted lazily only when the
    direct engine saw no NaN or infinity while recording them."""
    from modelplane.engine import direct as engine
    from modelplane.policy import evaluate
    from modelplane.render.graph import Graph

    for value, finite in ((1, True), (0.5, True), (float("nan"), False), (float("-inf"), False)):
        resolver = engine.Resolver(Graph(), "s", {})
        assert resolver.wire({"spec": [{"n": value}]}, set()) == {"spec": [{"n": float(value)}]} or value != value
        assert resolver.finite is finite
    run = engine.run("dev")
    assert run.finite
    assert evaluate(run) == direct.evaluate(_resources(run), None)


def _outcomes(resources, views, config, indexed: bool = False) -> dict:
    """Every running policy's messages (or the error it raised) on these views of the props,
    without the direct gate's second reading: what the rule itself makes of them. `indexed`: stack
    rules get what the direct gate hands them (stackview.Resources), else the pack's plain list."""
    settings = direct.configure(config)
    objects = direct._objects(resources, views)
    out = {}
    for name, policy in sorted(direct.POLICIES.items()):
        level, cfg = settings[name]
        if level == "disabled":
            continue
        calls = ([(r.urn, (r.type, v)) for r, v in zip(resources, views) if r.custom] if policy.kind == "resource"
                 else [("", (direct._copy(objects) if indexed else list(objects),))])
        for urn, args in calls:
            try:
                out[name, urn] = list(policy.check(*args, dict(cfg) if cfg else {}))
            except Exception as exc:
                out[name, urn] = type(exc).__name__
    return out


@pytest.mark.parametrize("tamper", [False, True], ids=["as-planned", "tampered"])
def test_every_rule_reads_props_as_given_as_it_reads_the_packs_view(runs, tamper):
    """What lets the direct gate hand a rule the recorded props (integers, dicts, lists) where the
    pack hands doubles and read-only proxies: no rule tells them apart, in a verdict, a message or an
    error, on any example stack, generated fleet or tampered stack. (Where one finds something, the
    gate asks the pack's view again anyway, so a message could not differ; this is the stronger claim.)"""
    compared = found = 0
    for name, run in runs.items():
        if tamper and name not in ("dev", "prod", "example-inplace"):
            continue
        resources = tampered(run) if tamper else _resources(run)
        pack = [direct.lazy_props_of(r.props) for r in resources]
        given = [raw if raw is not None else view
                 for raw, view in zip(direct.raw_views(resources, plain_urns(resources)), pack)]
        assert sum(v is not w for v, w in zip(given, pack)) > len(resources) // 2, name   # most read as given
        for config in (TAMPER_CONFIG, {"all": "mandatory"}):
            mine, theirs = _outcomes(resources, given, config), _outcomes(resources, pack, config)
            assert mine == theirs, (name, config, [k for k in theirs if mine[k] != theirs[k]][:5])
            # and stack rules read the gate's index of the resources as they read a plain list
            assert _outcomes(resources, given, config, True) == mine == _outcomes(resources, pack, config, True)
            compared += len(theirs)
            found += sum(bool(v) for v in theirs.values())
    assert compared > 4_000 and found >= 20


def test_a_finding_on_props_read_as_given_is_worded_by_the_packs_view(monkeypatch):
    """A rule that finds something, or fails, on props read as given runs again on the pack's view,
    whose words are returned: a number in a message is the pack's double, an error the pack's."""
    from modelplane.policy.registry import Policy

    def counts(resource_type, props, config=None):
        return [f"min {props['spec']['minMember']}"] if props.get("kind") == "PodGroup" else []

    def copies(resources, config=None):
        groups = [r for r in resources if r.props.get("kind") == "PodGroup"]
        return [(f"{len(groups)} gangs, the first {groups[0].props['spec'].copy()}", None)]

    monkeypatch.setitem(direct.POLICIES, "zz-counts", Policy("zz-counts", "Counts.", "mandatory", "resource", counts))
    monkeypatch.setitem(direct.POLICIES, "zz-copies", Policy("zz-copies", "Copies.", "mandatory", "stack", copies))
    run = direct_engine.run("dev")
    resources = resources_of(run)
    assert set() != {r.urn for r in resources if r.custom and r.urn in run.plain} <= plain_urns(resources)
    groups = [r for r in resources if r.props.get("kind") == "PodGroup"]
    assert groups and all(r.urn in run.plain and type(r.props["spec"]["minMember"]) is int for r in groups)
    config = {"all": "mandatory"}
    with pytest.raises(direct.PackError, match="zz-copies: AttributeError"):      # a proxy has no .copy()
        direct.evaluate(resources, config, finite=True, plain=run.plain)
    monkeypatch.delitem(direct.POLICIES, "zz-copies")
    given = direct.evaluate(resources, config, finite=True, plain=run.plain)
    assert given == direct.evaluate(resources, config)
    counted = [v["message"] for v in given if v["policy"] == "zz-counts"]
    assert len(counted) == len(groups) and all(m.startswith("min ") and m.endswith(".0") for m in counted)


def test_the_gate_leaves_the_records_as_they_were(runs):
    """Props read as given are the records' own: the rules only read them."""
    run = runs["fleet20x200"]
    before = json.dumps([(r.inputs, r.outputs) for r in run.records], sort_keys=True, default=repr)
    assert evaluate(run, {"all": "mandatory"}) == evaluate(run, {"all": "mandatory"}, engine="direct")
    assert json.dumps([(r.inputs, r.outputs) for r in run.records], sort_keys=True, default=repr) == before


def test_only_plain_json_is_recorded_as_given_and_only_text_keys_read_so():
    """The direct engine records as given JSON of text, booleans, null, integers a double holds,
    dicts and lists, with no unknown's sentinel in it; the gate reads those as given where every
    key is text (the pack's keys all are)."""
    plain = direct_engine._plain
    assert plain({"a": [1, "x", True, None, {"b": 2 ** 53}]}) and plain({"a": {1: "x"}})
    for odd in ({"a": 1.5}, {"a": (1,)}, {"a": 2 ** 53 + 1}, {"a": [UNKNOWN]},
                {"a": {SIG: SECRET, "value": "x"}}, {"a": "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7"}):
        assert not plain(odd), odd
    urn = "urn:pulumi:s::modelplane::kubernetes:core/v1:ConfigMap::c"
    given = [Resource("kubernetes:core/v1:ConfigMap", urn, "c", props) for props in
             ({"data": {"a": "1"}}, {"data": {1: "x"}}, {"data": {"a": {("t",): 1}}})]
    assert [v is not None for v in direct.raw_views(given, frozenset((urn,)))] == [True, False, False]


def test_the_direct_engine_imports_no_grpc_protobuf_or_pulumi(runs, tmp_path):
    """In a fresh interpreter: load the dev stack's resources from JSON, evaluate, list the modules."""
    dump = tmp_path / "resources.json"
    dump.write_text(json.dumps([[r.type, r.urn, r.name, _plain(r.props), r.parent, r.custom]
                                for r in tampered(runs["dev"])]))
    code = f"""
import json, sys
from modelplane.policy import Resource, direct
resources = [Resource(*row) for row in json.loads(open({str(dump)!r}).read())]
verdicts = direct.evaluate(resources, {{"all": "mandatory", "gpu-budget": {{"maxGpus": 8}}}})
assert verdicts, "the tampered dev stack has violations"
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("grpc", "google", "pulumi", "pulumi_policy"))))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=HERE.parent,
                          env={"PYTHONPATH": str(HERE.parent), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_bad_config_corpus_gets_the_analyzers_verdicts(analyzer):
    """Every policy fixture that plans (tests/fixtures/bad), under its own policy config."""
    from modelplane.errors import InputError
    from test_policy_corpus import FIXTURES, header

    compared = 0
    for path in FIXTURES:
        try:
            run = planned("fixture", path)
        except InputError:
            continue
        config = json.loads(header(path).get("policy-config", "null")) or \
            read_config(default_config(run.result.spec.production))
        grpc, mine = both(analyzer, resources_of(run), config)
        assert mine == grpc, path.stem
        compared += bool(grpc)
    assert compared >= 10


def test_stack_rules_find_resources_by_type_and_kind_as_a_scan_finds_them(runs):
    """The direct gate's index (stackview.Resources) answers as a scan of a plain list does, in the
    stack's order, for every type and kind of a stack, tampered kinds included."""
    from modelplane.policy.stackview import of_kind, of_type

    resources = tampered(runs["prod"])
    for views in ([direct.lazy_props_of(r.props) for r in resources], [r.props for r in resources]):
        objects = direct._objects(resources, views)
        plain = list(objects)
        kinds = {str(v.get("kind")) for v in views} | {"Deployment", "no-such-kind"}
        for t in {r.type for r in resources} | {"no:such:Type"}:
            assert of_type(direct._copy(objects), t) == of_type(plain, t) == [o for o in plain if o.resource_type == t]
        for k in kinds:
            assert of_kind(direct._copy(objects), k) == of_kind(plain, k)
        assert of_kind(plain, "Deployment")


def test_a_rule_reads_only_the_types_it_names_under_the_pack_and_in_the_direct_gate(monkeypatch):
    """`types` on a resource rule: the pack's check passes any other type unread, and the direct
    gate never asks the rule about one; a provider prefix ("kubernetes:") stands for its types."""
    from modelplane.policy import registry

    seen = []

    @registry.policy("zz-typed", "Sees types.", "resource", types=("kubernetes:", "aws:eks/nodeGroup:NodeGroup"))
    def typed(resource_type, props, config=None):
        seen.append(resource_type)
        return []

    monkeypatch.setitem(direct.POLICIES, "zz-typed", registry.POLICIES.pop("zz-typed"))
    assert typed("gcp:container/nodePool:NodePool", {}) == [] and seen == []
    assert typed("aws:eks/nodeGroup:NodeGroupX", {}) == [] and seen == []     # a name is exact, not a prefix
    run = direct_engine.run("infra-eks-us-east-1")
    resources = resources_of(run)
    direct.evaluate(resources, {"all": "mandatory"}, finite=True, plain=run.plain)
    wanted = [r.type for r in resources if r.custom and (r.type.startswith("kubernetes:") or
                                                         r.type == "aws:eks/nodeGroup:NodeGroup")]
    assert seen == wanted and "aws:eks/nodeGroup:NodeGroup" in seen
    assert len(wanted) < sum(r.custom for r in resources)

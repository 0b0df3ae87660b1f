"""The DNS drain (review C5, render/drain.py): between each service record and its routes on a
cluster, a dynamic resource whose delete waits the record's TTL + 5 s, so `up` deletes record,
waits, then routes and replicas. Its provider is tested with a fake clock: nothing sleeps here.
"""
import base64
import json
from pathlib import Path

import dill
import pytest
from click.testing import CliRunner

from modelplane.cli import main
from modelplane.render.drain import DRAIN_TYPE, MARGIN_S, PROVIDER_KEY, provider_text

ROOT = Path(__file__).resolve().parents[1]
RECORD = "aws:route53/record:Record"


def _by_name(doc):
    return {(r["type"], r["name"]): r for r in doc["resources"]}


@pytest.fixture(scope="module")
def prod_doc():
    return json.loads(CliRunner().invoke(main, ["plan", "prod", "--json"]).output)


def test_every_drained_record_depends_on_its_drain_and_the_drain_on_the_routes(prod_doc):
    """`plan prod --json`: record -> drain -> the service's routes on the record's cluster; the
    drain waits for nothing else (a first `up` creates it at once, after the routes)."""
    res = _by_name(prod_doc)
    drains = [r for r in prod_doc["resources"] if r["type"] == DRAIN_TYPE]
    # chat on eks-use1: a record per llama replica (review N11), each drained
    assert sorted(d["name"] for d in drains) == ["chat-chat-eks-use1-chat-llama-70b-0-drain",
                                                 "chat-chat-eks-use1-chat-llama-70b-2-drain", "chat-chat-gke-usc1-drain",
                                                 "chat-reasoning-eks-use1-drain", "chat-reasoning-gke-usc1-drain"]
    kinds = {r["name"]: r["type"].rsplit(":", 1)[-1] for r in prod_doc["resources"]}
    for d in drains:
        record = res[(RECORD, d["name"].removesuffix("-drain"))]
        cluster = next(c.split("-") for c in ("eks-use1", "gke-usc1") if f"-{c}" in d["name"])
        assert d["name"] in record["dependsOn"]
        # the record reaches the routes only through its drain
        assert not [x for x in record["dependsOn"] if kinds.get(x) == "HTTPRoute"], record["name"]
        assert d["dependsOn"] and {kinds[x] for x in d["dependsOn"]} == {"HTTPRoute"}
        assert all(x.startswith("-".join(cluster) + "/chat/httproute/") for x in d["dependsOn"]), d
    # the seconds each one waits, in the services section the next `plan --previous` reads
    rows = {(s["hostname"], r["cluster"]): r.get("drainSeconds") for s in prod_doc["services"] for r in s["dns"]}
    assert rows[("chat.inference.example.com", "eks-use1")] == 60 + MARGIN_S
    assert rows[("support.inference.example.com", "gke-euw4")] is None      # HTTP-01: no drain (no cycle)


def test_dns_drain_false_leaves_the_records_on_the_routes(tmp_path):
    text = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
    changed = text.replace("route53: {zoneId: Z0INFERENCEEXAMPLE, domain: inference.example.com}",
                           "route53: {zoneId: Z0INFERENCEEXAMPLE, domain: inference.example.com}\n    drain: false")
    assert changed != text
    (tmp_path / "Pulumi.prod.yaml").write_text(changed)
    doc = json.loads(CliRunner().invoke(main, ["plan", "prod", "--config-file", str(tmp_path / "Pulumi.prod.yaml"),
                                              "--json"]).output)
    assert not [r for r in doc["resources"] if r["type"] == DRAIN_TYPE]
    record = _by_name(doc)[(RECORD, "chat-chat-gke-usc1")]
    assert "gke-usc1/chat/httproute/chat" in record["dependsOn"]
    assert all("drainSeconds" not in r for s in doc["services"] for r in s["dns"])


def test_a_cloud_dns_record_set_gets_a_drain_per_cluster():
    """One record set over the clusters: a drain per cluster with routes, each on that cluster's
    routes only. When a cluster leaves, the set is updated first and its drain deleted at the end."""
    from modelplane.render.graph import Graph, Node
    from modelplane.render.rollout import CLOUD_DNS_RECORD, await_traffic

    g = Graph()
    for c in ("a", "b"):
        g.add(Node("kubernetes:x/v1:HTTPRoute", f"{c}/ml/httproute/svc", {
            "kind": "HTTPRoute", "metadata": {"name": "svc", "namespace": "ml", "labels": {"modelplane.ai/service": "svc"}}},
            cluster=c))
    rs = g.add(Node(CLOUD_DNS_RECORD, "ml-svc", {"name": "svc.example.com.", "ttl": 30}))
    await_traffic(g, {"ml/svc": {"hostname": "svc.example.com", "deployments": []}}, drain_ttl=30)
    drains = [n for n in g if n.type == DRAIN_TYPE]
    assert [(n.name, n.depends_on, n.inputs["seconds"]) for n in drains] == [
        ("ml-svc-a-drain", (f"kubernetes:x/v1:HTTPRoute::a/ml/httproute/svc",), 30 + MARGIN_S),
        ("ml-svc-b-drain", (f"kubernetes:x/v1:HTTPRoute::b/ml/httproute/svc",), 30 + MARGIN_S)]
    assert g.nodes[rs].depends_on == tuple(n.key for n in drains)
    order = list(g.nodes)
    assert all(order.index(n.key) < order.index(rs) for n in drains)     # registered before the record


def test_the_provider_text_loads_the_drain_provider_as_pulumis_host_does():
    """Pulumi's dynamic provider host: `dill.loads(base64.b64decode(props["__provider"]))`
    (pulumi/pulumi@v3.259.0 sdk/python/lib/pulumi/dynamic/__main__.py get_provider)."""
    from modelplane.components.drain import DnsDrainProvider

    provider = dill.loads(base64.b64decode(provider_text()))
    assert type(provider) is DnsDrainProvider


def test_the_drains_delete_waits_the_seconds_its_state_recorded_and_create_does_not():
    from modelplane.components.drain import DnsDrainProvider

    slept = []
    p = DnsDrainProvider(sleep=slept.append)
    props = {"hostname": "chat.example.com", "cluster": "eks-use1", "ttl": 60, "seconds": 65,
             PROVIDER_KEY: provider_text()}
    made = p.create(props)
    assert made.id == "chat.example.com/eks-use1" and PROVIDER_KEY not in made.outs and slept == []
    assert p.diff(made.id, props, dict(props)).changes is False
    newer = {**props, "ttl": 5, "seconds": 10}
    diff = p.diff(made.id, props, newer)
    assert diff.changes is True and diff.replaces == []         # a TTL change updates, never replaces
    assert p.update(made.id, props, newer).outs["seconds"] == 10 and slept == []
    p.delete(made.id, props)
    assert slept == [65.0]


def test_the_change_view_says_drained_over_n_seconds():
    from modelplane.analysis.changes import traffic_delta, traffic_text

    before = [{"service": "ml/svc", "hostname": "svc.example.com", "clusters": {"a": 500, "b": 500},
               "dns": [{"cluster": "a", "weight": 50, "drainSeconds": 65}, {"cluster": "b", "weight": 50}]}]
    after = [{"service": "ml/svc", "hostname": "svc.example.com", "clusters": {}, "status": "ok", "missing": [],
              "dns": []}]
    (row,) = traffic_delta(before, after, 60)
    assert row["drained"] == {"clusters": ["a"], "seconds": 65} and row["undrained"] == {"clusters": ["b"], "ttl": 60}
    text = traffic_text(row)
    assert "DNS drained over 65 s: a leaves the name's DNS answers first, and its routes there go 65 s later" in text
    assert "DNS not drained: b leaves" in text

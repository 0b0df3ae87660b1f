"""The direct engine's resolution rules on small graphs (tests/test_engines.py holds the whole
engine to the Pulumi engine; these name each rule on its own)."""
from modelplane.engine.direct import Resolver
from modelplane.engine.records import SIG_KEY, UNKNOWN_TEXT
from modelplane.engine.records import UNKNOWN
from modelplane.render.graph import Apply, Graph, Node, Ref, Secret
from modelplane.render.names import SecretValue


def _records(graph):
    return {r.name: r for r in Resolver(graph, "s", {}).records()}


def test_a_dependency_on_a_component_means_its_resources():
    g = Graph()
    comp = g.add(Node("modelplane:index:Thing", "box", custom=False, outputs={}))
    g.add(Node("aws:iam/role:Role", "a", {}, comp))
    inner = g.add(Node("modelplane:index:Thing", "inner", parent=comp, custom=False, outputs={}))
    g.add(Node("aws:iam/role:Role", "b", {}, inner))
    g.add(Node("aws:iam/role:Role", "after", {}, depends_on=(comp,)))
    r = _records(g)
    assert r["after"].dependencies == tuple(sorted((r["a"].urn, r["b"].urn)))
    # URNs as the mock monitor names them: the parent's own type, then the type
    assert r["b"].urn == "urn:pulumi:s::modelplane::modelplane:index:Thing$aws:iam/role:Role::b"
    assert r["box"].parent == "urn:pulumi:s::modelplane::pulumi:pulumi:Stack::modelplane-s"


def test_references_add_dependencies_and_read_what_the_mocks_answer():
    g = Graph()
    role = g.add(Node("aws:iam/role:Role", "role", {"assumeRolePolicy": "{}"}))
    g.add(Node("aws:iam/rolePolicy:RolePolicy", "p", {
        "role": Ref(role, "id"), "arn": Ref(role, "arn"), "name": Ref(role, "name"),
        "size": 3, "flags": (True, 2)}))
    p = _records(g)["p"]
    assert p.dependencies == (_records(g)["role"].urn,)
    # the ID the mocks give, a computed output, an input nobody set (unknown), numbers as doubles
    assert p.inputs == {"role": "role-id", "arn": "arn:aws:iam::000000000000:role/offline", "name": UNKNOWN,
                        "size": 3.0, "flags": [True, 2.0]}


def test_secrets_are_wrapped_where_they_occur_and_unknowns_stay_unknown():
    g = Graph()
    gw = g.add(Node("kubernetes:gateway.networking.k8s.io/v1:Gateway", "gw", {"spec": {}}))
    comp = g.add(Node("modelplane:index:Thing", "box", custom=False))
    g.add(Node("kubernetes:core/v1:Secret", "s", {"stringData": Secret({"t": SecretValue("k")}),
                                                  "other": {"x": Apply(str.upper, (SecretValue("k"),))}}, comp))
    g.nodes[comp].outputs = {"address": Apply(lambda s: s, (Ref(gw, "status"),)), "n": 1}
    r = _records(g)
    assert r["s"].inputs["stringData"] == {SIG_KEY: "1b47061264138c4ac30d75fd1eb44270",
                                            "value": {"t": "offline-placeholder-kubeconfig"}}
    assert r["s"].inputs["other"]["x"][SIG_KEY] and r["s"].inputs["other"]["x"]["value"].isupper()
    # a component's outputs as the engine returns them: unknown as the engine's text
    assert r["box"].outputs == {"address": UNKNOWN_TEXT, "n": 1.0}


def test_sdk_additions_and_provider_config_as_strings():
    g = Graph()
    prov = g.add(Node("pulumi:providers:aws", "p", {"region": "us-east-1"}))
    g.add(Node("aws:route53/record:Record", "r", {"ttl": 60}, provider=prov))
    g.add(Node("kubernetes:helm.sh/v3:Release", "rel", {"chart": "x", "skipCrds": None}))
    r = _records(g)
    assert r["p"].inputs == {"region": "us-east-1", "skipCredentialsValidation": "false",
                             "skipRegionValidation": "true"}
    assert r["r"].provider == f"{r['p'].urn}::p-id"
    assert r["rel"].inputs == {"chart": "x", "compat": "true"}

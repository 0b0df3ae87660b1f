"""modelplane.manifests: the repository's own upstream schemas and validator (no ../shared needed)."""
import copy
import hashlib
import re

import pytest
import yaml
from click.testing import CliRunner

from modelplane.cli import main
from modelplane.manifests import SCHEMA_DIR, Catalog, read_documents
from modelplane.manifests import rules as crd_rules


def git_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_every_schema_file_is_listed_in_sources_with_its_blob():
    rows = re.findall(r"^\| `([^`]+)` \|.* ([0-9a-f]{40}) \|$", (SCHEMA_DIR / "SOURCES.md").read_text(), re.M)
    files = {p.relative_to(SCHEMA_DIR).as_posix() for p in SCHEMA_DIR.rglob("*") if p.is_file()} - {"SOURCES.md"}
    assert {f for f, _ in rows} == files
    for name, blob in rows:
        assert git_blob((SCHEMA_DIR / name).read_bytes()) == blob, name


def crds():
    for path in sorted(SCHEMA_DIR.rglob("*")):
        if path.suffix in (".yaml", ".json"):
            for doc in read_documents(path):
                if doc.get("kind") == "CustomResourceDefinition":
                    yield doc


def cel_rules(node):
    if isinstance(node, dict):
        yield from node.get("x-kubernetes-validations") or ()
        for value in node.values():
            yield from cel_rules(value)
    elif isinstance(node, list):
        for value in node:
            yield from cel_rules(value)


def test_every_crd_rule_compiles_with_cel_python():
    found = [r["rule"] for crd in crds() for r in cel_rules(crd["spec"]["versions"])]
    assert len(found) > 400
    for rule in set(found):
        crd_rules._program(rule)


@pytest.fixture(scope="module")
def schemas():
    return Catalog()


LLMIS = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "LLMInferenceService",
         "metadata": {"name": "m", "namespace": "ml"},
         "spec": {"model": {"uri": "hf://org/m"}, "replicas": 1}}
ROUTE = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "r", "namespace": "ml"},
         "spec": {"parentRefs": [{"name": "inference", "namespace": "gw"}],
                  "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/v1/"}}],
                             "backendRefs": [{"name": "svc", "port": 8000}]}]}}


def edited(obj, fn):
    obj = copy.deepcopy(obj)
    fn(obj["spec"])
    return obj


def test_valid_objects_pass(schemas):
    assert schemas.check(LLMIS) == ("ok", "")
    assert schemas.check(ROUTE) == ("ok", "")


@pytest.mark.parametrize("obj,problems", [
    (edited(LLMIS, lambda s: s.update(scaling={"maxReplicas": 2})),
     ["spec: replicas and scaling are mutually exclusive; use scaling for autoscaled deployments or replicas for "
      "static deployments",
      "spec.scaling: wva is required when scaling is configured; it provides the autoscaling mechanism"]),
    (edited(ROUTE, lambda s: s["rules"][0].update(timeouts={"request": "1s", "backendRequest": "10s"})),
     ["spec.rules[0].timeouts: backendRequest timeout cannot be longer than request timeout"]),
    (edited(ROUTE, lambda s: s["rules"][0]["matches"][0]["path"].update(value="/v1/?x")),
     ["spec.rules[0].matches[0].path: must only contain valid characters (matching "
      "^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$) for types ['Exact', 'PathPrefix']"]),
])
def test_the_crds_own_cel_rules_run(schemas, obj, problems):
    assert schemas.problems(obj) == problems
    assert schemas.check(obj)[0] == "FAIL"


@pytest.mark.parametrize("obj,problem", [
    (edited(LLMIS, lambda s: s.update(replcas=2)), 'spec: unknown field "replcas"'),
    ({**LLMIS, "metadata": {"name": "m", "labels": {"a": 1}}}, "metadata.labels.a: 1 is not of type 'string'"),
    ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"prots": []}},
     'spec: unknown field "prots"'),
    (edited(ROUTE, lambda s: s["rules"][0]["backendRefs"][0].update(port="http")), "port: 'http' is not of type"),
])
def test_structure_is_checked_for_crds_and_built_in_kinds(schemas, obj, problem):
    status, message = schemas.check(obj)
    assert status == "FAIL" and problem in message


def test_int_or_string_fields_take_both(schemas):
    for port in (8000, "http"):
        obj = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
               "spec": {"ports": [{"port": 80, "targetPort": port}]}}
        assert schemas.check(obj) == ("ok", "")


def test_a_kind_without_a_schema_is_unknown(schemas):
    assert schemas.check({"apiVersion": "example.com/v1", "kind": "Widget"}) == ("unknown", "")


def test_create_semantics_defaults_first_transition_rules_skipped():
    schema = {"type": "object", "properties": {"a": {"type": "integer", "default": 1}, "n": {"type": "number"}},
              "x-kubernetes-validations": [{"rule": "self.a == 1", "message": "a is 1"},
                                           {"rule": "self.n > 0.5", "message": "n above a half"},
                                           {"rule": "self.a == oldSelf.a", "message": "immutable"}]}
    assert crd_rules.violations(schema, crd_rules.defaulted(schema, {"n": 1})) == []
    assert crd_rules.violations(schema, {"n": 1})[0][1].startswith("rule 'self.a == 1' does not evaluate")
    assert crd_rules.violations(schema, {"a": 2, "n": 0}) == [("(root)", "a is 1"), ("(root)", "n above a half")]
    schema["x-kubernetes-validations"][2]["optionalOldSelf"] = True
    assert "optionalOldSelf" in crd_rules.violations(schema, {"a": 1, "n": 1})[0][1]


def test_validate_command(tmp_path):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(yaml.safe_dump(LLMIS))
    bad.write_text(yaml.safe_dump(edited(LLMIS, lambda s: s.update(scaling={"maxReplicas": 2}))))
    ok = CliRunner().invoke(main, ["validate", str(good)])
    assert ok.exit_code == 0 and ok.output.startswith("ok serving.kserve.io/v1alpha1/LLMInferenceService m")
    failed = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert failed.exit_code == 1
    assert "FAIL serving.kserve.io/v1alpha1/LLMInferenceService m: spec: replicas and scaling" in failed.output

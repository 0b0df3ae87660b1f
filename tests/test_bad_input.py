"""The bad-input corpus: every kind of wrong input `modelplane plan` is refused with file, line,
field and fix, exit 2, nothing written and nothing internal printed (issue #27)."""
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from modelplane.cli import main

ROOT = Path(__file__).resolve().parents[1]
DEV = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
E = "engine:\n        args: [--max-model-len=32768, --gpu-memory-utilization=0.90]"
REPLICAS = "      replicas: 2\n"
SLO = "      slo: {ttftMs: 1000, itlMs: 20}\n      traffic: {requestsPerSecond: 20, inputTokens: 4000, outputTokens: 500}\n"
CLUSTERS = "  modelplane:clusters:\n"
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"     # shaped like a Hugging Face token; not a real one
# What never belongs in a message: Python's own words and the libraries' internals.
INTERNALS = re.compile(r"Traceback|Error:|<class|object has no attribute|pydantic|celpy|Token\(|NameContainer|"
                       r"Activation\(|errors\.pydantic\.dev|IntType|StringType|\bNone\b|\bTrue\b|\bFalse\b")


def sub(old, new, count=1):
    assert old in DEV, old
    return DEV.replace(old, new, count)


# id -> (stack file text or bytes, line the problem is on (None: no line), words the message holds)
STACKS = {
    # YAML hazards
    "duplicate-key": (sub(REPLICAS, REPLICAS + "      replicas: 3\n"), 26,
                      "key 'replicas' appears twice in one mapping (first on line 25)"),
    "duplicate-top-level-key": (DEV + "  modelplane:deployments: []\n", 46, "appears twice"),
    "not-utf8": (DEV.encode().replace(b"dev-gke", b"dev-\xffgke", 1), 10, "not UTF-8 text"),
    "nul": (DEV.encode().replace(b"dev-gke", b"dev-\x00gke", 1), 10, "holds a NUL character"),
    "billion-laughs": ("a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in zip("abcdef", "bcdefg")) +
        "config: {modelplane:clusters: *g}\n", 6, "expands to more than 200,000 values"),
    "recursive-alias": ("config:\n  modelplane:clusters: &a [*a]\n", 2, "refers to a value that holds it"),
    "deep-nesting": ("config:\n  modelplane:clusters: " + "[" * 3000 + "]" * 3000 + "\n", None, "nests too deeply"),
    "unterminated-quote": (sub("cel: 'gpu.memoryGiB >= 24'", "cel: 'gpu.memoryGiB >= 24"), 26,
                           "the quoted string that starts on this line runs on"),
    "tab-indent": (sub("    - name: dev-gke", "\t- name: dev-gke"), 10, "not valid YAML"),
    # shape of the file
    "config-a-list": ("config:\n  - a\n", 2, "'config' holds a list; it is a mapping of namespace:key settings"),
    "config-a-string": ("config: hello\n", 1, "'config' holds text"),
    "file-a-list": ("- a\n- b\n", 1, "the file holds a list; a stack file is a mapping"),
    "file-a-scalar": ("hello\n", 1, "the file holds text"),
    "empty-file": ("", 1, "the file has no modelplane settings"),
    "misspelt-namespace": (sub("modelplane:clusters", "modelplan:clusters"), 10, "did you mean 'modelplane:clusters'?"),
    "setting-as-secret": (sub(CLUSTERS, "  modelplane:production:\n    secure: abc\n" + CLUSTERS), 10,
                          "'modelplane:production' is a setting, but holds an encrypted secret"),
    "unknown-top-level-key": ("config: {}\nfoo: 1\n", 2, "unknown top-level key 'foo'"),
    "null-key": (sub("{name: l4, class:", "{~: x, name: l4, class:"), 14, "nodePools[0]: key nothing (null) is not text"),
    "non-text-config-key": ("config:\n  modelplane:clusters: []\n  5: x\n", 3, "config key 5 is not text"),
    # types and ranges
    "yaml11-boolean-replicas": (sub("replicas: 2", "replicas: yes"), 25, "expected a whole number, got true"),
    "quoted-number": (sub("replicas: 2", "replicas: '2'"), 25, "expected a whole number, got '2'"),
    "float-replicas": (sub("replicas: 2", "replicas: 2.0"), 25, "expected a whole number, got 2.0"),
    "huge-max-nodes": (sub("maxNodes: 4, zones: [us-central1-a]", "maxNodes: 99999999999999999999, zones: "
                           "[us-central1-a]"), 14, "must be at most 15000, got 99999999999999999999"),
    "infinite-price": (sub("capacity: {type: spot}", "capacity: {type: spot, hourly: .inf}"), 16,
                       "expected a finite number, got .inf"),
    "nan-size": (sub("uri: hf://openai/gpt-oss-20b", "uri: hf://openai/gpt-oss-20b, sizeGiB: .nan"), 24,
                 "expected a finite number, got .nan"),
    "string-production": (sub(CLUSTERS, "  modelplane:production: 'yes'\n" + CLUSTERS), 9,
                          "expected true or false, got 'yes'"),
    "version-as-number": (sub('version: "1.34"', "version: 1.34"), 12, "expected text, got 1.34"),
    "queue-limit-below-quota": (sub("gpuQuota: 40}", "gpuQuota: 40, gpuLimit: 8}"), 18,
                                "queues[0].gpuLimit: gpuLimit (8) is below gpuQuota (40)"),
    "queue-limit-zero": (sub("gpuQuota: 40}", "gpuQuota: 40, gpuLimit: 0}"), 18,
                         "queues[0].gpuLimit: gpuLimit 0 lets no GPU pod"),
    # protect is lifted only from what this stack creates
    "unprotect-unknown-pool": (sub(CLUSTERS, "  modelplane:unprotect: [dev-gke/l40]\n" + CLUSTERS), 9,
                               "'dev-gke/l40' is not a cluster or node pool this stack creates"),
    "unprotect-not-a-list": (sub(CLUSTERS, "  modelplane:unprotect: dev-gke\n" + CLUSTERS), 9, "expected a list"),
    # names that collide once derived
    "pool-named-system": (sub("{name: l4,", "{name: system,"), 14, "is the cluster's own system node pool"),
    "cluster-pool-names-collide": (sub("  modelplane:deployments:", """    - name: dev
      gke: {project: modelplane-dev, region: us-central1}
      nodePools:
        - {name: gke-l4, class: gke-l4-1x-g2, maxNodes: 1, zones: [us-central1-a]}
  modelplane:deployments:"""), 23, "is named 'dev-gke-l4' in the cloud, like pool 'l4' of cluster dev-gke"),
    "component-names-collide": (sub("- name: llama-70b\n      namespace: ml-team", "- name: team-gpt\n      namespace: ml"
                                    ).replace("- name: gpt-oss-20b\n      namespace: ml-team",
                                              "- name: gpt\n      namespace: ml-team"), 33,
                                "both become the component 'ml-team-gpt'"),
    "fleet-listed-twice": (sub(CLUSTERS, "  modelplane:fleet: [infra-gke-us-central1, infra-gke-us-central1]\n" +
                               CLUSTERS), 9, "stack 'infra-gke-us-central1' is listed twice"),
    # CEL
    "cel-parse": (sub("'gpu.memoryGiB >= 24'", "'gpu.memoryGiB >>= 24'"), 26, "does not parse (at column 16)"),
    "cel-unknown-field": (sub("'gpu.memoryGiB >= 24'", "'gpu.memGiB >= 24'"), 26, "no field 'memGiB'"),
    "cel-unknown-variable": (sub("'gpu.memoryGiB >= 24'", "'gpux.memoryGiB >= 24'"), 26, "unknown name 'gpux'"),
    "cel-type-mismatch": (sub("'gpu.memoryGiB >= 24'", "'gpu.memoryGiB >= \"24\"'"), 26,
                          "'>=' cannot compare or combine int and string"),
    "cel-not-boolean": (sub("'gpu.memoryGiB >= 24'", "'gpu.memoryGiB'"), 26, "yields int, not true or false"),
    "cel-nesting": (sub("'gpu.memoryGiB >= 24'", "'" + "(" * 500 + "true" + ")" * 500 + "'"), 26,
                    "nests brackets more than 32 levels deep"),
    # Kubernetes syntax
    "label-value-space": (sub("modelplane.ai/tier: development", "modelplane.ai/tier: 'has space'"), 11,
                          "is not a valid Kubernetes label value"),
    "label-value-too-long": (sub("modelplane.ai/tier: development", "modelplane.ai/tier: " + "a" * 64), 11,
                             "is not a valid Kubernetes label value"),
    "label-key-prefix-too-long": (sub("modelplane.ai/tier: development", "a" * 254 + "/tier: x"), 11,
                                  "the prefix must be a DNS subdomain"),
    "pool-label-overrides-pool": (sub("{name: l4, class: gke-l4-1x-g2,", "{name: l4, class: gke-l4-1x-g2, labels: "
                                      "{modelplane.ai/pool: h100},"), 14, "label 'modelplane.ai/pool' is set by modelplane"),
    "taint-key": (sub("{name: l4, class: gke-l4-1x-g2,", "{name: l4, class: gke-l4-1x-g2, taints: [{key: 'bad key!'}],"),
                  14, "taint key 'bad key!'"),
    "taint-repeats-gpu-taint": (sub("{name: l4, class: gke-l4-1x-g2,", "{name: l4, class: gke-l4-1x-g2, taints: "
                                    "[{key: nvidia.com/gpu}],"), 14, "taint nvidia.com/gpu:NoSchedule is set twice"),
    "namespace-uppercase": (sub("namespace: ml-team\n      model: {uri: hf://openai", "namespace: ML\n      model: "
                                "{uri: hf://openai"), 23, "'ML' is not a valid name"),
    "secret-ref-name": (sub(E, "engine:\n        env: [{name: X, valueFrom: {secretKeyRef: {name: 'Bad Name', key: k}}}]"),
                        29, "name 'Bad Name' is not a DNS subdomain"),
    "cpu-quantity": (sub(REPLICAS, REPLICAS + "      roles: [{name: router, image: 'nginx:1.27', cpu: lots}]\n"), 26,
                     "'lots' is not a Kubernetes quantity"),
    # sizing from an SLO (docs/sizing.md)
    "slo-and-replicas": (sub(REPLICAS, REPLICAS + SLO), 22, "replicas is set together with slo; sizing chooses the "
                         "replica count"),
    "slo-without-traffic": (sub(REPLICAS, "      slo: {ttftMs: 1000, itlMs: 20}\n"), 22,
                            "sizing needs both slo and traffic; traffic is missing"),
    "neither-replicas-nor-slo": (sub(REPLICAS, ""), 22, "the deployment sets neither replicas nor an slo"),
    "slo-not-positive": (sub(REPLICAS, SLO.replace("itlMs: 20", "itlMs: 0")), 25, "slo.itlMs: must be greater than 0"),
    "slo-with-coordination": (sub(REPLICAS, SLO + "      coordination: {totalWorkers: 2, bands: [{role: decode, min: 0, "
                                  "max: 100}]}\n"), 22, "coordination cannot be combined with slo"),
    "slo-no-profile": (sub(REPLICAS, SLO), None, "no sizing profile of hf://openai/gpt-oss-20b for 4000 input / 500 "
                       "output tokens"),
    # cloud identifiers
    "region-with-yaml-in-it": (sub("region: us-central1,", 'region: "us-central1\\nfoo: bar",'), 12,
                               "text of 20 characters (not shown) is not a GCP region"),
    "zone-is-a-subnet": (sub("zones: [us-central1-a]", "zones: [subnet-0123]"), 14, "'subnet-0123' is not a zone"),
    # image references
    "image-empty-tag": (sub(E, "engine:\n        image: 'vllm/vllm-openai:'"), 29, "is not a valid OCI image reference"),
    "image-with-space": (sub(E, "engine:\n        image: 'vllm/vllm openai:v1'"), 29, "contains whitespace"),
    "image-with-flag": (sub(E, "engine:\n        image: 'vllm/vllm-openai:v1 --privileged'"), 29, "contains whitespace"),
    "image-bad-digest": (sub(E, "engine:\n        image: 'vllm/vllm-openai@sha256:abc'"), 29,
                         "is not a valid OCI image reference"),
    # secrets in plain sight (the test also checks the token is never echoed)
    "token-in-args": (sub("args: [--max-model-len=32768,", f"args: [--hf-token={HF}, --max-model-len=32768,"), 29,
                      "an argument holds a credential (Hugging Face Token) in plain text (not shown)"),
    "token-in-env": (sub(E, f"engine:\n        env: [{{name: HF_HOME, value: {HF}}}]"), 29,
                     "env var HF_HOME holds a credential (Hugging Face Token)"),
    "aws-key-in-env": (sub(E, "engine:\n        env: [{name: FOO, value: AKIAIOSFODNN7EXAMPLE}]"), 29,
                       "holds a credential (AWS Access Key)"),
    "private-key-in-args": (sub("args: [--max-model-len=32768,", "args: ['-----BEGIN PRIVATE KEY-----',"), 29,
                            "holds a credential (Private Key)"),
    "kubeconfig-as-secret-name": (sub("tokenSecret: hfToken", 'tokenSecret: "apiVersion: v1\\nclusters: []\\n'
                                      'users: [{user: {token: abc}}]"'), 35, "(not shown) is not the name of a secret "
                                  "config key"),
    "kubeconfig-as-kubeconfig-secret": (sub('gke: {project: modelplane-dev, region: us-central1, version: "1.34", '
                                            'deletionProtection: false}', 'existing: {kubeconfigSecret: "apiVersion: v1'
                                            '\\nkind: Config\\nusers:\\n- user: {token: abc}"}'), 12,
                                        "existing.kubeconfigSecret: text of 55 characters (not shown)"),
    # parallelism (issue 36): engine args against the topology, expert parallelism against the model
    "engine-args-data-parallel": (sub("args: [--max-model-len=32768,", "args: [--data-parallel-size=8, --max-model-len=32768,"),
                                  29, "--data-parallel-size=8 contradicts workers.topology.data (1)"),
    "engine-args-tensor-alias": (sub("args: [--max-model-len=32768,", "args: [-tp, '2', --max-model-len=32768,"), 29,
                                 "-tp 2 contradicts workers.topology.tensor (1)"),
    "engine-args-expert-flag": (sub("args: [--max-model-len=32768,", "args: [--enable-expert-parallel, --max-model-len=32768,"),
                                29, "--enable-expert-parallel asks for expert parallelism, which workers.topology does not have"),
    "engine-args-prefill-pipeline": (sub("          args: [--max-model-len=65536,", "          args: [--pipeline_parallel_size=2, "
                                         "--max-model-len=65536,"), 45,
                                     "--pipeline_parallel_size=2 contradicts prefill.workers.topology.pipeline (1)"),
    "expert-on-dense-model": (sub("workers: {count: 1, topology: {tensor: 8}}", "workers: {count: 1, topology: {tensor: 8, "
                                 "expert: true}}"), 38, "hf://meta-llama/Llama-3.3-70B-Instruct is a dense model"),
    "expert-with-one-rank": (sub("topology: {tensor: 1}}", "topology: {tensor: 1, expert: true}}"), 27,
                             "expert: true shards the experts over tensor x data ranks, and both are 1"),
    "nvl72-pool-beyond-one-domain": (sub("{name: l4, class: gke-l4-1x-g2, minNodes: 0, maxNodes: 4, zones: [us-central1-a]}",
                                         "{name: l4, class: gke-gb200-4x-a4x, minNodes: 0, maxNodes: 36, zones: "
                                         "[us-central1-a], capacity: {type: reservation, reservation: r}}"), 14,
                                     "may grow to 36 nodes, but one NVLink domain of gke-gb200-4x-a4x holds 18"),
}


def plan(*args):
    return CliRunner().invoke(main, ["plan", *map(str, args)])


def refused(result, file: str, line, words: str):
    text = result.output
    assert result.exit_code == 2, text
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), text
    assert words in text, text
    assert (f"{file}:{line}:" if line else f"{file}:") in text, text
    assert "fix:" in text and not INTERNALS.search(text), text


@pytest.mark.parametrize("name", sorted(STACKS))
def test_bad_stack_file_is_refused_with_file_line_field_and_fix(tmp_path, name):
    body, line, words = STACKS[name]
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_bytes(body if isinstance(body, bytes) else body.encode())
    result = plan("dev", "--config-file", path, "--out", tmp_path / "out", "--report", tmp_path / "r.html")
    refused(result, str(path), line, words)
    assert not (tmp_path / "out").exists() and not (tmp_path / "r.html").exists()
    assert HF not in result.output and "AKIAIOSFODNN7EXAMPLE" not in result.output and "users:" not in result.output


def test_a_stack_exported_by_the_fleet_and_declared_again_is_refused(tmp_path):
    prod = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(prod.replace("  modelplane:fleet:", """  modelplane:clusters:
    - name: gke-euw4
      gke: {project: acme-ml-prod-eu, region: europe-west4}
      nodePools: [{name: l4, class: gke-l4-4x-g2, maxNodes: 8, zones: [europe-west4-a]}]
  modelplane:fleet:"""))
    result = plan("prod", "--config-file", path, "--out", tmp_path / "out")
    # the second declaration, this file's cluster entry, not the fleet entry (issue 47)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "- name: gke-euw4" in text)
    refused(result, str(path), line, "modelplane:clusters[0].name: cluster 'gke-euw4' is exported by stack "
            "'infra-gke-europe-west4' and also declared by this stack")
    assert not (tmp_path / "out").exists()


def test_a_cluster_two_infra_stacks_export_points_at_the_second_declaration(tmp_path):
    for name in ("prod", "infra-gke-us-central1", "infra-eks-us-east-1", "infra-gke-europe-west4"):
        (tmp_path / f"Pulumi.{name}.yaml").write_text((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text())
    eks = tmp_path / "Pulumi.infra-eks-us-east-1.yaml"
    text = eks.read_text()
    assert "- name: eks-use1" in text
    eks.write_text(text.replace("- name: eks-use1", "- name: gke-usc1"))
    result = plan("prod", "--config-file", tmp_path / "Pulumi.prod.yaml")
    line = next(i for i, t in enumerate(eks.read_text().splitlines(), 1) if "- name: gke-usc1" in t)
    refused(result, str(eks), line, "modelplane:clusters[0].name: cluster 'gke-usc1' is exported by stack "
            "'infra-eks-us-east-1' and also declared by stack 'infra-gke-us-central1'")


def test_a_fleet_entry_without_its_infra_stack_names_its_line(tmp_path):
    prod = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(prod.replace("  modelplane:fleet: [infra-gke-us-central1, infra-eks-us-east-1, infra-gke-europe-west4]",
                                 "  modelplane:fleet:\n    - infra-gke-us-central1\n    - infra-eks-us-east-1\n"
                                 "    - infra-eks-us-west-2"))
    result = plan("prod", "--config-file", path, "--out", tmp_path / "out")
    line = path.read_text().splitlines().index("    - infra-eks-us-west-2") + 1
    refused(result, str(path), line, "config.modelplane:fleet[2]: fleet names stack 'infra-eks-us-west-2', which has no "
            "Pulumi.infra-eks-us-west-2.yaml beside this file or in the project's stacks")
    assert "did you mean 'infra-eks-us-east-1'?" in result.output and not (tmp_path / "out").exists()


def test_every_policy_verdict_says_how_to_fix_it():
    """A refused plan (a mandatory violation, exit 1) names each verdict's stack-file line and a fix."""
    result = plan("prod", "--without", "eks-use1")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("policy ")]
    assert heads
    for start, end in zip(heads, heads[1:] + [len(lines)]):
        block = lines[start + 1:end]
        assert block[-1].startswith("  fix: ") and len(block[-1]) > len("  fix: ") + 10, block
        assert all(re.match(r"  stacks/Pulumi\.prod\.yaml:\d+ ", line) for line in block[:-1]), block


PREVIOUS = {"stack": "dev", "placements": [{"deployment": "ml-team/gpt-oss-20b", "replica": 0, "cluster": "dev-gke",
                                            "roles": {"decode": {"pool": "l4", "nodes": 1, "gpusPerNode": 1,
                                                                 "workers": 1}}}]}


def _with(**change):
    doc = json.loads(json.dumps(PREVIOUS))
    doc["placements"][0].update(change)
    return json.dumps(doc, indent=1)


# id -> (document text, line, words)
PREVIOUS_DOCS = {
    "null-roles": (_with(roles=None), 8, "placements[0].roles: expected a mapping, got nothing (null)"),
    "string-replica": (_with(replica="0"), 6, "placements[0].replica: expected a whole number, got '0'"),
    "negative-nodes": (_with(roles={"decode": {"pool": "l4", "nodes": -1, "gpusPerNode": 1, "workers": 1}}), 11,
                       "placements[0].roles.decode.nodes: must be at least 0, got -1"),
    "infinite-nodes": (_with(roles={"decode": {"pool": "l4", "nodes": 1e400, "gpusPerNode": 1, "workers": 1}}), None,
                       "Infinity is not a number JSON allows"),
    "huge-nodes": (_with(roles={"decode": {"pool": "l4", "nodes": 1e300, "gpusPerNode": 1, "workers": 1}}), 11,
                   "placements[0].roles.decode.nodes: expected a whole number, got 1e+300"),
    "nan": (json.dumps(PREVIOUS).replace('"replica": 0', '"replica": NaN'), None, "NaN is not a number JSON allows"),
    "another-stack": (json.dumps({**PREVIOUS, "stack": "prod"}), 1, "this is a plan of stack 'prod', not 'dev'"),
    "older-format-list": (json.dumps(PREVIOUS["placements"]), 1, "a bare list of placements (an older format)"),
    "no-stack": (json.dumps({"placements": []}), 1, "not a plan document: it needs 'stack' and 'placements'"),
    "null-placements": (json.dumps({"stack": "dev", "placements": None}), 1, "placements: expected a list"),
    "not-json": ("{'stack': 'dev'}", 1, "not a JSON document"),
    "placed-twice": (json.dumps({"stack": "dev", "placements": PREVIOUS["placements"] * 2}), 1,
                     "ml-team/gpt-oss-20b replica 0 is placed twice"),
    "zero-tensor": (_with(roles={"decode": {"pool": "l4", "nodes": 1, "gpusPerNode": 1, "workers": 1,
                                            "topology": {"tensor": 0, "pipeline": 1, "data": 1, "dataLocal": 1}}}), 15,
                    "placements[0].roles.decode.topology.tensor: must be at least 1, got 0"),
    "topology-missing-axis": (_with(roles={"decode": {"pool": "l4", "nodes": 1, "gpusPerNode": 1, "workers": 1,
                                                      "topology": {"tensor": 1}}}), 14,
                              "topology.pipeline: required field 'pipeline' is missing"),
    "slot-two": (_with(slot=2), 16, "placements[0].slot: must be at most 1, got 2"),
}


def refuses_file(tmp_path, option, text, line, words):
    """`plan dev OPTION FILE --out DIR` with FILE holding `text`: refused naming FILE (and `line`),
    saying `words`, and nothing written."""
    path = tmp_path / "given.json"
    path.write_text(text)
    result = plan("dev", option, path, "--out", tmp_path / "out")
    refused(result, str(path), line, words)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", sorted(PREVIOUS_DOCS))
def test_a_malformed_previous_plan_is_refused_naming_the_file_and_field(tmp_path, name):
    refuses_file(tmp_path, "--previous", *PREVIOUS_DOCS[name])


# id -> (policy config text, line, words)
POLICY_CONFIGS = {
    "empty": ("", None, "the policy config is empty"),
    "not-an-object": ("[]", 1, "a policy config is a JSON object of policy names"),
    "trailing-comma": ('{"gpu-budget": {"maxGpus": 8},\n}', 2, "cannot read policy config"),
    "misspelt-property": ('{"gpu-budget": {"enforcementLevel": "mandatory", "maxGPUs": 8}}', 1,
                          "did you mean 'maxGpus'? (maxGpus: a whole number >= 0)"),
    "unknown-policy": ('{"gpu-budgit": "mandatory"}', 1, "did you mean 'gpu-budget'?"),
    "wrong-type": ('{\n"gpu-budget": {"maxGpus": "8"}}', 2, "gpu-budget.maxGpus: '8' is not a whole number >= 0"),
    "boolean-number": ('{"gpu-budget": {"maxGpus": true}}', 1, "true is not a whole number >= 0"),
    "level-a-number": ('{"gpu-budget": 5}', 1, "expected an enforcement level or an object of settings"),
    "level-misspelt": ('{"gpu-budget": "mandatroy"}', 1, "did you mean 'mandatory'?"),
    "all-with-settings": ('{"all": {"maxGpus": 1}}', 1, "'all' takes an enforcement level, not settings"),
    "namespace-budget": ('{"cost-budget": {"namespaces": {"chat": -1}}}', 1,
                         "cost-budget.namespaces.chat: -1 is not a number >= 0"),
}


@pytest.mark.parametrize("name", sorted(POLICY_CONFIGS))
def test_a_bad_policy_config_is_refused_before_anything_runs(tmp_path, name):
    refuses_file(tmp_path, "--policy-config", *POLICY_CONFIGS[name])


def test_a_missing_policy_config_is_refused():
    result = plan("dev", "--policy-config", "/nonexistent/policy.json")
    refused(result, "/nonexistent/policy.json", None, "cannot read policy config: No such file or directory")


def test_an_unknown_stack_suggests_the_stacks_that_exist():
    result = plan("dve")
    assert result.exit_code == 2 and "no stack 'dve' (no stacks/Pulumi.dve.yaml)" in result.output
    assert "fix: did you mean 'dev'?" in result.output
    result = plan("zzzzzz")
    assert "stacks here: dev, example-5p3d" in result.output


def test_out_must_be_a_creatable_folder_without_foreign_files(tmp_path):
    (tmp_path / "file").write_text("x")
    refused(plan("dev", "--out", tmp_path / "file"), str(tmp_path / "file"), None, "--out: is a file, not a folder")
    refused(plan("dev", "--out", tmp_path / "file" / "sub"), str(tmp_path / "file" / "sub"), None,
            f"cannot create it: {tmp_path / 'file'} is a file")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    refused(plan("dev", "--out", tmp_path / "mine"), str(tmp_path / "mine"), None,
            "the folder holds files but no .modelplane-out list of what a plan wrote there")
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]
    refused(plan("dev", "--report", tmp_path), str(tmp_path), None, "--report: is a folder")


def test_a_second_plan_into_the_same_folder_replaces_only_what_the_first_wrote(tmp_path):
    out = tmp_path / "out"
    assert plan("dev", "--out", out).exit_code == 0
    first = sorted(p for p in out.rglob("*") if p.is_file())
    stale = out / "dev-gke" / "ml-team" / "stale-object.yaml"     # as if an earlier plan had written it
    stale.write_text("kind: Stale\n")
    (out / ".modelplane-out").write_text((out / ".modelplane-out").read_text() + "dev-gke/ml-team/stale-object.yaml\n")
    doc = DEV.replace("replicas: 2", "replicas: 1")
    (tmp_path / "Pulumi.dev.yaml").write_text(doc)
    assert plan("dev", "--config-file", tmp_path / "Pulumi.dev.yaml", "--out", out).exit_code == 0
    second = sorted(p for p in out.rglob("*") if p.is_file())
    assert not stale.exists() and set(second) < set(first)
    assert all("gpt-oss-20b-1" in str(p) for p in set(first) - set(second))


def test_explain_of_an_unknown_deployment_writes_nothing_and_explain_goes_into_json(tmp_path):
    result = plan("dev", "--explain", "lama-70b", "--out", tmp_path / "out", "--report", tmp_path / "r.html")
    assert result.exit_code == 2 and "no deployment 'lama-70b' in this stack" in result.output
    assert "did you mean 'ml-team/llama-70b'?" in result.output or "choose one of" in result.output
    assert not (tmp_path / "out").exists() and not (tmp_path / "r.html").exists()
    result = plan("dev", "--json", "--explain", "llama-70b")
    doc = json.loads(result.stdout)
    assert doc["explain"]["deployment"] == "ml-team/llama-70b"
    assert {r["verdict"].split()[0] for r in doc["explain"]["rows"]} >= {"bound"}


# Shapes the Filter refuses (issue 36): the plan places nothing, says why (also in --explain), and a
# production stack exits 1 on placement-complete.
UNPLACEABLE = {
    # gpt-oss-20b's experts over 16 ranks on two A3 High nodes: their GPUDirect-TCPX carries no all-to-all
    "expert-parallel-across-tcpx": ("workers: {count: 1, topology: {tensor: 1}}",
                                    "workers: {count: 1, topology: {tensor: 1, data: 16, dataLocal: 8, expert: true}}",
                                    "fabric", "expert parallelism over 2 nodes per worker exchanges tokens all-to-all"),
    # 20 A4X nodes per worker, one NVLink domain holds 18
    "worker-larger-than-its-nvlink-domain": ("workers: {count: 1, topology: {tensor: 1}}",
                                             "nodeSelector: {cel: 'gpu.product == \"GB200\"'}\n      "
                                             "workers: {count: 1, topology: {tensor: 1, data: 80, dataLocal: 4, expert: true}}",
                                             "nvlinkDomain", "decode spans 20 nodes per worker; one NVLink domain of "
                                             "gke-gb200-4x-a4x holds 18 nodes"),
}
A4X_POOL = ("        - {name: gb200, class: gke-gb200-4x-a4x, maxNodes: 18, zones: [us-central1-a],\n"
            "           capacity: {type: reservation, reservation: a4x-rack}}\n")


@pytest.mark.parametrize("name", sorted(UNPLACEABLE))
def test_a_shape_the_filter_refuses_is_unplaced_with_its_reason(tmp_path, name):
    old, new, reason, words = UNPLACEABLE[name]
    body = sub(old, new).replace("      nodeSelector: {cel: 'gpu.memoryGiB >= 24'}\n", "", 1)
    body = body.replace("      queues:\n", A4X_POOL + "      queues:\n", 1)
    body = body.replace(CLUSTERS, "  modelplane:production: true\n" + CLUSTERS, 1)
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(body)
    result = plan("dev", "--config-file", path, "--explain", "gpt-oss-20b")
    assert result.exit_code == 1 and "placement-complete (mandatory" in result.output, result.output
    doc = json.loads(plan("dev", "--config-file", path, "--json", "--explain", "gpt-oss-20b").stdout)
    [stuck] = [u for u in doc["unplaced"] if u["deployment"] == "ml-team/gpt-oss-20b"][:1]
    assert any(r["reason"] == reason and words in r["detail"] for r in stuck["reasons"]), stuck
    assert any(row["verdict"] == "rejected" and row["reason"] == reason and words in row["detail"]
               for row in doc["explain"]["rows"])


def test_a_node_selector_over_the_pool_plans_and_explains(tmp_path):
    """Issue 44: `pool.capacity` and `cluster.*` are selectable through the loader's check and the
    plan; a false clause is explained with the pool's value."""
    body = sub("nodeSelector: {cel: 'gpu.memoryGiB >= 24'}",
               "nodeSelector: {cel: 'gpu.memoryGiB >= 24 && pool.capacity == \"spot\"'}")
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(body)
    result = plan("dev", "--config-file", path, "--explain", "gpt-oss-20b")
    assert result.exit_code == 0, result.output
    assert 'pool.capacity == "spot" is false (pool.capacity =' in result.output   # h100 (on-demand)
    body = sub("nodeSelector: {cel: 'gpu.memoryGiB >= 24'}", "nodeSelector: {cel: 'zone == \"a\"'}")
    path.write_text(body)
    result = plan("dev", "--config-file", path)
    assert result.exit_code == 2 and "unknown name 'zone'" in result.output and "pool.capacity" in result.output


def test_a_cluster_selector_in_cel_plans_explains_and_is_checked(tmp_path):
    """Issue 44: clusterSelector.cel sees cluster.labels, cluster.region and cluster.cloud; a false
    clause is explained with the cluster's value; a bad expression is refused at its line with the fix."""
    sel = "      nodeSelector: {cel: 'gpu.memoryGiB >= 24'}\n"
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(sub(sel, sel + "      clusterSelector: {cel: 'cluster.cloud == \"gcp\" && cluster.region == "
                        "\"us-central1\" && cluster.labels[\"modelplane.ai/tier\"] == \"development\"'}\n"))
    result = plan("dev", "--config-file", path, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert sum(p["deployment"] == "ml-team/gpt-oss-20b" for p in doc["placements"]) == 2
    path.write_text(sub(sel, sel + "      clusterSelector: {cel: 'cluster.cloud == \"gcp\" && cluster.region == \"europe-west4\"'}\n"))
    result = plan("dev", "--config-file", path, "--explain", "gpt-oss-20b")
    assert 'cel: cluster.region == "europe-west4" is false (cluster.region = "us-central1")' in result.output
    # a label the cluster lacks: not selected, and the reason says to guard it
    path.write_text(sub(sel, sel + "      clusterSelector: {cel: 'cluster.labels[\"team\"] == \"a\"'}\n"))
    result = plan("dev", "--config-file", path, "--explain", "gpt-oss-20b")
    assert 'guard what a cluster may lack ("team" in cluster.labels' in result.output, result.output
    for cel, words in (("gpu.count == 8", "unknown name 'gpu' (variables: cluster)"),
                       ("cluster.region", "yields string, not true or false"),
                       ("cluster.region ==", "does not parse")):
        path.write_text(sub(sel, sel + f"      clusterSelector: {{cel: '{cel}'}}\n"))
        result = plan("dev", "--config-file", path)
        refused(result, str(path), 27, words)
        assert "clusterSelector.cel" in result.output and 'cluster.cloud == "gcp"' in result.output, result.output

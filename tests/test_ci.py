"""Issue 39: `plan` in CI without glue. --format markdown is the pull-request comment, --format sarif
a SARIF 2.1.0 log whose results point at the stack file's lines (input problems and policy
verdicts), every verdict carries a fix, the plan document a version, and the exit status tells a
mandatory violation (1) from invalid input (2)."""
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from jsonschema import Draft4Validator

from modelplane.cli import main
from modelplane.policy import POLICIES

ROOT = Path(__file__).resolve().parents[1]
SARIF_SCHEMA = json.loads((ROOT / "schemas" / "sarif" / "sarif-schema-2.1.0.json").read_text())
DEV = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()


_PLANS: dict = {}


def plan(*args):
    """`modelplane plan ARGS`; the same arguments naming only the repository's stacks (no file a
    test writes) are planned once for the module: a plan is deterministic (issue 47: test time)."""
    args = tuple(map(str, args))
    if any("/" in a for a in args):
        return CliRunner().invoke(main, ["plan", *args])
    if args not in _PLANS:
        _PLANS[args] = CliRunner().invoke(main, ["plan", *args])
    return _PLANS[args]


def sarif_of(result) -> dict:
    log = json.loads(result.stdout)
    errors = sorted(Draft4Validator(SARIF_SCHEMA).iter_errors(log), key=str)
    assert not errors, errors[0]
    return log


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_invalid_input_and_a_mandatory_violation_exit_differently(tmp_path):
    bad = tmp_path / "Pulumi.dev.yaml"
    bad.write_text(DEV.replace("replicas: 2", "replica: 2"))
    assert plan("dev", "--config-file", bad).exit_code == 2
    assert plan("prod", "--without", "eks-use1").exit_code == 1          # a production stack loses replicas
    assert plan("dev").exit_code == 0
    usage = plan("dev", "--json", "--format", "markdown")
    assert usage.exit_code == 2 and "--json is --format json" in usage.output


def test_sarif_of_invalid_input_points_at_each_problems_file_and_line(tmp_path):
    bad = tmp_path / "Pulumi.dev.yaml"
    for text, rule, needle in ((DEV.replace("replicas: 2", "replica: 2"), "input", "replica: 2"),
                               (DEV.replace("{name: l4, class: gke-l4-1x-g2", "{name: l4, class: gke-l4"), "pool-class",
                                "{name: l4, class: gke-l4,")):
        bad.write_text(text)
        result = plan("dev", "--config-file", bad, "--format", "sarif")
        assert result.exit_code == 2 and "invalid input" in result.stderr
        log = sarif_of(result)
        results = log["runs"][0]["results"]
        where = {(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                  r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results}
        assert (rule, bad.resolve().as_uri(), line_of(text, needle)) in where, where
        assert all(r["level"] == "error" and "Fix: " in r["message"]["text"] for r in results)
        rules = log["runs"][0]["tool"]["driver"]["rules"]
        assert [rules[r["ruleIndex"]]["id"] for r in results] == [r["ruleId"] for r in results]


def test_sarif_of_policy_verdicts_points_at_the_stack_file_entry(tmp_path):
    config = tmp_path / "strict.json"
    config.write_text(json.dumps({"all": "mandatory", "gpu-budget": {"maxGpus": 1}}))
    result = plan("prod", "--without", "eks-use1", "--policy-config", config, "--format", "sarif")
    assert result.exit_code == 1
    log = sarif_of(result)
    prod = (ROOT / "stacks" / "Pulumi.prod.yaml").read_text()
    found = {(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"])
             for r in log["runs"][0]["results"]}
    qwen = line_of(prod, "- name: qwen3-32b")           # the deployment entry the verdict is about
    assert ("placement-complete", qwen) in found and ("rollout-complete", qwen) in found
    assert ("gpu-budget", line_of(prod, "modelplane:production")) in found      # stack-wide: the file's config
    assert ("flex-start-serving", line_of(prod, "- name: llama-70b")) in found
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris == {"stacks/Pulumi.prod.yaml"}        # relative to the repository, as code scanning wants
    driver = log["runs"][0]["tool"]["driver"]
    assert {r["id"]: r["help"]["text"] for r in driver["rules"]}["placement-complete"].startswith("Fix: make room")


def test_a_verdict_on_a_node_pool_points_at_the_pool_entry():
    from modelplane.analysis import origins
    from helpers import planned

    run = planned("infra-gke-us-central1", engine="direct")
    text = (ROOT / "stacks" / "Pulumi.infra-gke-us-central1.yaml").read_text()
    entry = yaml.safe_load(text)["config"]["modelplane:clusters"][0]
    j = len(entry["nodePools"]) - 1
    name = f"{entry['name']}-{entry['nodePools'][j]['name']}"
    assert any(r.name == name and r.type == "gcp:container/nodePool:NodePool" for r in run.records)
    located = origins.locate(run, ROOT / "stacks" / "Pulumi.infra-gke-us-central1.yaml",
                             [{"policy": "node-pool-bounds", "level": "mandatory", "message": "m", "resource": name}])
    assert located[0]["path"] == f"config.modelplane:clusters[0].nodePools[{j}]", located
    assert located[0]["line"] == line_of(text, f"{{name: {entry['nodePools'][j]['name']},")


def test_a_queue_over_its_quota_points_at_the_queues_gpu_quota(tmp_path):
    """queue-quota names the queue's gpuQuota in the file that declares the cluster: this stack's
    (dev) or the infra stack's (prod), not the stack file's `config:` (issue 47)."""
    for f in (ROOT / "stacks").glob("Pulumi.*.yaml"):
        (tmp_path / f.name).write_text(f.read_text())
    dev = tmp_path / "Pulumi.dev.yaml"
    dev.write_text(DEV.replace("{namespace: ml-team, gpuQuota: 40}", "{namespace: ml-team, gpuQuota: 0}"))
    infra = tmp_path / "Pulumi.infra-eks-us-east-1.yaml"
    infra.write_text(infra.read_text().replace("{namespace: search, gpuQuota: 32}", "{namespace: search, gpuQuota: 1}"))
    for stack, file, path in (("dev", dev, "config.modelplane:clusters[0].queues[0].gpuQuota"),
                              ("prod", infra, "config.modelplane:clusters[0].queues[1].gpuQuota")):
        result = plan(stack, "--config-file", tmp_path / f"Pulumi.{stack}.yaml", "--json")
        found = [v for v in json.loads(result.stdout)["policy"]["violations"] if v["policy"] == "queue-quota"]
        assert len(found) == 1 and found[0]["path"] == path, found
        assert found[0]["file"].endswith(file.name) and found[0]["line"] == line_of(file.read_text(), "gpuQuota: 0"
                                                                                   if stack == "dev" else "gpuQuota: 1")
        assert found[0]["fix"] == POLICIES["queue-quota"].fix
    assert found[0]["message"] == "queue search on eks-use1: 12 GPUs placed, its quota is 1"


def test_every_policy_says_how_to_pass_and_every_verdict_carries_it():
    assert all(p.fix for p in POLICIES.values()), [n for n, p in POLICIES.items() if not p.fix]
    doc = json.loads(plan("prod", "--without", "eks-use1", "--json").stdout)
    assert doc["policy"]["violations"]
    for v in doc["policy"]["violations"]:
        assert v["fix"] == POLICIES[v["policy"]].fix_for(v["message"]) and v["fix"]
        assert v["file"] == "stacks/Pulumi.prod.yaml" and v["line"] > 0
    text = plan("prod", "--without", "eks-use1").output
    assert f"  fix: {POLICIES['placement-complete'].fix}" in text
    # a lost cluster is no change `up` applies: the outage says what is lost and how to survive it (issue 47)
    outage = next(v for v in doc["policy"]["violations"] if v["policy"] == "no-outage")
    assert outage["message"].startswith("search/qwen3-32b serves 0/3 replicas: every serving replica is lost with "
                                        "its cluster or pool (#0 lost: cluster eks-use1 is gone")
    assert "`up`" not in outage["message"] and "allowDisruption" in outage["fix"]
    assert outage["fix"].startswith("give the deployment room on another cluster") and f"  fix: {outage['fix']}" in text


def test_markdown_is_the_pull_request_comment(tmp_path):
    main_json = tmp_path / "main.json"
    main_json.write_text(plan("dev", "--json").stdout)
    branch = tmp_path / "Pulumi.dev.yaml"
    # The pool carries replicas, so it is protected; the change lifts that for it (docs/changes.md).
    branch.write_text(DEV.replace("replicas: 2", "replicas: 3").replace("class: gke-l4-1x-g2", "class: gke-l4-4x-g2")
                      .replace("  modelplane:clusters:", "  modelplane:unprotect: [dev-gke/l4]\n  modelplane:clusters:", 1))
    result = plan("dev", "--config-file", branch, "--previous", main_json, "--format", "markdown")
    assert result.exit_code == 0, result.output
    text = result.stdout
    lines = text.splitlines()
    assert lines[0] == "<!-- modelplane plan dev -->" and lines[1] == "### modelplane plan `dev` against `main.json`"
    assert lines[3].startswith("4 to create, 1 to replace · replicas: 1 added, 2 restarted by a node pool replace · **+$")
    assert "<details><summary>5 resource changes</summary>" in text
    assert "| `+-` | replace | gcp:container/nodePool:NodePool | dev-gke-l4 | dev-gke | nodeConfig.guestAccelerators " \
           "(forces replacement)" in text
    assert "| `+` | added | ml-team/gpt-oss-20b#2 | - | dev-gke | scale-up 2 -> 3 replicas |" in text
    # The pool replacement restarts both running replicas at once: an outage the comment shows.
    assert "#### Serving during the change" in text
    assert "| **ml-team/gpt-oss-20b** | 0/2 (outage) | #0, #1 restart at once: node pool dev-gke-l4 is replaced | - |" in text
    assert "| ml-team/gpt-oss-20b | $1.41/h |" in text and "| **stack dev** | $108/h |" in text
    assert "#### Policy" in text and f"| advisory | `no-outage` | {branch}:" in text


def test_markdown_lists_mandatory_verdicts_first_and_calls_out_unpriced_capacity():
    result = plan("lab", "--format", "markdown")
    text = result.stdout
    assert "(+ unpriced capacity)" in text.splitlines()[3] and "> **Unpriced:** 2 pools have no price" in text
    result = plan("prod", "--without", "eks-use1", "--format", "markdown")
    assert result.exit_code == 1
    rows = [line for line in result.stdout.splitlines() if line.startswith("| **mandatory**") or
            line.startswith("| advisory")]
    assert rows and rows[0].startswith("| **mandatory** |")
    assert any(r.startswith("| **mandatory** | `placement-complete` | stacks/Pulumi.prod.yaml:") for r in rows)
    assert [r.startswith("| **mandatory**") for r in rows] == sorted((r.startswith("| **mandatory**") for r in rows),
                                                                     reverse=True)


def test_refused_input_still_gives_one_document_on_stdout(tmp_path):
    bad = tmp_path / "Pulumi.dev.yaml"
    bad.write_text(DEV.replace("replicas: 2", "replica: 2"))
    doc = json.loads(plan("dev", "--config-file", bad, "--json").stdout)
    assert doc["apiVersion"] == "modelplane.ai/v1alpha1" and doc["refused"] is True
    assert {"file": str(bad), "line": line_of(bad.read_text(), "replica: 2"),
            "path": "modelplane:deployments[0].replica", "message": "unknown field 'replica'",
            "fix": "did you mean 'replicas'?"} in doc["problems"]
    md = plan("dev", "--config-file", bad, "--format", "markdown").stdout
    assert "invalid input, nothing planned" in md and "unknown field 'replica'" in md


def test_a_previous_plan_of_another_format_version_is_refused(tmp_path):
    doc = json.loads(plan("dev", "--json").stdout)
    path = tmp_path / "main.json"
    path.write_text(json.dumps({**doc, "apiVersion": "modelplane.ai/v9"}))
    result = plan("dev", "--previous", path)
    assert result.exit_code == 2 and "apiVersion: 'modelplane.ai/v9' is not a plan this modelplane reads" \
        in result.output, result.output
    path.write_text(json.dumps({k: v for k, v in doc.items() if k != "apiVersion"}))     # older plans: no version
    assert plan("dev", "--previous", path).exit_code == 0


@pytest.mark.parametrize("name", ["github/modelplane-plan.yml", "gitlab/modelplane-plan.gitlab-ci.yml"])
def test_the_ci_examples_run_commands_the_cli_has(name):
    text = (ROOT / "ci" / name).read_text()
    yaml.safe_load(text)
    assert "--format markdown" in text and "--format sarif" in text and "--previous" in text and "--project" in text
    help_text = CliRunner().invoke(main, ["plan", "--help"]).output
    assert all(opt in help_text for opt in ("--format", "--previous", "--project"))
    assert not (ROOT / ".github" / "workflows").exists()       # an example only: nothing runs on this repository


def _steps(workflow: dict) -> dict[str, str]:
    return {s["name"]: s["run"] for s in workflow["jobs"]["plan"]["steps"] if "run" in s}


def test_the_github_example_compares_against_a_base_that_fails_and_annotates_no_outage(tmp_path):
    """Issue 47 / the trial's F3: the workflow's own `run:` steps, on a pull request whose base has a
    mandatory violation (its plan exits 1 and still prints the document): the branch is compared
    with that base, and the `no-outage` verdict only a comparison sees reaches the SARIF log."""
    import os
    import shutil
    import subprocess
    import sys

    if shutil.which("git") is None:
        pytest.skip("needs git")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}

    def sh(script, cwd, **more):
        done = subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env={**env, **more}, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    upstream = tmp_path / "upstream"
    assert CliRunner().invoke(main, ["init", str(upstream)]).exit_code == 0
    # the base fails its own gate: a GPU budget it exceeds, made mandatory; no-outage mandatory too
    (upstream / "policies" / "config").mkdir(parents=True)
    (upstream / "policies" / "config" / "dev.json").write_text(json.dumps(
        {"gpu-budget": {"enforcementLevel": "mandatory", "maxGpus": 0}, "no-outage": {"enforcementLevel": "mandatory"}}))
    sh("git init -q -b main . && git add -A && git commit -qm base", upstream)
    work = tmp_path / "work"
    sh(f"git clone -q {upstream} {work}", tmp_path)
    stack = work / "stacks" / "Pulumi.dev.yaml"
    # the one replica's pool is replaced (a bigger class): it restarts, serving 0/1 during `up`
    stack.write_text(stack.read_text().replace("class: gke-l4-1x-g2", "class: gke-l4-4x-g2")
                     .replace("  modelplane:clusters:", "  modelplane:unprotect: [dev-gke/l4]\n  modelplane:clusters:", 1))
    sh("git checkout -q -b change && git commit -qam change", work)
    steps = _steps(yaml.safe_load((ROOT / "ci" / "github" / "modelplane-plan.yml").read_text()))
    runner = tmp_path / "runner"
    runner.mkdir()
    outputs = tmp_path / "outputs"
    for name in ("plan the base branch (what runs now)", "plan this branch against it"):
        script = steps[name].replace("${{ github.base_ref }}", "main")
        sh(script, work, RUNNER_TEMP=str(runner), GITHUB_OUTPUT=str(outputs), STACK="dev")
    base = json.loads((runner / "base.json").read_text())
    assert [v["policy"] for v in base["policy"]["violations"] if v["level"] == "mandatory"] == ["gpu-budget"]
    comment = (runner / "comment.md").read_text()
    assert "against `base.json`" in comment and "1 to replace" in comment
    assert "status=1" in outputs.read_text()
    log = json.loads((runner / "modelplane.sarif").read_text())
    found = {(r["ruleId"], r["level"]) for r in log["runs"][0]["results"]}
    assert ("no-outage", "error") in found, found

"""`modelplane up` under the real Pulumi engine against two real API servers, scenario by scenario.

Each scenario edits the stack as a user would, asks `modelplane plan --previous` what will happen,
runs the real `up` while sampling serving replicas from the API servers, and compares the engine's
observed order and the samples with what the plan said. The scenarios share one workspace and run
in file order (a: first up, b: surge, c: roll, d: move, e: destroy).
"""
from __future__ import annotations

import json
import re

import pytest
import yaml

from conftest import STACKS
import cluster as loopback
from harness import Sampler, Workspace

INFRA, STACK = "infra-e2e", "e2e"
NS = "ml"


@pytest.fixture(scope="module")
def ws(clusters, tmp_path_factory):
    w = Workspace(tmp_path_factory.mktemp("project"))
    with w:
        for name in (INFRA, STACK):
            w.write_stack(name, (STACKS / f"Pulumi.{name}.yaml").read_text())
        w.set_secrets(INFRA, {f"e2e{n[-1].upper()}Kubeconfig": loopback.inline_kubeconfig(c.kubeconfig)
                              for n, c in clusters.items()})
        yield w


def edit(ws: Workspace, change) -> None:
    """Change the stack file's modelplane:deployments in place (secrets and comments kept)."""
    path = ws.root / "stacks" / f"Pulumi.{STACK}.yaml"
    doc = yaml.safe_load(path.read_text())
    change(doc["config"]["modelplane:deployments"])
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def plan(ws: Workspace, previous: dict | None = None) -> dict:
    args = ["plan", STACK, "--json"]
    if previous is not None:
        prev = ws.root / "previous.json"
        prev.write_text(json.dumps(previous))
        args += ["--previous", str(prev)]
    run = ws.modelplane(*args)
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout)


def workloads(clusters) -> dict[str, dict]:
    """cluster -> {deployment object name: object} of modelplane's Deployments in the team namespace."""
    return {n: {d["metadata"]["name"]: d for d in c.get("deployments", "-n", NS)["items"]}
            for n, c in clusters.items()}


def claims_by_pod(c) -> dict[str, dict]:
    out = {}
    for claim in c.get("resourceclaims", "-n", NS)["items"]:
        for ref in claim.get("status", {}).get("reservedFor", []):
            out[ref["name"]] = claim
    return out


def test_a_first_up(ws, clusters, report):
    # The user's commands: the infra stack first (its clusters' substrate objects and inventory), then
    # the apps stack, which reads the inventory through a StackReference on the same file backend.
    infra = ws.modelplane("up", INFRA)
    report.scenario("a-first-up", infra={"exit": infra.returncode, "out": infra.stdout[-3000:] + infra.stderr[-2000:]})
    assert infra.returncode == 0, infra.stdout + infra.stderr
    planned = plan(ws)
    preview = ws.modelplane("preview", STACK)
    report.scenario("a-first-up", preview={"exit": preview.returncode, "out": preview.stdout[-2000:] + preview.stderr[-2000:]})
    assert preview.returncode == 0, preview.stdout + preview.stderr

    with Sampler(clusters, [NS]) as sampler:
        out = ws.operate("up", STACK)
    report.scenario("a-first-up", ok=out.ok, seconds=out.seconds, summary=out.summary, error=out.error,
                    order=[(e.phase, e.op, e.type, e.name) for e in out.events], serving=sampler.samples[-5:])
    assert out.ok, out.error

    # Every replica runs where the plan put it: its cluster, its pool's nodes, GPUs the real scheduler
    # allocated from the node's DRA devices.
    for p in planned["placements"]:
        c = clusters[p["cluster"]]
        name = f"{p['deployment'].split('/')[1]}-{p['replica']}-decode"
        dep = c.get("deployment", "-n", NS, name)
        assert dep["status"].get("availableReplicas") == 1, (name, dep["status"])
        pods = c.get("pods", "-n", NS, "-l", f"modelplane.ai/replica={p['replica']},"
                     f"modelplane.ai/deployment={p['deployment'].split('/')[1]}")["items"]
        claims = claims_by_pod(c)
        for pod in pods:
            node = c.get("node", pod["spec"]["nodeName"])
            assert node["metadata"]["labels"]["modelplane.ai/pool"] == p["roles"]["decode"]["pool"]
            claim = claims[pod["metadata"]["name"]]
            results = claim["status"]["allocation"]["devices"]["results"]
            assert len(results) == p["roles"]["decode"]["gpusPerNode"]
            assert {r["driver"] for r in results} == {"gpu.nvidia.com"}
            assert {r["pool"] for r in results} == {pod["spec"]["nodeName"]}
    report.scenario("a-first-up", verified="every replica Available on its planned cluster and pool; "
                    "DRA claims allocated by kube-scheduler from the node's ResourceSlice")

    again = ws.operate("preview", STACK)
    report.scenario("a-first-up", second_preview=again.summary)
    assert again.ok and set(again.summary) <= {"same"}, again.summary


def test_e_destroy(ws, clusters, report):
    out = ws.operate("destroy", STACK)
    infra = ws.operate("destroy", INFRA)
    report.scenario("e-destroy", ok=out.ok and infra.ok, summary=out.summary, infra_summary=infra.summary,
                    error=out.error + infra.error, order=[(e.phase, e.op, e.type, e.name) for e in out.events])
    assert out.ok, out.error
    assert infra.ok, infra.error
    for n, c in clusters.items():
        left = c.kubectl("get", "all,resourceclaimtemplates,podgroups,queues", "-A", "-l",
                         "app.kubernetes.io/managed-by=modelplane", "-o", "name", check=False)
        assert left.strip() == "", (n, left)
        assert re.search(r"nodes?", c.kubectl("get", "nodes", "-o", "name"))   # the harness's nodes stay

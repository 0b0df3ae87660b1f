"""`modelplane up` under the real Pulumi engine against two real API servers, scenario by scenario.

Each scenario edits the stack as a user would, asks `modelplane plan --previous` what will happen,
runs the real `up` while sampling serving replicas from the API servers, and compares the engine's
observed order and the samples with what the plan said. The scenarios share one workspace and run
in file order (a: first up, b: surge, c: roll, d: move, e: destroy).
"""
from __future__ import annotations

import json

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
    # Nothing to change; `read` is the StackReference to infra-e2e, which every run reads.
    assert again.ok and set(again.summary) <= {"same", "read"}, again.summary


def workload(urn_name: str) -> tuple[str, str] | None:
    """(cluster, Deployment name) of a modelplane workload resource name, else None."""
    parts = urn_name.split("/")
    if len(parts) == 4 and parts[2] == "deployment":
        return parts[0], parts[3]
    return None


def engine_times(events) -> dict[tuple[str, str, str], float]:
    """(phase, op, resource name) -> when the engine reported it first."""
    out = {}
    for e in events:
        out.setdefault((e.phase, e.op, e.name), e.t)
    return out


def change(ws, clusters, report, name: str, mutate) -> tuple[dict, object, Sampler]:
    """Edit the stack, ask the plan what `up` will do (--previous: the plan of what runs), run it."""
    before = plan(ws)
    edit(ws, mutate)
    after = plan(ws, previous=before)
    with Sampler(clusters, [NS]) as sampler:
        out = ws.operate("up", STACK)
    report.scenario(name, ok=out.ok, seconds=out.seconds, summary=out.summary, error=out.error,
                    upOrder=after.get("upOrder"), transitions=after.get("transitions"),
                    disruptions=after.get("disruptions"),
                    order=[(e.t, e.phase, e.op, e.name) for e in out.events if workload(e.name)],
                    servingMin=sampler.minimum_by_deployment(), samples=len(sampler.samples))
    assert out.ok, out.error
    return after, out, sampler


def test_b_topology_change_surges(ws, clusters, report):
    def tp2(deps):
        deps[0]["workers"]["topology"]["tensor"] = 2
    after, out, sampler = change(ws, clusters, report, "b-surge", tp2)
    moves = [t for t in after["transitions"] if t["how"] in ("surge", "moved")]
    assert moves, after["transitions"]
    times = engine_times(out.events)
    created = {n: t for (ph, op, n), t in times.items() if ph == "done" and op == "create" and workload(n)}
    deleted = {n: t for (ph, op, n), t in times.items() if ph == "pre" and op == "delete" and workload(n)}
    # Make-before-break as the plan printed it: every new workload Available before any old one goes.
    assert created and deleted, (created, deleted)
    assert max(created.values()) < min(deleted.values()), (created, deleted)
    assert sampler.minimum_by_deployment()["ml/qwen3-8b"] >= 2


def test_c_engine_args_roll_one_at_a_time(ws, clusters, report):
    def args(deps):
        deps[0]["engine"]["args"] = ["--max-model-len=16384"]
    after, out, sampler = change(ws, clusters, report, "c-roll", args)
    times = engine_times(out.events)
    updates = sorted((t, n) for (ph, op, n), t in times.items() if ph == "pre" and op == "update" and workload(n))
    dones = {n: t for (ph, op, n), t in times.items() if ph == "done" and op == "update" and workload(n)}
    assert len(updates) == 2, updates
    # One at a time: the second replica's roll starts after the first one's is awaited.
    (t0, first), (t1, second) = updates
    assert dones[first] <= t1, (updates, dones)
    assert sampler.minimum_by_deployment()["ml/qwen3-8b"] >= 1


def test_d_move_to_the_other_cluster(ws, clusters, report):
    def pin(deps):
        deps[0]["clusterSelector"] = {"matchLabels": {"modelplane.ai/region": "ams1"}}
    after, out, sampler = change(ws, clusters, report, "d-move", pin)
    assert {p["cluster"] for p in after["placements"]} == {"e2e-a"}
    times = engine_times(out.events)
    created = [t for (ph, op, n), t in times.items() if ph == "done" and op == "create" and workload(n)
               and workload(n)[0] == "e2e-a"]
    deleted = [t for (ph, op, n), t in times.items() if ph == "pre" and op == "delete" and workload(n)
               and workload(n)[0] == "e2e-b"]
    assert created and deleted and max(created) < min(deleted), (created, deleted)
    assert not clusters["e2e-b"].get("deployments", "-n", NS)["items"]
    assert sampler.minimum_by_deployment()["ml/qwen3-8b"] >= 1


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
        assert c.kubectl("get", "nodes", "-o", "name").strip()      # the harness's nodes stay

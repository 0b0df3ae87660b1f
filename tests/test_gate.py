"""Issue 12: the policy gate got faster without changing a verdict, and large stacks stay correct.

tests/golden/verdicts.json holds the violations of every example stack and of every policy fixture
as the gate gave them before it was pipelined and before the pack memoized its conversions.
Regenerate only when a rule changes on purpose: `python tests/test_gate.py --regenerate`.
"""
import json
import sys
from pathlib import Path

import pytest

from modelplane.engine import direct
from modelplane.output import report
from modelplane.api.loader import stack_names
from modelplane.errors import InputError
from modelplane.policy import Analyzer, default_config, evaluate, read_config
from helpers import planned as plan_once

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden" / "verdicts.json"
sys.path.insert(0, str(HERE.parent / "benchmarks"))

import stackgen  # noqa: E402
from test_policy_corpus import FIXTURES, header  # noqa: E402


def verdicts(analyzer, only=None) -> dict:
    out = {}
    for stack in stack_names():
        if only is None or f"stack:{stack}" in only:
            run = plan_once(stack)
            out[f"stack:{stack}"] = evaluate(run, read_config(default_config(run.result.spec.production)), analyzer)
    for path in FIXTURES:
        if only is not None and f"fixture:{path.stem}" not in only:
            continue
        try:
            run = plan_once("fixture", path)
        except InputError:
            continue       # refused before the pack runs
        config = json.loads(header(path).get("policy-config", "null")) or \
            read_config(default_config(run.result.spec.production))
        out[f"fixture:{path.stem}"] = evaluate(run, config, analyzer)
    return out


@pytest.fixture(scope="module")
def memoized():
    """Every stack's and fixture's verdicts from the pack as it runs (its memo on), computed once for
    the two tests below."""
    with Analyzer(stack="golden") as a:
        return verdicts(a)


def test_every_verdict_is_what_the_unpipelined_gate_gave(memoized):
    golden = json.loads(GOLDEN.read_text())
    now = memoized
    assert sorted(now) == sorted(golden)
    for key in golden:
        assert now[key] == golden[key], key
    assert sum(len(v) for v in golden.values()) >= 20     # the comparison covers real violations


def test_the_pack_memo_changes_no_verdict(monkeypatch, memoized):
    picked = {"stack:prod", "stack:dev", *[k for k, v in json.loads(GOLDEN.read_text()).items() if v][:4]}
    memoized = {k: v for k, v in memoized.items() if k in picked}
    monkeypatch.setenv("MODELPLANE_PACK_MEMO", "0")
    with Analyzer(stack="golden") as a:
        plain = verdicts(a, picked)
    assert memoized == plain
    assert any(memoized.values())


def planned(stack: str, path: Path | None = None):
    """As `modelplane plan` does it: the pack starts before the program runs, and the default engine
    (direct) records the graph; tests/test_engines.py holds it to the Pulumi engine's records."""
    with Analyzer(stack=stack) as gate:
        run = direct.run(stack, path)
        return run, evaluate(run, read_config(default_config(run.result.spec.production)), gate)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    path = stackgen.write(tmp_path_factory.mktemp("fleet") / "Pulumi.fleet.yaml", clusters=12, replicas=300)
    run, violations = planned("fleet", path)
    return run, violations, path


def test_a_300_replica_fleet_is_placed_rendered_and_clean(fleet, schema_catalog):
    run, violations, _ = fleet
    plan = run.result.plan
    assert len(plan.placements) == 300 and not plan.unplaced
    # Clean under the dev config; its GPU budget (64, advisory) is for the dev stack, not a fleet, and its
    # clusters' certificates come from an issuer the fleet names but does not create (advisory, one per cluster).
    assert {v["policy"] for v in violations} == {"gpu-budget", "certificate-issuer-external"}
    assert all(v["level"] == "advisory" for v in violations)
    # Every placement is rendered on its cluster: one workload object per replica, labelled with it.
    workloads = {}
    for r in run.records:
        labels = (r.inputs.get("metadata") or {}).get("labels") or {}
        if r.type.endswith((":LLMInferenceService", ":LeaderWorkerSet")) and "modelplane.ai/replica" in labels:
            key = (f"{r.inputs['metadata']['namespace']}/{labels['modelplane.ai/deployment']}",
                   int(labels["modelplane.ai/replica"]))
            workloads[key] = r.name.split("/", 1)[0]
    assert workloads == {(p.deployment, p.replica): p.cluster for p in plan.placements}
    # A sample of every kind passes the upstream schemas.
    seen: dict[str, int] = {}
    for r in sorted(run.records, key=lambda r: r.name):
        if report.is_manifest(r) and seen.get(r.type, 0) < 5:
            seen[r.type] = seen.get(r.type, 0) + 1
            status, line = schema_catalog.report(report.manifest(r))
            assert status == "ok", f"{r.name}: {line}"
    assert len(seen) >= 10


def test_the_fleet_plan_is_deterministic(fleet):
    run, violations, path = fleet
    again = direct.run("fleet", path)
    assert report.to_json(report.document(again, violations)) == report.to_json(report.document(run, violations))


if __name__ == "__main__" and sys.argv[1:] == ["--regenerate"]:
    with Analyzer(stack="golden") as analyzer:
        GOLDEN.write_text(json.dumps(verdicts(analyzer), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")

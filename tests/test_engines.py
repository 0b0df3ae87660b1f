"""The two plan engines agree: the direct engine (the graph recorded without the Pulumi SDK) and
the Pulumi engine (the real program under Pulumi's mocks) give the same resources — type, name,
URN, parent, provider, inputs, outputs, dependencies, options — and the same placements, on every
example stack, on generated fleets, with previous placements and with a lost cluster. Each
example stack's direct records are also held to a golden file (tests/golden/engines/).

Regenerate the goldens after an intended change: MODELPLANE_UPDATE_GOLDEN=1 pytest tests/test_engines.py
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from modelplane.engine import direct, offline
from modelplane.api.loader import stack_names
from helpers import cli, planned

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "engines"
sys.path.insert(0, str(ROOT / "benchmarks"))
import stackgen  # noqa: E402


def canonical(run) -> dict:
    """urn -> record as plain JSON data (an unknown value of either engine as one marker; a number
    as the engine's double: the direct engine records plain inputs with their integers)."""
    def plain(v):
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if v is None or isinstance(v, (str, float, bool)):
            return v
        if isinstance(v, int):
            return float(v)
        if type(v).__name__ == "Unknown":
            return "<unknown>"
        raise TypeError(f"unexpected value {v!r} in a record")
    return {r.urn: plain(dict(r.__dict__)) for r in run.records}


def assert_same(a, b):
    ca, cb = canonical(a), canonical(b)
    assert sorted(set(ca) - set(cb)) == [] and sorted(set(cb) - set(ca)) == []
    for urn in ca:
        assert ca[urn] == cb[urn], urn
    assert [p.to_json() for p in a.result.plan.placements] == [p.to_json() for p in b.result.plan.placements]
    assert [u.to_json() for u in a.result.plan.unplaced] == [u.to_json() for u in b.result.plan.unplaced]


@pytest.mark.parametrize("stack", stack_names())
def test_engines_agree_on_every_example_stack(stack):
    assert_same(planned(stack, engine="direct"), planned(stack))


@pytest.fixture(scope="module")
def pack():
    from modelplane.policy import Analyzer

    with Analyzer(stack="engines") as analyzer:
        yield analyzer


@pytest.mark.parametrize("stack", stack_names())
def test_engines_give_the_same_verdicts_on_every_example_stack(stack, pack):
    """Each engine end to end: direct records with the rules in-process, Pulumi records with the
    pack over the analyzer protocol; under the stack's own config and with every policy mandatory."""
    from modelplane.policy import default_config, evaluate, read_config

    fast, real = planned(stack, engine="direct"), planned(stack)
    for config in (read_config(default_config(fast.result.spec.production)), {"all": "mandatory"}):
        assert evaluate(fast, config, engine="direct") == evaluate(real, config, pack)


@pytest.mark.parametrize("stack", stack_names())
def test_direct_records_match_the_golden(stack):
    got = json.dumps(sorted(canonical(planned(stack, engine="direct")).values(), key=lambda r: r["urn"]), sort_keys=True, indent=1)
    path = GOLDEN / f"{stack}.json"
    if os.environ.get("MODELPLANE_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got + "\n")
    assert path.exists(), f"no golden for {stack}: run MODELPLANE_UPDATE_GOLDEN=1 pytest tests/test_engines.py"
    assert got + "\n" == path.read_text(), f"{stack}: records differ from {path.relative_to(ROOT)} " \
        "(if the change is intended, regenerate with MODELPLANE_UPDATE_GOLDEN=1)"


@pytest.mark.parametrize("clusters,replicas,seed", [(3, 24, 1), (6, 60, 7), (10, 120, 3)])
def test_engines_agree_on_generated_fleets(tmp_path, clusters, replicas, seed):
    path = stackgen.write(tmp_path / f"Pulumi.gen{seed}.yaml", clusters, replicas, seed)
    first_direct, first_pulumi = direct.run(f"gen{seed}", path), offline.run(f"gen{seed}", path)
    assert_same(first_direct, first_pulumi)
    # Sticky re-plan from the placements, then a what-if without the first cluster.
    before = [p.to_json() for p in first_direct.result.plan.placements]
    assert_same(direct.run(f"gen{seed}", path, before), offline.run(f"gen{seed}", path, before))
    lost = ("c000",)
    assert_same(direct.run(f"gen{seed}", path, before, lost), offline.run(f"gen{seed}", path, before, lost))


def test_both_engines_give_the_same_plan_document():
    """`plan --json` is byte-identical whichever engine runs (placements, resources with their
    digests, cost, policy verdicts)."""
    def plan(engine):
        done = cli("plan", "prod", "--json", "--engine", engine)
        assert done.returncode in (0, 1), done.stderr
        return done.stdout
    a, b = plan("direct"), plan("pulumi")
    assert json.loads(a)["resources"] and a == b


def test_the_direct_engine_imports_no_pulumi():
    code = ("import sys; from modelplane.engine import direct; from modelplane.output import report; from modelplane.policy import evaluate; "
            "direct.run('prod'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pulumi', 'pulumi_kubernetes', 'pulumi_gcp', 'pulumi_aws', 'pulumi_policy', 'grpc')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_both_engines_write_the_same_files(tmp_path):
    """`--out` from either engine: the same files, byte for byte (unknown values, secrets and
    cloud inputs included)."""
    from modelplane.output import report

    for name, run in (("direct", planned("infra-eks-us-east-1", engine="direct")), ("pulumi", planned("infra-eks-us-east-1"))):
        assert report.write_out(run, tmp_path / name) > 40
    files = sorted(p.relative_to(tmp_path / "direct") for p in (tmp_path / "direct").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "pulumi") for p in (tmp_path / "pulumi").rglob("*") if p.is_file())
    for f in files:
        assert (tmp_path / "direct" / f).read_bytes() == (tmp_path / "pulumi" / f).read_bytes(), f
    assert any("(known after apply)" in (tmp_path / "direct" / f).read_text() for f in files)

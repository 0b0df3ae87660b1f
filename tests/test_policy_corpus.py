"""The bad-config corpus: every fixture is refused by the rule it names, through the real pack."""
import json
from pathlib import Path

import pytest

from modelplane.engine import offline
from modelplane.errors import InputError
from modelplane.policy import Analyzer, default_config, evaluate, read_config
from helpers import planned

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "bad").glob("*.yaml"))


def header(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        key, _, value = line[1:].strip().partition(": ")
        out[key] = value
    return out


@pytest.fixture(scope="module")
def analyzer():
    with Analyzer(stack="fixture") as a:
        yield a


def test_the_corpus_covers_many_rules():
    expects = [header(p)["expect"] for p in FIXTURES]
    assert len(FIXTURES) >= 25
    assert len({e.split()[1] for e in expects if e.startswith("policy ")}) >= 10


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_bad_config_is_refused_by_the_expected_rule(path, analyzer):
    kind, _, want = header(path)["expect"].partition(" ")
    try:
        run = planned("fixture", path)
    except InputError as exc:
        if kind == "input":
            assert want in exc.render(), exc.render()
        else:
            assert want in {p.rule for p in exc.problems}, exc.render()
        return
    assert kind == "policy", f"{path.name}: planned, but expected an input error containing {want!r}"
    config = json.loads(header(path).get("policy-config", "null")) or read_config(default_config(run.result.spec.production))
    violations = evaluate(run, config, analyzer)
    hits = [v for v in violations if v["policy"] == want and v["level"] == "mandatory"]
    assert hits, f"{path.name}: no mandatory {want} violation in {violations}"

"""The README's samples are what the commands print: the quickstart's placements, the `--previous`
change view and the prod cost table, each held line by line to a real run."""
import re
from pathlib import Path

from click.testing import CliRunner

from modelplane.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def block_after(marker: str) -> list[str]:
    """The lines of the first ``` block after `marker` in the README."""
    start = README.index("```\n", README.index(marker)) + 4
    return README[start:README.index("```", start)].rstrip("\n").splitlines()


def printed(*args) -> list[str]:
    result = CliRunner().invoke(main, [*map(str, args)])
    assert result.exit_code == 0, result.output
    return [line.rstrip() for line in result.stdout.splitlines()]


def assert_printed(sample: list[str], output: list[str]) -> None:
    missing = [line for line in sample if line.rstrip() not in output]
    assert not missing, "README lines not in the real output:\n" + "\n".join(missing + ["--- output:", *output])


def test_the_quickstart_starts_with_init_and_shows_what_plan_dev_prints(tmp_path, monkeypatch):
    quick = README[README.index("## Quickstart"):README.index("\n## ", README.index("## Quickstart") + 5)]
    assert quick.index("modelplane init") < quick.index("modelplane plan dev") < quick.index("make plan")
    assert CliRunner().invoke(main, ["init", str(tmp_path)]).exit_code == 0
    monkeypatch.chdir(tmp_path)
    assert_printed(block_after("`modelplane plan dev` then prints"), printed("plan", "dev"))


def test_the_previous_sample_is_the_change_view_of_the_change_it_describes(tmp_path):
    main_json = tmp_path / "main.json"
    main_json.write_text(CliRunner().invoke(main, ["plan", "dev", "--json"]).stdout)
    dev = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    pool = "{name: l4, class: gke-l4-1x-g2, minNodes: 0, maxNodes: 4, zones: [us-central1-a]}"
    assert pool in dev and "replicas: 2" in dev
    branch = tmp_path / "Pulumi.dev.yaml"
    # The pool carries replicas, so it is protected: the change lifts that for it (docs/changes.md).
    branch.write_text(dev.replace("replicas: 2", "replicas: 3").replace(
        pool, "{name: l4, class: gke-l4-1x-g2, minNodes: 0, maxNodes: 6, zones: [us-central1-a], capacity: {type: spot}}")
        .replace("  modelplane:clusters:", "  modelplane:unprotect: [dev-gke/l4]\n  modelplane:clusters:", 1))
    output = printed("plan", "dev", "--config-file", branch, "--previous", main_json)
    assert_printed(block_after("`tests/test_readme.py` holds this sample"), output)


def test_the_cost_sample_is_the_prod_cost_table():
    sample = block_after("rules and the sources. `plan prod` prints:")
    assert sample[0] == "cost (prod, USD, 730 h/month)" and re.match(r"│ stack +│ prod", sample[-2])
    assert_printed(sample, printed("plan", "prod"))

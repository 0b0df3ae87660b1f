"""`python -m modelplane` ends the process without freeing the plan (cli.run): the same document,
exit code and stderr as the command run in-process, and the atexit work (the CEL outcomes kept
for the next run) still done."""
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from helpers import cli

ROOT = Path(__file__).resolve().parents[1]


def _spawn(tmp_path, *args):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "modelplane", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300)


def test_the_plan_document_and_exit_code_are_the_in_process_ones(tmp_path):
    spawned, here = _spawn(tmp_path, "plan", "dev", "--json"), cli("plan", "dev", "--json")
    assert (spawned.returncode, json.loads(spawned.stdout)) == (here.returncode, json.loads(here.stdout))
    assert spawned.stdout == here.stdout
    kept = list((tmp_path / "cache" / "modelplane").glob("cel-outcomes-*.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text())["outcomes"]     # written at exit


def test_bad_input_still_exits_2_with_its_problem(tmp_path):
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    doc["config"]["modelplane:deployments"][0]["replicas"] = -2
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = _spawn(tmp_path, "plan", "dev", "--config-file", str(path), "--json")
    assert done.returncode == 2
    assert "must be at least 0" in done.stderr and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["problems"]


def test_usage_errors_and_version_keep_clicks_exit_codes(tmp_path):
    assert _spawn(tmp_path, "--version").returncode == 0
    wrong = _spawn(tmp_path, "plan")
    assert wrong.returncode == 2 and "Missing argument" in wrong.stderr

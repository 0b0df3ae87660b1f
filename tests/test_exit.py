"""How `modelplane plan` ends as a process (cli.run): its output flushed whole and its exit status
kept when it leaves without tearing down its heap; other commands exit as usual."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import cli

ROOT = Path(__file__).resolve().parents[1]


def _process(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "modelplane", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_a_plan_leaves_with_its_document_whole_and_its_status(tmp_path):
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps({"all": "mandatory", "gpu-budget": {"maxGpus": 1}}))
    for args, status in ((("plan", "prod", "--json"), 0), (("plan", "prod", "--json", "--policy-config", strict), 1)):
        done = _process(*args)
        assert done.returncode == status, done.stderr
        assert done.stdout == cli(*args).stdout          # every byte the in-process command writes
    refused = _process("plan", "prod", "--json", "--policy-config", tmp_path / "missing.json")
    assert refused.returncode == 2 and "cannot read policy config" in refused.stderr
    assert json.loads(refused.stdout)["refused"] is True


def test_other_commands_exit_as_usual():
    done = _process("--version")
    assert done.returncode == 0 and done.stdout.startswith("modelplane ")
    assert _process("plan").returncode == 2          # usage: click's own exit


def test_the_lazy_consoles_are_rich_consoles_where_rich_needs_one():
    """`out`/`err` make their rich Console on first use; rich's Live enters its console
    (`with console:`), which the e2e `up` hit before the console was handed over whole."""
    from rich.console import Console
    from rich.live import Live

    from modelplane.console import err, out

    assert isinstance(out.rich(), Console) and out.rich() is out.rich() and err.rich().stderr
    with err:
        pass
    with Live(console=out.rich(), auto_refresh=False, transient=True):
        pass

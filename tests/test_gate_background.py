"""The gate on the other core (policy/background.py): `plan` forks after the program, the child
runs the pack's rules while the parent builds and writes the document; the same bytes, verdicts
and exit code as running them in-process, and a child that fails leaves the parent to run them."""
from __future__ import annotations

import json
import os
import sys

import pytest

from helpers import cli
from modelplane.policy import background


@pytest.fixture
def strict(tmp_path):
    """A policy config under which prod fails the gate: every rule mandatory, a 1-GPU budget."""
    path = tmp_path / "strict.json"
    path.write_text(json.dumps({"all": "mandatory", "gpu-budget": {"maxGpus": 1}}))
    return path


def _forks(monkeypatch, on: bool):
    monkeypatch.setattr(background, "FORK_FROM", 0 if on else 10 ** 9)
    monkeypatch.setattr(background, "_cores", lambda: 2)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_the_forked_gate_writes_the_same_document_and_exit_code(monkeypatch, strict):
    _forks(monkeypatch, False)
    here = cli("plan", "prod", "--json", "--policy-config", strict)
    _forks(monkeypatch, True)
    forked = []
    real_fork = os.fork
    monkeypatch.setattr(background.os, "fork", lambda: forked.append(1) or real_fork())
    there = cli("plan", "prod", "--json", "--policy-config", strict)
    assert forked == [1]
    assert there.returncode == here.returncode == 1
    assert there.stdout == here.stdout
    verdicts = json.loads(there.stdout)["policy"]["violations"]
    assert any(v["policy"] == "gpu-budget" and v["level"] == "mandatory" for v in verdicts)
    assert list(json.loads(there.stdout))[-1] == "policy"     # last: written once the child answers


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_a_child_that_dies_leaves_the_rules_to_the_parent(monkeypatch, strict):
    _forks(monkeypatch, False)
    here = cli("plan", "prod", "--format", "sarif", "--policy-config", strict)
    _forks(monkeypatch, True)
    parent = os.getpid()
    real = background._part

    def dies_in_the_child(*args, **kwargs):
        if os.getpid() != parent:
            os._exit(9)             # as if killed mid-way
        return real(*args, **kwargs)

    monkeypatch.setattr(background, "_part", dies_in_the_child)
    there = cli("plan", "prod", "--format", "sarif", "--policy-config", strict)
    assert there.returncode == here.returncode == 1 and there.stdout == here.stdout


def test_no_fork_where_it_does_not_pay_or_is_turned_off(monkeypatch):
    def refuse():
        raise AssertionError("forked")

    monkeypatch.setattr(background.os, "fork", refuse)
    monkeypatch.setattr(background, "_cores", lambda: 2)
    assert cli("plan", "dev", "--json").returncode == 0             # a small plan: in-process
    monkeypatch.setattr(background, "FORK_FROM", 0)
    monkeypatch.setenv("MODELPLANE_JOBS", "1")
    assert cli("plan", "dev", "--json").returncode == 0             # turned off
    monkeypatch.delenv("MODELPLANE_JOBS")
    monkeypatch.setattr(background, "_cores", lambda: 1)
    assert cli("plan", "dev", "--json").returncode == 0             # one core: nothing to overlap


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_a_plan_that_stops_stops_its_child_and_makes_no_verdicts(monkeypatch):
    """An error (or Ctrl-C) while the document is built: the child is killed and reaped, and the
    parent does not go on to run the rules itself."""
    _forks(monkeypatch, True)
    import modelplane.policy as policy
    from modelplane.output import report

    ran, real, real_part = [], policy.evaluate, background._part
    parent = os.getpid()

    def counted(*args, **kwargs):
        if os.getpid() == parent:
            ran.append("parent")
        return real(*args, **kwargs)

    def counted_part(*args, **kwargs):
        if os.getpid() == parent:
            ran.append("parent's part")
        return real_part(*args, **kwargs)

    def breaks(*args, **kwargs):
        raise RuntimeError("the document broke")

    children, real_fork = [], os.fork
    monkeypatch.setattr(background.os, "fork", lambda: children.append(pid := real_fork()) or pid)
    monkeypatch.setattr(policy, "evaluate", counted)
    monkeypatch.setattr(background, "_part", counted_part)
    monkeypatch.setattr(report, "document", breaks)
    with pytest.raises(RuntimeError, match="the document broke"):
        cli("plan", "dev", "--json")
    assert ran == [] and len(children) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(children[0], os.WNOHANG)     # reaped: no child left behind, not even a zombie


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_a_rule_that_breaks_in_the_background_exits_3_without_a_traceback(monkeypatch):
    from modelplane.policy import registry

    _forks(monkeypatch, True)
    import dataclasses

    def broken(*args, **kwargs):
        raise KeyError("a bug in a rule")

    monkeypatch.setitem(registry.POLICIES, "resource-names",
                        dataclasses.replace(registry.POLICIES["resource-names"], check=broken))
    done = cli("plan", "dev", "--json")
    assert done.returncode == 3
    assert "the policy pack failed" in done.stderr and "resource-names" in done.stderr
    assert '"policy"' not in done.stdout          # the document stops before its verdicts
    done = cli("plan", "dev", "--format", "sarif")
    assert done.returncode == 3 and done.stdout == ""       # settled before anything is written


def test_props_the_pack_fails_on_are_judged_before_any_output(monkeypatch):
    """A NaN or an infinity in the props makes the pack fail (policy/direct.py): no fork, so that
    error comes before the document, as it always did."""
    from types import SimpleNamespace

    monkeypatch.setattr(background, "_cores", lambda: 2)
    monkeypatch.delenv("MODELPLANE_JOBS", raising=False)
    many = [object()] * background.FORK_FROM
    assert background._forks(SimpleNamespace(records=many, finite=True)) == sys.platform.startswith("linux")
    assert not background._forks(SimpleNamespace(records=many, finite=False))
    assert not background._forks(SimpleNamespace(records=many[1:], finite=True))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_the_stack_policies_are_shared_each_run_once(monkeypatch, tmp_path, strict):
    """The parent, its document written, takes the stack policies the child has not begun: each
    runs in exactly one of the two, and the verdicts are the in-process ones."""
    from modelplane.policy import direct
    from modelplane.policy.registry import POLICIES

    _forks(monkeypatch, False)
    here = cli("plan", "prod", "--json", "--policy-config", strict)
    _forks(monkeypatch, True)
    log, parent, real = tmp_path / "turns.log", os.getpid(), direct._stack_turn

    def logged(running, *args, **kwargs):
        import time
        if os.getpid() == parent:       # the parent waits (at most 20 s) until the child has a turn
            deadline = time.monotonic() + 20
            while "child" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
                time.sleep(0.01)
        with open(log, "a") as f:
            f.write(f"{'parent' if os.getpid() == parent else 'child'} {running[0].name}\n")
        if os.getpid() != parent:
            time.sleep(0.3)             # a slow child: the parent gets turns of its own
        return real(running, *args, **kwargs)

    monkeypatch.setattr(direct, "_stack_turn", logged)
    there = cli("plan", "prod", "--json", "--policy-config", strict)
    assert there.returncode == here.returncode == 1 and there.stdout == here.stdout
    runs = [line.split() for line in log.read_text().splitlines()]
    names = [name for _, name in runs]
    assert sorted(names) == sorted(set(names)) == sorted(n for n, p in POLICIES.items() if p.kind == "stack")
    assert {who for who, _ in runs} == {"parent", "child"}

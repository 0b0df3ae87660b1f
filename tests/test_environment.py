"""Environment runs through the real Automation API SDK against a fake `pulumi` command."""
import shutil

import pytest
from rich.console import Console

from modelplane.automation import environment
from modelplane.automation.console import run_command
from modelplane.automation.driver import policy_pack, stack_runner

from fake_pulumi import FakePulumi

INFRA = ["infra-eks-us-east-1", "infra-gke-europe-west4", "infra-gke-us-central1"]


@pytest.fixture(autouse=True)
def passphrase(monkeypatch):
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "test-only")


def go(operation, fake, tmp_path, names=("prod",), **kw):
    console = Console(record=True, width=300)
    code = run_command(operation, list(names), backend=f"file://{tmp_path}", command=fake, console=console, **kw)
    return code, console.export_text()


def order_of(fake, op):
    return [a[a.index("--stack") + 1] for o, a in fake.calls if o == op]


def test_an_environment_is_its_apps_stack_and_fleet():
    steps = environment.steps_for(["prod"])
    assert [s.stack for s in steps] == [*INFRA, "prod"]
    assert next(s for s in steps if s.stack == "prod").needs == ("infra-gke-us-central1", "infra-eks-us-east-1",
                                                                  "infra-gke-europe-west4")


def test_up_runs_infra_in_parallel_then_apps(tmp_path):
    fake = FakePulumi(delay=0.2)
    code, text = go("up", fake, tmp_path)
    assert code == 0
    ran = order_of(fake, "up")
    assert sorted(ran[:3]) == INFRA and ran[3] == "prod"
    assert fake.peak == 3                       # the three infra stacks at once, apps alone after
    # the pack folder through a Python language host, else its executable shim (driver.policy_pack)
    assert all("--policy-pack" in a and policy_pack()[0] in a for _, a in fake.calls)
    assert "prod" in text and "create 3" in text


def test_parallelism_is_bounded(tmp_path):
    fake = FakePulumi(delay=0.1)
    assert go("up", fake, tmp_path, parallel=2)[0] == 0
    assert fake.peak == 2


def test_destroy_runs_apps_first_and_without_the_pack(tmp_path):
    fake = FakePulumi()
    code, text = go("destroy", fake, tmp_path)
    assert code == 0 and order_of(fake, "destroy")[0] == "prod"
    assert sorted(order_of(fake, "destroy")[1:]) == INFRA
    assert not any("--policy-pack" in a for _, a in fake.calls)
    assert "delete 3" in text


def test_a_failed_infra_stack_stops_its_dependents_only(tmp_path):
    fake = FakePulumi(fail={"infra-eks-us-east-1"})
    code, text = go("up", fake, tmp_path)
    assert code == 1
    assert sorted(order_of(fake, "up")) == sorted(set(INFRA))       # prod never ran
    assert "quota exceeded for nvidia-h200" in text
    assert "not run: infra-eks-us-east-1 did not succeed" in text and "nothing applied" in text


def test_a_failed_apps_destroy_keeps_the_infra_it_runs_on(tmp_path):
    fake = FakePulumi(fail={"prod"})
    code, _ = go("destroy", fake, tmp_path)
    assert code == 1 and order_of(fake, "destroy") == ["prod"]


def test_a_locked_stack_is_reported_as_locked(tmp_path):
    fake = FakePulumi(locked={"infra-gke-europe-west4"})
    code, text = go("up", fake, tmp_path)
    assert code == 1
    assert "locked" in text and "pulumi cancel --stack infra-gke-europe-west4" in text


def test_preview_attaches_the_policy_config_and_counts_progress(tmp_path):
    config = tmp_path / "policy.json"
    config.write_text("{}")
    fake = FakePulumi()
    outcomes = environment.run(environment.steps_for(["dev"]), "preview",
                               stack_runner(f"file://{tmp_path}", fake, policy_config=config))
    args = fake.calls[0][1]
    assert args[args.index("--policy-pack-config") + 1] == str(config.resolve())
    assert outcomes["dev"].status == "ok" and outcomes["dev"].changes == {"create": 3}
    assert outcomes["dev"].done == 1          # one resource finished, from the engine's event stream


def test_explicit_stack_list_without_their_fleet(tmp_path):
    fake = FakePulumi()
    code, _ = go("up", fake, tmp_path, names=("infra-gke-us-central1", "dev"))
    assert code == 0 and sorted(order_of(fake, "up")) == ["dev", "infra-gke-us-central1"]


@pytest.mark.skipif(shutil.which("pulumi") is None, reason="needs the pulumi CLI, which this machine does not have")
def test_real_cli_previews_dev_on_a_file_backend(tmp_path):
    code, text = go("preview", None, tmp_path, names=("dev",))
    assert code == 0, text


def test_invalid_input_anywhere_stops_the_run_before_any_stack_is_touched(tmp_path, monkeypatch):
    from modelplane.engine import direct
    from modelplane.errors import InputError, Problem

    real = direct.run

    def run(stack, *a, **kw):
        if stack == "prod":
            raise InputError([Problem("stacks/Pulumi.prod.yaml", "config.modelplane:deployments[0].replicas",
                                      "must be at least 0", "use a count")])
        return real(stack, *a, **kw)
    monkeypatch.setattr(direct, "run", run)
    fake = FakePulumi()
    code, text = go("up", fake, tmp_path)
    assert code == 2 and fake.calls == [] and "deployments[0].replicas" in text      # invalid input, as `plan`


def test_progress_totals_come_from_the_offline_plan():
    totals = environment.expected_resources(environment.steps_for(["dev"]))
    assert totals["dev"] > 20
    outcomes = environment.run(environment.steps_for(["dev"]), "preview", lambda op, st, out: {}, totals=totals)
    assert outcomes["dev"].total == totals["dev"]


# ---- exit statuses and the pulumi binary (issue 47) -------------------------------------------------

def _on_path(tmp_path, monkeypatch, script: str | None):
    """PATH with only a `pulumi` that runs `script` (None: no pulumi at all) and the basics."""
    import os

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if script is not None:
        (bin_dir / "pulumi").write_text("#!/bin/sh\n" + script)
        (bin_dir / "pulumi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")


def _cli(*args):
    from click.testing import CliRunner

    from modelplane.cli import main

    return CliRunner().invoke(main, list(args))


def test_a_broken_pulumi_binary_is_one_line_and_exit_3(tmp_path, monkeypatch):
    _on_path(tmp_path, monkeypatch, "echo 'error: corrupt install' >&2; exit 255\n")
    result = _cli("preview", "dev")
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: the pulumi CLI at {tmp_path / 'bin' / 'pulumi'} does not work: `pulumi version` "
                           "exited 255 (error: corrupt install); reinstall it"), line
    (tmp_path / "none").mkdir()
    _on_path(tmp_path / "none", monkeypatch, None)
    missing = _cli("up", "dev")
    assert missing.exit_code == 3 and "the `pulumi` CLI is not installed" in missing.output


def test_every_command_exits_2_on_invalid_input_as_plan_does(tmp_path, monkeypatch):
    _on_path(tmp_path, monkeypatch, "echo v3.200.0\n")
    up = _cli("up", "nope")
    assert up.exit_code == 2 and "no stack named 'nope'" in up.output, up.output
    assert _cli("plan", "nope").exit_code == 2
    assert _cli("preview").exit_code == 2                    # no stack named: usage
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE")
    assert _cli("preview", "dev").exit_code == 2             # a setting the run needs


def test_version():
    from modelplane import __version__

    result = _cli("--version")
    assert result.exit_code == 0 and result.output == f"modelplane {__version__}\n"

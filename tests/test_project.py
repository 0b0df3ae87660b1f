"""Issue 39: modelplane used from the user's own project, not from its checkout. The project is the
folder of Pulumi.yaml (found upward, or --project); stacks come from its stackConfigDir; a fleet's
infra stacks sit beside the stack file; the catalog, prices and policy configs are the package's
plus the project's own; `init` starts a project; a built wheel carries the package's data."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from modelplane.cli import main

from helpers import source_copy

ROOT = Path(__file__).resolve().parents[1]

PROJECT = "name: acme-inference\nruntime:\n  name: python\n  options:\n    virtualenv: venv\nstackConfigDir: stacks\n"
INFRA = """config:
  aws:region: us-west-2
  modelplane:clusters:
    - name: eks-usw2
      labels: {modelplane.ai/cloud: aws, modelplane.ai/region: us-west-2}
      eks: {region: us-west-2, version: "1.34", subnetIds: [subnet-0a11c0ffee0000001, subnet-0b22c0ffee0000002]}
      nodePools:
        - {name: h100, class: eks-h100-8x-p5, minNodes: 2, maxNodes: 2}
      queues:
        - {namespace: chat, gpuQuota: 16}
"""
APPS = """config:
  modelplane:fleet: [infra-eks-us-west-2]
  modelplane:deployments:
    - name: qwen3-32b
      namespace: chat
      model: {uri: hf://Qwen/Qwen3-32B}
      replicas: 2
      clusterSelector: {matchLabels: {modelplane.ai/region: us-west-2}}
      workers: {count: 1, topology: {tensor: 4}}
"""


def user_project(folder: Path) -> Path:
    """The user's own infra repository: Pulumi.yaml, an apps stack and its own infra stack in another region."""
    (folder / "stacks").mkdir(parents=True)
    (folder / "Pulumi.yaml").write_text(PROJECT)
    (folder / "stacks" / "Pulumi.infra-eks-us-west-2.yaml").write_text(INFRA)
    (folder / "stacks" / "Pulumi.prod.yaml").write_text(APPS)
    return folder


def plan(*args, **kw):
    return CliRunner().invoke(main, ["plan", *map(str, args)], **kw)


def test_plan_in_the_users_project_plans_its_files_and_reads_its_infra_stack(tmp_path, monkeypatch):
    user_project(tmp_path / "infra")
    (tmp_path / "infra" / "docs").mkdir()
    monkeypatch.chdir(tmp_path / "infra" / "docs")         # found upward, as the Pulumi CLI finds it
    result = plan("prod", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["apiVersion"] == "modelplane.ai/v1alpha1" and doc["stack"] == "prod"
    assert sorted((p["deployment"], p["cluster"]) for p in doc["placements"]) == [("chat/qwen3-32b", "eks-usw2")] * 2
    assert [c["region"] for c in doc["clusters"]] == ["us-west-2"]
    # the infra stack plans on its own from the same folder
    infra = plan("infra-eks-us-west-2")
    assert infra.exit_code == 0 and "eks-usw2" in infra.output, infra.output


def test_project_names_the_folder_from_anywhere_and_an_unknown_stack_names_it(tmp_path, monkeypatch):
    user_project(tmp_path / "infra")
    monkeypatch.chdir(tmp_path)
    assert plan("prod", "--project", tmp_path / "infra").exit_code == 0
    missing = plan("prd", "--project", tmp_path / "infra")
    assert missing.exit_code == 2 and "no stack 'prd' (no stacks/Pulumi.prd.yaml)" in missing.output
    assert "did you mean 'prod'?" in missing.output
    nowhere = plan("prod")                                    # no Pulumi.yaml here or above
    assert nowhere.exit_code == 2 and "run `modelplane init`" in nowhere.output, nowhere.output
    not_a_project = plan("prod", "--project", tmp_path)
    assert not_a_project.exit_code == 2 and "no Pulumi.yaml in this folder" in not_a_project.output


def test_a_copied_stack_file_finds_the_infra_stacks_beside_it_first(tmp_path, monkeypatch):
    user_project(tmp_path / "infra")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "Pulumi.prod.yaml").write_text(APPS)
    other = INFRA.replace("eks-usw2", "eks-usw2b").replace("maxNodes: 2", "maxNodes: 3")
    (scratch / "Pulumi.infra-eks-us-west-2.yaml").write_text(other)
    monkeypatch.chdir(tmp_path / "infra")
    doc = json.loads(plan("prod", "--config-file", scratch / "Pulumi.prod.yaml", "--json").stdout)
    assert {p["cluster"] for p in doc["placements"]} == {"eks-usw2b"}           # beside the file wins
    (scratch / "Pulumi.infra-eks-us-west-2.yaml").unlink()
    doc = json.loads(plan("prod", "--config-file", scratch / "Pulumi.prod.yaml", "--json").stdout)
    assert {p["cluster"] for p in doc["placements"]} == {"eks-usw2"}            # else the project's stacks
    (scratch / "Pulumi.prod.yaml").write_text(APPS.replace("[infra-eks-us-west-2]", "[infra-eks-us-west-3]"))
    result = plan("prod", "--config-file", scratch / "Pulumi.prod.yaml")
    assert result.exit_code == 2, result.output
    assert f"{scratch / 'Pulumi.prod.yaml'}:2: config.modelplane:fleet[0]: fleet names stack 'infra-eks-us-west-3'" \
        in result.output and "did you mean 'infra-eks-us-west-2'?" in result.output


def test_the_projects_classes_and_prices_join_the_package_and_replace_its_own(tmp_path, monkeypatch):
    user_project(tmp_path)
    (tmp_path / "catalog").mkdir()
    p5 = yaml.safe_load((ROOT / "catalog" / "eks-p5.yaml").read_text())
    h100 = next(c for c in p5["classes"] if c["name"] == "eks-h100-8x-p5")
    lab = {**h100, "name": "eks-h100-8x-lab"}
    (tmp_path / "catalog" / "mine.yaml").write_text(yaml.safe_dump({"classes": [h100, lab]}))
    (tmp_path / "catalog" / "prices.yaml").write_text(
        "prices:\n  - {class: eks-h100-8x-p5, region: us-west-2, capacityType: on-demand, hourly: 40, "
        "source: our contract, asOf: 2026-11-01}\n")
    monkeypatch.chdir(tmp_path)
    classes = CliRunner().invoke(main, ["classes"], terminal_width=300)
    assert "eks-h100-8x-lab" in classes.output and "catalog/mine.yaml" in classes.output, classes.output
    result = plan("prod")
    assert result.exit_code == 0, result.output
    assert "catalog: class eks-h100-8x-p5 from catalog/mine.yaml replaces the built-in one" in result.output
    doc = json.loads(plan("prod", "--json").stdout)
    assert doc["catalog"]["overrides"] == [{"kind": "class", "name": "eks-h100-8x-p5", "file": "catalog/mine.yaml"}]
    assert doc["cost"]["stack"]["hourly"]["min"] == 80.0          # 2 nodes at the project's price
    assert {p["source"] for p in doc["cost"]["prices"]} == {"our contract"}
    # --catalog adds another folder; a class it defines twice with the project is refused by name
    extra = tmp_path / "more"
    extra.mkdir()
    (extra / "x.yaml").write_text(yaml.safe_dump({"classes": [lab]}))
    twice = plan("prod", "--catalog", extra)
    assert twice.exit_code == 2 and "class 'eks-h100-8x-lab' is already defined in catalog/mine.yaml" in twice.output


def test_prices_refresh_writes_into_the_project(tmp_path, monkeypatch):
    from modelplane.prices import fetch

    user_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    row = {"class": "eks-h100-8x-p5", "region": "us-west-2", "capacityType": "on-demand", "hourly": 55.04,
           "source": "AWS Price List Query API", "asOf": "2026-11-24"}
    monkeypatch.setattr(fetch, "refresh", lambda catalog, clouds, wanted, today: ([row], []))
    result = CliRunner().invoke(main, ["prices", "refresh", "--cloud", "aws", "--regions", "us-west-2"])
    assert result.exit_code == 0, result.output
    written = tmp_path / "catalog" / "prices.yaml"
    assert written.exists() and "hourly: 55.04" in written.read_text()
    assert f"wrote 1 price(s) to {written}" in result.output
    doc = json.loads(plan("prod", "--json").stdout)
    assert doc["cost"]["stack"]["hourly"]["min"] == pytest.approx(2 * 55.04)


def test_policy_configs_default_from_the_project(tmp_path, monkeypatch):
    user_project(tmp_path)
    (tmp_path / "policies" / "config").mkdir(parents=True)
    (tmp_path / "policies" / "config" / "dev.json").write_text('{"gpu-budget": {"enforcementLevel": "mandatory", '
                                                               '"maxGpus": 4}}')
    monkeypatch.chdir(tmp_path)
    result = plan("prod")
    assert result.exit_code == 1 and "policy gpu-budget (mandatory, 1)" in result.output, result.output


def test_init_starts_a_project_that_plans_at_once(tmp_path, monkeypatch):
    folder = tmp_path / "my infra"
    result = CliRunner().invoke(main, ["init", str(folder)])
    assert result.exit_code == 0, result.output
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == [
        ".gitignore", "Pulumi.yaml", "__main__.py", "requirements.txt", "stacks/Pulumi.dev.yaml"]
    project = yaml.safe_load((folder / "Pulumi.yaml").read_text())
    assert project["name"] == "my-infra" and project["stackConfigDir"] == "stacks"
    assert ".pulumi-state/" in (folder / ".gitignore").read_text().splitlines()    # `up`'s local state
    # the modelplane running now, as a line a CI runner can install: never a local file
    needed = [line for line in (folder / "requirements.txt").read_text().splitlines() if not line.startswith("#")]
    assert len(needed) == 1 and needed[0].startswith(("modelplane @ git+", "modelplane==")), needed
    monkeypatch.chdir(folder)
    planned = plan("dev", "--json")
    assert planned.exit_code == 0, planned.output
    assert [(p["deployment"], p["cluster"]) for p in json.loads(planned.stdout)["placements"]] == [
        ("ml/qwen3-8b", "dev-gke")]
    again = CliRunner().invoke(main, ["init", str(folder)])
    assert again.exit_code == 2 and "the folder is not empty" in again.output


# --- the package as a user installs it ---------------------------------------------------------

def _build_wheel(tmp_path: Path) -> Path:
    """A wheel of this checkout, built from a copy (so the checkout gets no build/ or egg-info)."""
    src = source_copy(tmp_path / "src")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"),
                            str(src)], capture_output=True, text=True, env=env, timeout=600)
    if built.returncode != 0:
        text = built.stdout + built.stderr
        if any(s in text for s in ("No matching distribution", "Could not find a version", "NewConnectionError",
                                   "Temporary failure in name resolution", "Network is unreachable")):
            pytest.skip("building a wheel needs setuptools from a package index, which is not reachable here")
        raise AssertionError(text)
    return next((tmp_path / "dist").glob("modelplane-*.whl"))


def test_a_wheel_installed_in_a_fresh_virtualenv_has_its_data_and_plans_the_users_project(tmp_path):
    """The wheel alone, in a new virtualenv (its dependencies borrowed from this one through a .pth
    line added after the install, so nothing is downloaded and this environment is never touched)."""
    import sysconfig

    wheel = _build_wheel(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, env=env, timeout=300)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    project = user_project(tmp_path / "infra")

    def modelplane(*args):
        return subprocess.run([str(python), "-m", "modelplane", *args], capture_output=True, text=True, env=env,
                              cwd=project, timeout=300)
    where = subprocess.run([str(python), "-c", "import modelplane, modelplane.api.project as p; "
                            "print(modelplane.__file__); print(p.data_dir('catalog'))"],
                           capture_output=True, text=True, env=env, cwd=project).stdout.split()
    assert where[0].startswith(str(site)) and where[1] == str(site / "modelplane" / "_data" / "catalog"), where
    classes = modelplane("classes")
    assert classes.returncode == 0, classes.stderr
    from modelplane.api import load_catalog

    assert all(name in classes.stdout for name in load_catalog().classes), classes.stdout
    planned = modelplane("plan", "prod", "--json")
    assert planned.returncode == 0, planned.stderr
    doc = json.loads(planned.stdout)
    assert {p["cluster"] for p in doc["placements"]} == {"eks-usw2"} and doc["policy"]["violations"] == []
    out = tmp_path / "out"
    assert modelplane("plan", "prod", "--out", str(out)).returncode == 0
    checked = modelplane("validate", str(out))          # the schemas came with the wheel
    assert checked.returncode == 0 and " ok " in f" {checked.stdout} ", checked.stdout
    # `init` names the wheel it was installed from as the new project's requirement
    # (run outside the checkout: `python -m` puts the working folder first on sys.path, and an editable
    # install leaves modelplane.egg-info in the checkout)
    assert subprocess.run([str(python), "-m", "modelplane", "init", str(tmp_path / "new")], env=env, cwd=tmp_path,
                          capture_output=True, text=True).returncode == 0
    # `init` pins the version the wheel holds and names the file it came from in a comment (a CI
    # runner has no such file)
    from modelplane import __version__

    lines = (tmp_path / "new" / "requirements.txt").read_text().splitlines()
    assert lines[-1] == f"modelplane=={__version__}" and wheel.resolve().as_uri() in lines[0], lines



def test_init_beside_a_virtualenv_made_first_names_it(tmp_path):
    """The natural order: a venv, install modelplane, then `init` in the same folder."""
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    result = CliRunner().invoke(main, ["init", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load((tmp_path / "Pulumi.yaml").read_text())["runtime"]["options"]["virtualenv"] == ".venv"
    (tmp_path / "stray.txt").write_text("x")
    again = CliRunner().invoke(main, ["init", str(tmp_path)])
    assert again.exit_code == 2 and "the folder is not empty" in again.output


def test_init_pins_a_clone_with_a_remote_by_its_commit(tmp_path, monkeypatch):
    """Installed from a clone (editable or not): the requirement is the clone's remote at its commit."""
    from importlib import metadata

    from modelplane import scaffold

    clone = tmp_path / "clone"
    clone.mkdir()
    origin = json.dumps({"url": clone.as_uri(), "dir_info": {"editable": True}})

    class Dist:
        def read_text(self, name):
            return origin if name == "direct_url.json" else None
    monkeypatch.setattr(metadata, "distribution", lambda name: Dist())
    answers = {("remote", "get-url", "origin"): "https://github.com/acme/modelplane.git",
               ("rev-parse", "HEAD"): "0123456789abcdef0123456789abcdef01234567"}
    monkeypatch.setattr(scaffold, "_git", lambda folder, *args: answers[args] if folder == str(clone) else "")
    assert scaffold.requirement() == ("modelplane @ git+https://github.com/acme/modelplane.git"
                                      "@0123456789abcdef0123456789abcdef01234567")
    answers[("remote", "get-url", "origin")] = ""          # no remote: the version, the file in a comment
    lines = scaffold.requirement().splitlines()
    assert lines[-1].startswith("modelplane==") and clone.as_uri() in lines[0]

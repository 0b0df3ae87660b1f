"""API models and loaders: valid input loads; bad input names file, path, line and fix."""
from pathlib import Path

import pytest
import yaml

from modelplane.api import load_stack, stack_file
from modelplane.api.deployment import Topology
from modelplane.errors import InputError

DEV = stack_file("dev")


def write_variant(tmp_path: Path, edit) -> Path:
    doc = yaml.safe_load(DEV.read_text())
    edit(doc["config"])
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def problems(tmp_path, edit, catalog):
    with pytest.raises(InputError) as exc:
        load_stack(write_variant(tmp_path, edit), catalog)
    return exc.value.problems


def test_dev_stack_loads(catalog):
    spec = load_stack(DEV, catalog)
    assert [c.name for c in spec.clusters] == ["dev-gke"]
    assert {p.class_ for p in spec.clusters[0].node_pools} == {"gke-l4-1x-g2", "gke-h100-8x-a3high"}
    unified, disagg = spec.deployments
    assert not unified.disaggregated and disagg.disaggregated
    assert disagg.prefill.workers.count != disagg.workers.count


def test_misspelled_key_gets_did_you_mean(tmp_path, catalog):
    def edit(cfg):
        cfg["modelplane:deployments"][0]["replcas"] = cfg["modelplane:deployments"][0].pop("replicas")
    found = problems(tmp_path, edit, catalog)
    extra = next(p for p in found if "unknown field" in p.message)
    assert extra.path == "modelplane:deployments[0].replcas"
    assert extra.fix == "did you mean 'replicas'?"
    assert extra.file.endswith("Pulumi.bad.yaml") and extra.line is not None


def test_wrong_type_and_negative_replicas(tmp_path, catalog):
    def edit(cfg):
        cfg["modelplane:deployments"][0]["replicas"] = -1
        cfg["modelplane:clusters"][0]["nodePools"][0]["maxNodes"] = "four"
    found = {p.path: p for p in problems(tmp_path, edit, catalog)}
    assert "must be at least 0" in found["modelplane:deployments[0].replicas"].message
    assert "whole number" in found["modelplane:clusters[0].nodePools[0].maxNodes"].message


def test_unknown_class_suggests_the_closest(tmp_path, catalog):
    def edit(cfg):
        cfg["modelplane:clusters"][0]["nodePools"][1]["class"] = "gke-h100-8x-a3hi"
    (p,) = problems(tmp_path, edit, catalog)
    assert p.path == "modelplane:clusters[0].nodePools[1].class"
    assert "unknown class 'gke-h100-8x-a3hi'" in p.message and "gke-h100-8x-a3high" in p.fix


def test_class_without_provisioning_for_the_cloud(tmp_path, catalog):
    def edit(cfg):
        cfg["modelplane:clusters"][0]["nodePools"][1]["class"] = "eks-h100-8x-p5"
    (p,) = problems(tmp_path, edit, catalog)
    assert "no provisioning.gke block" in p.message and "gke-h100-8x-a3" in p.fix


def test_unknown_top_level_config_key(tmp_path, catalog):
    def edit(cfg):
        cfg["modelplane:deploymets"] = cfg.pop("modelplane:deployments")
    (p,) = problems(tmp_path, edit, catalog)
    assert p.fix == "did you mean 'modelplane:deployments'?"


def test_duplicates_zones_and_bounds(tmp_path, catalog):
    def edit(cfg):
        pools = cfg["modelplane:clusters"][0]["nodePools"]
        pools[1]["name"] = "l4"
        pools[0]["zones"] = []
        cfg["modelplane:deployments"].append(dict(cfg["modelplane:deployments"][0]))
    found = [p.message for p in problems(tmp_path, edit, catalog)]
    assert any("pool name 'l4' is used twice" in m for m in found)
    assert any("has no zones" in m for m in found)
    assert any("declared twice" in m for m in found)


def test_min_greater_than_max(tmp_path, catalog):
    def edit(cfg):
        cfg["modelplane:clusters"][0]["nodePools"][0]["minNodes"] = 9
    (p,) = problems(tmp_path, edit, catalog)
    assert "minNodes (9) is greater than maxNodes (4)" in p.message


def test_unpinned_image_and_plain_secret(tmp_path, catalog):
    def edit(cfg):
        d = cfg["modelplane:deployments"][0]
        d["engine"]["image"] = "vllm/vllm-openai:latest"
        d["engine"]["env"] = [{"name": "HF_TOKEN", "value": "hf_abc"}]
    found = {p.path: p for p in problems(tmp_path, edit, catalog)}
    assert "not pinned" in found["modelplane:deployments[0].engine.image"].message
    assert "secretKeyRef" in found["modelplane:deployments[0].engine.env[0]"].fix


def test_depends_on_cycle_and_unknown_role(tmp_path, catalog):
    def edit(cfg):
        d = cfg["modelplane:deployments"][0]
        d["roles"] = [{"name": "router", "image": "ghcr.io/x/router:v1", "dependsOn": ["tokenizer"]},
                      {"name": "tokenizer", "image": "ghcr.io/x/tok:v1", "dependsOn": ["router", "decod"]}]
    found = [p for p in problems(tmp_path, edit, catalog)]
    assert any("cycle" in p.message for p in found)
    assert any("unknown role 'decod'" in p.message and "decode" in p.fix for p in found)


def test_invalid_yaml_reports_line(tmp_path, catalog):
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text("config:\n  modelplane:clusters: [\n")
    with pytest.raises(InputError) as exc:
        load_stack(path, catalog)
    assert "not valid YAML" in exc.value.problems[0].message


@pytest.mark.parametrize("axes,shape", [
    (dict(tensor=1), (1, 1, 1)), (dict(tensor=8), (1, 8, 8)), (dict(tensor=8, pipeline=2), (2, 8, 16)),
    (dict(tensor=4, pipeline=4), (4, 4, 16)), (dict(tensor=2, data=8, data_local=4), (2, 8, 16)),
])
def test_topology_math(axes, shape):
    t = Topology(**axes)
    assert (t.nodes_per_worker, t.gpus_per_node, t.gpus_per_worker) == shape


def test_topology_data_must_divide():
    with pytest.raises(ValueError, match="not a multiple of dataLocal"):
        Topology(tensor=1, data=3, data_local=2)

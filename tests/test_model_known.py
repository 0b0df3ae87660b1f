"""Every model checked (issue 46; user trial 2026-11-26 B2): a model's facts come from the catalog or
the stack (`model.sizeGiB`, `model.attentionHeads`), the memory and tensor-divides-heads rules apply
to any model with them, and a model without them is named by `model-known` (mandatory in production)."""
import json

from click.testing import CliRunner

from modelplane.cli import main
from modelplane.scheduler.filter import heads_problem
from modelplane.scheduler.model import Role

from test_bad_input import CLUSTERS, DEV

GPT = ("      model: {uri: hf://openai/gpt-oss-20b}\n      replicas: 2\n"
       "      nodeSelector: {cel: 'gpu.memoryGiB >= 24'}\n      workers: {count: 1, topology: {tensor: 1}}\n")


def stack(tmp_path, model: str, tensor: int):
    assert GPT in DEV
    body = DEV.replace(GPT, f"      model: {model}\n      replicas: 1\n      nodeSelector: {{cel: 'gpu.product == \"H100\"'}}\n"
                            f"      workers: {{count: 1, topology: {{tensor: {tensor}}}}}\n", 1)
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(body.replace(CLUSTERS, "  modelplane:production: true\n" + CLUSTERS, 1))
    return path


def plan(*args):
    return CliRunner().invoke(main, ["plan", "dev", *map(str, args)])


def unplaced(path):
    doc = json.loads(plan("--config-file", path, "--json").stdout)
    [stuck] = [u for u in doc["unplaced"] if u["deployment"] == "ml-team/gpt-oss-20b"]
    return stuck["reasons"]


def test_an_unknown_model_at_tp1_on_one_h100_is_refused_in_production_by_model_known(tmp_path):
    path = stack(tmp_path, "{uri: hf://meta-llama/Llama-3.1-70B-Instruct}", 1)
    result = plan("--config-file", path)
    assert result.exit_code == 1 and "model-known (mandatory" in result.output, result.output
    assert "Llama-3.1-70B-Instruct has no known sizeGiB" in result.output
    assert "attentionHeads (tensor must divide them)" in result.output


def test_with_its_size_given_the_memory_rule_refuses_it(tmp_path):
    path = stack(tmp_path, "{uri: hf://meta-llama/Llama-3.1-70B-Instruct, sizeGiB: 131.5, attentionHeads: 64}", 1)
    result = plan("--config-file", path)
    assert result.exit_code == 1 and "placement-complete (mandatory" in result.output, result.output
    assert "model-known" not in result.output
    assert any(r["reason"] == "memory" and "132 GiB of weights exceed" in r["detail"] for r in unplaced(path))


def test_tp3_on_a_64_head_model_is_refused_naming_the_heads(tmp_path):
    # The catalog's Qwen3-32B (64 heads) and an inline model alike.
    for model in ("{uri: hf://Qwen/Qwen3-32B}", "{uri: hf://acme/finetune-70b, sizeGiB: 40, attentionHeads: 64}"):
        reasons = unplaced(stack(tmp_path, model, 3))
        assert any(r["reason"] == "shape" and "tensor 3 does not divide the model's 64 attention heads" in r["detail"]
                   for r in reasons), (model, reasons)


def test_the_heads_rule_is_vllms_divisibility_and_skips_unknown_heads():
    # vllm-project/vllm vllm/config/model.py ModelConfig.verify_with_parallel_config
    role = Role("decode", "true", 1, 1, 8, topology=(8, 1, 1, 1), attention_heads=64)
    assert heads_problem(role) is None
    assert "tensor 3" in heads_problem(Role("decode", "true", 1, 1, 3, topology=(3, 1, 1, 1), attention_heads=64))
    assert heads_problem(Role("decode", "true", 1, 1, 3, topology=(3, 1, 1, 1))) is None

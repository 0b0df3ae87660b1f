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
    path = stack(tmp_path, "{uri: hf://meta-llama/Llama-3.1-70B-Instruct, sizeGiB: 131.5, attentionHeads: 64, "
                           "layers: 80, kvHeads: 8, headDim: 128}", 1)
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


# Llama-3.1-70B-Instruct's config.json, the keys the reader uses (huggingface.co/meta-llama/
# Llama-3.1-70B-Instruct/blob/main/config.json; recalled, as catalog/models.yaml's facts are).
LLAMA_70B = {"architectures": ["LlamaForCausalLM"], "hidden_size": 8192, "intermediate_size": 28672,
             "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8, "vocab_size": 128256,
             "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


def with_config(tmp_path, config: dict | str, tensor: int = 1, extra: str = ""):
    (tmp_path / "models").mkdir(exist_ok=True)
    (tmp_path / "models" / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    return stack(tmp_path, "{uri: hf://meta-llama/Llama-3.1-70B-Instruct, config: models/config.json" + extra + "}",
                 tensor)


def test_with_its_config_json_the_memory_rule_refuses_it_and_the_plan_records_the_source(tmp_path):
    # model.config is relative to the stack file's folder, wherever the plan runs from
    path = with_config(tmp_path, LLAMA_70B)
    result = plan("--config-file", path)
    assert result.exit_code == 1 and "model-known" not in result.output, result.output
    assert any(r["reason"] == "memory" and "131 GiB of weights exceed" in r["detail"] for r in unplaced(path))
    facts = json.loads(plan("--config-file", path, "--json").stdout)["models"]["ml-team/gpt-oss-20b"]["facts"]
    assert facts["sizeGiB"] == {"value": 131.4, "source": "config.json (models/config.json): parameters x bfloat16"}
    assert facts["attentionHeads"] == {"value": 64, "source": "config.json (models/config.json)"}
    assert facts["kvHeads"]["value"] == 8 and facts["headDim"]["value"] == 128


def test_inline_facts_win_over_the_config_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = with_config(tmp_path, LLAMA_70B, 8, ', parameters: "8B", dtype: bfloat16')
    facts = json.loads(plan("--config-file", path, "--json").stdout)["models"]["ml-team/gpt-oss-20b"]["facts"]
    assert facts["sizeGiB"] == {"value": 14.9, "source": "stack: parameters x bfloat16"}
    assert facts["layers"]["source"] == "config.json (models/config.json)"


def test_tp3_is_refused_with_the_heads_of_the_config_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    reasons = unplaced(with_config(tmp_path, LLAMA_70B, 3))
    assert any("tensor 3 does not divide the model's 64 attention heads" in r["detail"] for r in reasons), reasons


def test_a_missing_or_bad_config_file_is_an_error_naming_file_line_field_and_fix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = stack(tmp_path, "{uri: hf://acme/ft, config: models/nope.json}", 1)
    result = plan("--config-file", path)
    assert result.exit_code == 2, result.output
    assert "Pulumi.dev.yaml:25: modelplane:deployments[0].model.config: model.config models/nope.json: no such file" \
        in result.output
    assert "Traceback" not in result.output and "point model.config at the checkpoint's config.json" in result.output
    broken = {k: v for k, v in LLAMA_70B.items() if k != "num_attention_heads"}
    result = plan("--config-file", with_config(tmp_path, broken))
    assert result.exit_code == 2 and "num_attention_heads is missing" in result.output, result.output
    assert "fix num_attention_heads in models/config.json" in result.output
    result = plan("--config-file", with_config(tmp_path, "{not json"))
    assert result.exit_code == 2 and "is not a readable JSON file" in result.output, result.output


def test_latent_attention_configs_give_kv_facts_but_no_parameter_estimate():
    from modelplane.api.modelconfig import facts_from_config
    deepseek = {"num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128, "hidden_size": 7168,
                "n_routed_experts": 256, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "torch_dtype": "bfloat16",
                "quantization_config": {"quant_method": "fp8"}}
    facts = facts_from_config(deepseek)
    assert facts["kvLoraRank"] == 576 and facts["experts"] == 256 and facts["dtype"] == "fp8"
    assert "parameters" not in facts
    assert facts_from_config(LLAMA_70B)["parameters"] == 70_553_706_496


# KV headroom (issue 46 point 5; cloud review: DeepSeek-R1 DP16 on H100 leaves ~1.6 GiB per GPU).

def test_a_wide_ep_deepseek_on_h100_reports_its_kv_cache_under_a_32k_floor():
    from modelplane.api import load_catalog
    from modelplane.api.deployment import ModelDeployment
    from modelplane.engine.fleet import demand_from
    from modelplane.scheduler.filter import kv_headroom
    from modelplane.scheduler.model import Pool
    md = ModelDeployment.model_validate({"name": "r1", "namespace": "ml", "model": {"uri": "hf://deepseek-ai/DeepSeek-R1"},
                                         "replicas": 1, "workers": {"count": 1, "topology":
                                         {"tensor": 1, "data": 16, "dataLocal": 8, "expert": True}}})
    [role] = demand_from(md, load_catalog()).roles
    h100 = Pool("p", "eks-h100-8x-p5", 8, 2, memory_mib=81559)
    row = kv_headroom(role, h100, 32768)
    # 0.9 x 79.6 GiB - (32 GiB of non-expert weights + 609 GiB of experts / 16) per GPU
    assert 1.2 < row["kvCacheGiB"] < 2.0, row
    # 61 layers x (512 + 64) latent values x 2 bytes per token, 32768 tokens: 2.14 GiB
    assert row["floorGiB"] == 2.14 and row["floorTokens"] == 32768


def test_under_the_floor_the_plan_shows_it_and_kv_headroom_advises(tmp_path):
    model = "{uri: hf://acme/dense-70, sizeGiB: 70, attentionHeads: 64, layers: 80, kvHeads: 8, headDim: 128}"
    path = stack(tmp_path, model, 1)   # the engine keeps --max-model-len=32768
    result = plan("--config-file", path)
    assert "policy kv-headroom (advisory, 1)" in result.output, result.output
    assert ("ml-team/gpt-oss-20b replica 0 decode on dev-gke/h100: 1.7 GiB of KV cache per GPU; one request of "
            "32768 tokens needs 10.00 GiB") in result.output
    doc = json.loads(plan("--config-file", path, "--json").stdout)
    [row] = doc["models"]["ml-team/gpt-oss-20b"]["kvCache"]
    assert row["kvCacheGiB"] == 1.7 and row["floorGiB"] == 10.0 and row["pool"] == "h100"

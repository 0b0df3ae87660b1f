"""A model's facts from its Hugging Face `config.json` (`model.config` in the stack): layers,
attention and KV heads, hidden size, experts, dtype, and the KV cache one token takes.

Key names are transformers' own (PretrainedConfig and the Llama, Qwen, Mixtral, DeepSeek-V3
configs: num_hidden_layers, num_attention_heads, num_key_value_heads, hidden_size, head_dim,
intermediate_size, vocab_size, tie_word_embeddings, torch_dtype, quantization_config,
num_local_experts / n_routed_experts / num_experts, moe_intermediate_size, kv_lora_rank,
qk_rope_head_dim). Pure: a dict in, facts out; reading the file is the caller's.
"""
from __future__ import annotations

import json
from pathlib import Path

# Bytes per weight of a checkpoint's stored dtype (torch_dtype, or quantization_config.quant_method
# for quantized checkpoints; MXFP4 stores 4-bit values with a shared 8-bit scale per 32).
DTYPE_BYTES = {"float32": 4.0, "bfloat16": 2.0, "float16": 2.0, "fp8": 1.0, "int8": 1.0, "mxfp4": 0.53, "int4": 0.5}
EXPERT_KEYS = ("n_routed_experts", "num_local_experts", "num_experts")


class ConfigError(ValueError):
    """A config.json that cannot give the facts: `field` names its key."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(message)


def read_config(path: Path, shown: str) -> dict:
    """The parsed config.json at `path`, `shown` as the stack wrote it (ConfigError when missing or
    not a JSON object)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("config", f"no such file: {shown} (looked for {path})") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError("config", f"{shown} is not a readable JSON file ({exc.__class__.__name__})") from None
    if not isinstance(doc, dict):
        raise ConfigError("config", f"{shown} holds no JSON object; a Hugging Face config.json is one")
    # Multimodal checkpoints keep the language model's keys under text_config.
    text = doc.get("text_config")
    return {**doc, **text} if isinstance(text, dict) else doc


def _int(doc: dict, key: str, required: bool = True) -> int | None:
    value = doc.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(key, f"{key} is {'missing' if value is None else repr(value)}; a positive integer is needed")
    return value


def dtype_of(doc: dict) -> str:
    """The stored dtype: the quantization method where one is given, else torch_dtype (newer
    transformers write it as `dtype`)."""
    quant = doc.get("quantization_config")
    if isinstance(quant, dict) and str(quant.get("quant_method", "")).lower() in DTYPE_BYTES:
        return str(quant["quant_method"]).lower()
    dtype = doc.get("torch_dtype") or doc.get("dtype")
    if dtype not in DTYPE_BYTES:
        raise ConfigError("torch_dtype", f"torch_dtype is {dtype!r}; one of {', '.join(DTYPE_BYTES)} is needed")
    return dtype


def facts_from_config(doc: dict) -> dict:
    """The facts a config.json gives, in the stack's field names (ModelSource): layers,
    attentionHeads, kvHeads, headDim, hiddenSize, experts, dtype, kvLoraRank (multi-head latent
    attention) and, for the architectures whose parameters follow from the config, parameters."""
    layers, heads, hidden = _int(doc, "num_hidden_layers"), _int(doc, "num_attention_heads"), _int(doc, "hidden_size")
    kv_heads = _int(doc, "num_key_value_heads", required=False) or heads   # absent: multi-head attention
    head_dim = _int(doc, "head_dim", required=False) or hidden // heads
    experts = next((_int(doc, k) for k in EXPERT_KEYS if doc.get(k) is not None), 0)
    out = {"layers": layers, "attentionHeads": heads, "kvHeads": kv_heads, "headDim": head_dim,
           "hiddenSize": hidden, "experts": experts, "dtype": dtype_of(doc)}
    if doc.get("kv_lora_rank") is not None:
        # Multi-head latent attention caches one latent (kv_lora_rank + the rotary key) per token
        # and layer; its parameter count needs more than this reader models, so none is given.
        out["kvLoraRank"] = _int(doc, "kv_lora_rank") + (_int(doc, "qk_rope_head_dim", required=False) or 0)
        return out
    vocab = _int(doc, "vocab_size")
    inter = _int(doc, "moe_intermediate_size" if experts and doc.get("moe_intermediate_size") else "intermediate_size")
    attention = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2   # q, o; k, v
    mlp = 3 * hidden * inter * max(experts, 1)                                      # gate, up, down per expert
    embeddings = vocab * hidden * (1 if doc.get("tie_word_embeddings") else 2)
    norms = 2 * hidden                                                                # two RMSNorms per layer
    out["parameters"] = layers * (attention + mlp + norms) + embeddings + hidden      # and the final norm
    return out

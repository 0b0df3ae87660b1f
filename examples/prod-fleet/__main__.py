"""The prod fleet from Python: three infra stacks' clusters, four models, three services.

    modelplane plan prod --program examples/prod-fleet     # offline, no cloud
    cd examples/prod-fleet && pulumi up --stack prod        # with the CLI and credentials

Entries are dicts in the stack file's shape, which type checkers check against the TypedDicts of
modelplane.sdk.fleet_types, or typed models (modelplane.Provider below, with its nested models); they
mix freely, and the Fleet validates them like a stack file and schedules every replica in one run.
"""
import pulumi

from modelplane import Fleet, FleetArgs, Provider
from modelplane.sdk import fleet_types as mp
from modelplane.api.service import ApiKey

US, EU = {"modelplane.ai/residency": "us"}, {"modelplane.ai/residency": "eu"}
PD = '--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_both"}'
BIG = 'gpu.memoryGiB >= 141 && network.fabric in ["roce", "efa"]'

deployments: list[mp.ModelDeployment] = [
    {"name": "llama-70b", "namespace": "chat", "labels": US, "replicas": 3,
     "model": {"uri": "hf://meta-llama/Llama-3.3-70B-Instruct", "tokenSecret": "hfToken"},
     "clusterSelector": {"matchLabels": {"modelplane.ai/tier": "production", **US}},
     "nodeSelector": {"cel": 'gpu.memoryGiB >= 80 && "fp8" in gpu.features'},
     "workers": {"count": 1, "topology": {"tensor": 8}},
     "engine": {"args": ["--max-model-len=65536", "--quantization=fp8"]}},
    {"name": "deepseek-r1", "namespace": "chat", "labels": US, "replicas": 2,
     "model": {"uri": "hf://deepseek-ai/DeepSeek-R1", "tokenSecret": "hfToken"},
     "clusterSelector": {"matchLabels": US}, "nodeSelector": {"cel": BIG},
     "workers": {"count": 1, "topology": {"tensor": 8, "data": 2, "dataLocal": 1}},
     # acme's llm-d build with aws-ofi-nccl: EFA pins NCCL to it across nodes (docs/cloud-recipes.md)
     "engine": {"args": ["--max-model-len=131072", PD], "image": "registry.acme.io/ml/llm-d-aws-ofi-nccl:v0.8.0"},
     "prefill": {"nodeSelector": {"cel": BIG}, "workers": {"count": 2, "topology": {"tensor": 8}},
                 "engine": {"args": ["--max-model-len=131072", PD]}}},
    {"name": "qwen3-32b", "namespace": "search", "model": {"uri": "hf://Qwen/Qwen3-32B"}, "replicas": 3,
     "backend": "native", "clusterSelector": {"matchLabels": {"modelplane.ai/cloud": "aws"}},
     "nodeSelector": {"cel": 'gpu.product == "L40S"'}, "workers": {"count": 1, "topology": {"tensor": 4}},
     "engine": {"image": "vllm/vllm-openai:v0.10.2", "args": ["--max-model-len=32768"]}},
    {"name": "mistral-small-24b", "namespace": "eu-support", "labels": EU, "replicas": 2,
     "model": {"uri": "hf://mistralai/Mistral-Small-3.2-24B-Instruct-2506"},
     "clusterSelector": {"matchLabels": EU}, "nodeSelector": {"cel": "gpu.memoryGiB >= 24"},
     "workers": {"count": 1, "topology": {"tensor": 4}},
     "engine": {"args": ["--max-model-len=32768", "--tokenizer-mode=mistral"]}},
]

services: list[mp.ModelService] = [
    {"name": "chat", "namespace": "chat", "hostname": "chat.inference.example.com", "labels": US,
     "endpoints": [{"deployment": "llama-70b", "weight": 95}, {"provider": "together", "weight": 5}]},
    {"name": "reasoning", "namespace": "chat", "hostname": "reasoning.inference.example.com", "labels": US,
     "endpoints": [{"deployment": "deepseek-r1"}]},
    {"name": "support", "namespace": "eu-support", "hostname": "support.inference.example.com", "labels": EU,
     "endpoints": [{"deployment": "mistral-small-24b"}]},
]

fleet = Fleet("prod", FleetArgs(
    stacks=["infra-gke-us-central1", "infra-eks-us-east-1", "infra-gke-europe-west4"],
    deployments=deployments,
    services=services,
    providers=[Provider(name="together", url="https://api.together.xyz/v1",
                        model="meta-llama/Llama-3.3-70B-Instruct-Turbo", api_key=ApiKey(secret="togetherApiKey"),
                        labels=US)],
    dns={"route53": {"zoneId": "Z0INFERENCEEXAMPLE", "domain": "inference.example.com"}},
    production=True,
))

# Exported so the next run keeps every replica where it is (the Fleet reads this stack's own
# `placements` output by default).
pulumi.export("placements", fleet.placements)
pulumi.export("unplaced", fleet.unplaced)
pulumi.export("endpoints", fleet.endpoints)

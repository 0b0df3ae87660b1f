"""Engine arguments against the topology, and expert parallelism against what the catalog knows
of the model (rules shared by the loader, the program and the policy pack).

modelplane passes vLLM the parallel sizes of `workers.topology` itself (native backend:
render/native.py; kserve: spec.parallelism, which KServe's presets turn into the same flags), so an
`engine.args` entry that sets one of them differently would start a vLLM that disagrees with the
GPUs the plan booked. vLLM's spellings (vllm/engine/arg_utils.py, EngineArgs.add_cli_args, parallel
group): --tensor-parallel-size/-tp, --pipeline-parallel-size/-pp, --data-parallel-size/-dp,
--data-parallel-size-local/-dpl, --enable-expert-parallel/-ep (and --no-enable-expert-parallel);
its FlexibleArgumentParser also takes underscores for dashes and `--flag=value` or `--flag value`.
"""
from __future__ import annotations

from .deployment import ModelDeployment, Topology
from .findings import Finding

# canonical flag -> (aliases, topology field (the YAML key), value of a topology)
SIZES = {
    "--tensor-parallel-size": (("-tp",), "tensor", lambda t: t.tensor),
    "--pipeline-parallel-size": (("-pp",), "pipeline", lambda t: t.pipeline),
    "--data-parallel-size": (("-dp",), "data", lambda t: t.data),
    "--data-parallel-size-local": (("-dpl",), "dataLocal", lambda t: t.data_local),
}
EXPERT = "--enable-expert-parallel"
NO_EXPERT = "--no-enable-expert-parallel"


def _canonical(word: str) -> tuple[str, str | None]:
    """(flag, inline value) of one argument, the flag with vLLM's aliases and underscores resolved."""
    flag, eq, value = word.partition("=")
    if flag.startswith("--"):
        flag = "--" + flag[2:].replace("_", "-")
    for name, (aliases, _, _) in SIZES.items():
        if flag in aliases:
            flag = name
    if flag == "-ep":
        flag = EXPERT
    return flag, (value if eq else None)


def parallel_flags(args: list[str]) -> list[tuple[int, str, str | None]]:
    """(index, flag, value) of every parallel-size or expert flag in `args`."""
    out = []
    for i, word in enumerate(args):
        flag, value = _canonical(word)
        if flag in SIZES:
            if value is None and i + 1 < len(args):
                value = args[i + 1]
            out.append((i, flag, value))
        elif flag in (EXPERT, NO_EXPERT):
            out.append((i, flag, None))
    return out


def check_engine_args(md: ModelDeployment) -> list[Finding]:
    """Every GPU role's engine.args: parallel sizes and expert parallelism as the topology says."""
    out = []
    for role, (_, workers, engine) in md.gpu_roles().items():
        at = () if role == "decode" else ("prefill",)
        out += [Finding("engine-args", (*at, "engine", "args", i), message, fix)
                for i, message, fix in _contradictions(engine.args, workers.topology, at)]
    return out


def _contradictions(args: list[str], t: Topology, at: tuple) -> list[tuple[int, str, str]]:
    where = ".".join((*at, "workers", "topology"))
    out = []
    for i, flag, value in parallel_flags(args):
        if flag in SIZES:
            _, key, get = SIZES[flag]
            want = get(t)
            if value != str(want):
                shown = args[i] if "=" in args[i] or value is None else f"{args[i]} {value}"
                out.append((i, f"{shown} contradicts {where}.{key} ({want}), from which modelplane passes "
                            f"{flag}={want}", f"remove it from engine.args, and set {where}.{key} to change the size"))
        elif flag == EXPERT and not t.expert:
            out.append((i, f"{args[i]} asks for expert parallelism, which {where} does not have",
                        f"remove it from engine.args and set {where}.expert: true (KServe's parallelism.expert)"))
        elif flag == NO_EXPERT and t.expert:
            out.append((i, f"{args[i]} turns off the expert parallelism {where}.expert asks for",
                        f"remove it from engine.args, or set {where}.expert: false"))
    return out


def check_expert_model(md: ModelDeployment, facts) -> list[Finding]:
    """expert: true needs a mixture of experts: refused for a model the catalog knows as dense
    (`facts`: its catalog/models.yaml entry, None when the catalog does not know it)."""
    if facts is None or facts.moe is not None:
        return []
    return [Finding("expert-model", (*("prefill",) * (role == "prefill"), "workers", "topology", "expert"),
                    f"{md.model.uri} is a dense model (catalog/models.yaml describes no experts), so there are no "
                    "experts to shard: expert parallelism needs a mixture-of-experts model",
                    "drop expert: true; for a dense model data ranks are whole copies (each needs the model's "
                    "memory), or add the model's moe facts to catalog/models.yaml (or your catalogDir) if it has experts")
            for role, (_, workers, _) in md.gpu_roles().items() if workers.topology.expert]

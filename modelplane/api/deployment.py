"""ModelDeployment and ModelService: what ML teams declare in the apps stack."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from .base import Model, Name, Namespace, invalid
from .modelconfig import DTYPE_BYTES, ConfigError, facts_from_config, read_config
from .secrets import secret_kind
from .syntax import (Decimal, DnsSubdomain, HttpPath, HttpUrl, Labels, NoCredentials, Quantity, SecretKey,
                     image_problem)

_SECRET_FIX = ("put a Hugging Face token in model.tokenSecret (a secret config key); pass other credentials "
               "as env with valueFrom.secretKeyRef")


def _plain_args(args: list[str]) -> list[str]:
    for arg in args:
        kind = secret_kind(arg)
        if kind:
            raise invalid(f"an argument holds a credential ({kind}) in plain text (not shown)", _SECRET_FIX)
    return args


Args = Annotated[list[str], AfterValidator(_plain_args)]


class Topology(Model):
    """Flat parallelism axes. Per worker: pipeline*data/dataLocal nodes, tensor*dataLocal GPUs each.
    `expert` (KServe's spelling, spec.parallelism.expert): a mixture-of-experts model's experts are
    sharded over the tensor x data ranks (vLLM --enable-expert-parallel) instead of tensor-split."""

    tensor: int = Field(default=1, ge=1, le=64)
    pipeline: int = Field(default=1, ge=1, le=64)
    data: int = Field(default=1, ge=1, le=256)
    data_local: int = Field(default=1, ge=1, le=64)
    expert: bool = False

    @model_validator(mode="after")
    def _divisible(self):
        if self.data % self.data_local:
            raise invalid(f"data ({self.data}) is not a multiple of dataLocal ({self.data_local})",
                          "make data a multiple of dataLocal (data ranks are spread evenly over nodes)")
        if self.expert and self.expert_size == 1:
            raise invalid("expert: true shards the experts over tensor x data ranks, and both are 1",
                          "set data (e.g. data: 8, dataLocal: 8 for one 8-GPU node) or tensor above 1, or drop expert")
        return self

    @property
    def expert_size(self) -> int:
        """GPUs the experts (or, without `expert`, the expert layers' tensor split) are sharded over."""
        return self.tensor * self.data

    @property
    def nodes_per_worker(self) -> int:
        return self.pipeline * (self.data // self.data_local)

    @property
    def gpus_per_node(self) -> int:
        return self.tensor * self.data_local

    @property
    def gpus_per_worker(self) -> int:
        return self.tensor * self.pipeline * self.data


class Workers(Model):
    count: int = Field(default=1, ge=1, le=64)
    topology: Topology = Topology()


class KeyRef(Model):
    name: DnsSubdomain
    key: SecretKey


class ValueFrom(Model):
    secret_key_ref: KeyRef | None = None
    config_map_key_ref: KeyRef | None = None


_SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|API_KEY|APIKEY|CREDENTIAL)", re.I)


class EnvVar(Model):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    value: str | None = None
    value_from: ValueFrom | None = None

    @model_validator(mode="after")
    def _no_plain_secrets(self):
        if self.value is not None and self.value_from is not None:
            raise invalid("env var has both value and valueFrom", "keep one of them")
        kind = secret_kind(self.value or "")
        if kind:
            raise invalid(f"env var {self.name} holds a credential ({kind}) as a plain value (not shown)",
                          f"store it in a Secret and use valueFrom.secretKeyRef {{name: <secret>, key: <key>}} for "
                          f"{self.name}; a Hugging Face token goes in model.tokenSecret")
        if self.value and _SECRET_NAME.search(self.name):
            raise invalid(f"env var {self.name} looks like a secret but has a plain value",
                          f"use valueFrom.secretKeyRef {{name: <secret>, key: <key>}} for {self.name}")
        return self


class Engine(Model):
    # On the kserve backend leave it out to run the image of KServe's LLMInferenceServiceConfig
    # preset (it runs as non-root, as the preset's securityContext demands).
    image: str | None = None
    args: Args = []
    env: list[EnvVar] = []
    port: int = Field(default=8000, ge=1, le=65535)
    health_path: HttpPath = "/health"

    @field_validator("image")
    @classmethod
    def _pinned(cls, image: str | None) -> str | None:
        if image is None:
            return image
        found = image_problem(image)
        if found:
            raise invalid(*found)
        tail = image.rsplit("/", 1)[-1]
        if "@" not in image and (":" not in tail or tail.endswith(":latest")):
            raise invalid(f"image {image!r} is not pinned to a version",
                          "add an explicit tag (e.g. vllm/vllm-openai:v0.10.2) or a digest (@sha256:…)")
        return image


class NodeSelector(Model):
    cel: str = ""


class ClusterSelector(Model):
    """Which clusters: every matchLabels pair, and `cel` (CEL over `cluster.name`, `cluster.labels`,
    `cluster.region`, `cluster.cloud`) true. `cel` unset is None, not "", so the records of stacks
    without it stay as they were."""

    match_labels: Labels = {}
    cel: str | None = None     # e.g. cluster.cloud == "gcp" && cluster.region.startsWith("us-")


class Prefill(Model):
    """The prefill role of a disaggregated deployment; self-contained (nothing is inherited)."""

    node_selector: NodeSelector = NodeSelector()
    workers: Workers = Workers()
    engine: Engine = Engine()


class ExtraRole(Model):
    """A CPU role such as a router or tokenizer, deployed beside the replica on its cluster."""

    name: Name
    image: str
    args: Args = []
    env: list[EnvVar] = []
    replicas: int = Field(default=1, ge=0, le=100)
    port: int = Field(default=8080, ge=1, le=65535)
    depends_on: list[str] = []
    cpu: Quantity = "1"
    memory: Quantity = "2Gi"

    _pinned = field_validator("image")(Engine._pinned.__func__)


class Autoscaling(Model):
    """An autoscaler for one role: a KEDA ScaledObject with a Prometheus trigger (`serverAddress`,
    `query`, `threshold`) on an extra role or a native GPU role. The substrate installs no
    Prometheus, so `serverAddress` names the one you run. GPU roles on the kserve backend cannot
    autoscale yet (rule `autoscaling-target`: KServe v0.20 accepts only its Workload Variant
    Autoscaler there, which the substrate does not install)."""

    role: str
    min_replicas: int = Field(default=1, ge=0, le=1000)
    max_replicas: int = Field(ge=1, le=1000)
    query: str | None = None
    threshold: Decimal | None = None
    server_address: HttpUrl | None = None   # the Prometheus KEDA asks (required with query; none is installed)

    @model_validator(mode="after")
    def _bounds(self):
        if self.min_replicas > self.max_replicas:
            raise invalid(f"minReplicas ({self.min_replicas}) > maxReplicas ({self.max_replicas})",
                          "raise maxReplicas or lower minReplicas")
        return self


class RatioBand(Model):
    role: str
    min: int = Field(ge=0, le=100)
    max: int = Field(ge=0, le=100)


class Coordination(Model):
    """Role-share bands (percent) that split a total worker budget across GPU roles."""

    total_workers: int = Field(ge=1, le=10_000)
    bands: list[RatioBand] = Field(min_length=1)


class Binding(Model):
    """InPlace scaling: `role` runs `ratio` workers (replicas, for an extra role) per worker of `per`,
    rounded up; e.g. {role: prefill, per: decode, ratio: 2}, {role: router, per: decode, ratio: 0.25}."""

    role: str
    per: str
    ratio: float = Field(gt=0, le=64)


class Scaling(Model):
    """How a deployment grows. GroupReplication: more capacity is more whole replicas (`replicas`).
    InPlace: each replica grows its roles inside its cluster — decode's `workers.count` is the
    replica's size and every other role follows it through `bindings`."""

    mode: Literal["GroupReplication", "InPlace"] = "GroupReplication"
    bindings: list[Binding] = []

    def binding_map(self) -> dict[str, tuple[str, float]]:
        return {b.role: (b.per, b.ratio) for b in self.bindings}


ADOPTABLE_KINDS = ("LLMInferenceService", "LeaderWorkerSet", "Deployment")


class Adopt(Model):
    """An object already running on `cluster` (created by hand or another tool) that becomes this
    deployment's replica `replica` (its `role` workload on the native backend): the first `up`
    imports it (Pulumi's `import` option, ID `namespace/name`) instead of creating a new one."""

    cluster: str
    kind: Literal["LLMInferenceService", "LeaderWorkerSet", "Deployment"]
    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)
    replica: int = Field(default=0, ge=0, le=999)
    role: str = "decode"


class ModelSource(Model):
    uri: Annotated[str, NoCredentials] = Field(pattern=r"^(hf|s3|gs|pvc|oci|https?)://\S+$")
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")   # served model name; default <namespace>/<deployment name>
    size_gib: float | None = Field(default=None, alias="sizeGiB", gt=0, le=1_000_000, allow_inf_nan=False)   # weights; default from catalog/models.yaml
    # The checkpoint's config.json num_attention_heads; default from catalog/models.yaml. vLLM
    # shards attention heads over tensor ranks, so `tensor` must divide it.
    attention_heads: int | None = Field(default=None, ge=1, le=4096)
    # The checkpoint's Hugging Face config.json, relative to the stack file (the project folder):
    # layers, heads, hidden size, experts, dtype and (for common architectures) the parameters come
    # from it. Facts written here inline win over the file's; both win over catalog/models.yaml.
    config: str | None = Field(default=None, min_length=1, max_length=1024)
    # The checkpoint's parameters, e.g. "70.6B" or "8030261248" (with dtype: the weights' size)
    parameters: str | None = Field(default=None, pattern=r"^\d+(\.\d+)?[KMBT]?$", max_length=32)
    dtype: Literal[tuple(DTYPE_BYTES)] | None = None   # the stored weights' dtype (quantized: fp8, mxfp4, int4)
    layers: int | None = Field(default=None, ge=1, le=1000)          # num_hidden_layers
    kv_heads: int | None = Field(default=None, ge=1, le=4096)        # num_key_value_heads
    head_dim: int | None = Field(default=None, ge=1, le=65536)       # head_dim (default hidden / heads)
    hidden_size: int | None = Field(default=None, ge=1, le=1_000_000)
    experts: int | None = Field(default=None, ge=0, le=100_000)     # routed experts (0: dense)
    kv_lora_rank: int | None = Field(default=None, ge=1, le=65536)   # latent attention: kv_lora_rank + qk_rope_head_dim
    # A secret stack config key holding the Hugging Face token (pulumi config set --secret ...);
    # it becomes a Secret linked to the pods' ServiceAccount on every cluster the model lands on.
    token_secret: str | None = Field(default=None, pattern=r"^[A-Za-z][A-Za-z0-9_-]*$")
    _config: dict = PrivateAttr(default_factory=dict)   # the facts `config` gave (read at validation)

    @property
    def parameter_count(self) -> int | None:
        """`parameters` as a count ("70.6B": 70,600,000,000)."""
        if self.parameters is None:
            return None
        m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMBT]?)", self.parameters)
        return round(float(m[1]) * {"": 1, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[m[2]])

    @field_validator("config")
    @classmethod
    def _config_file(cls, value, info: ValidationInfo):
        # Read here, so a bad file is reported at model.config; the facts wait in the context.
        if value is None:
            return value
        context = info.context if isinstance(info.context, dict) else {}
        base = Path(context.get("base") or ".")
        try:
            facts = facts_from_config(read_config(base / value, value))
        except ConfigError as exc:
            raise invalid(f"model.config {value}: {exc}",
                          "point model.config at the checkpoint's config.json (relative to the stack file), or "
                          "give the facts inline (sizeGiB or parameters and dtype, layers, attentionHeads, kvHeads)"
                          if exc.field == "config" else
                          f"fix {exc.field} in {value}, or give the fact inline in the stack") from None
        context.setdefault("configs", {})[value] = facts
        return value

    @model_validator(mode="after")
    def _read_config(self, info: ValidationInfo):
        if self.config is not None:
            context = info.context if isinstance(info.context, dict) else {}
            facts = context.get("configs", {}).get(self.config)
            # validated without a shared context: the field validator read it already, read it again
            self._config = facts if facts is not None else facts_from_config(
                read_config(Path(context.get("base") or ".") / self.config, self.config))
        return self


GPU_ROLES = ("decode", "prefill")


class Slo(Model):
    """Latency objectives per request, as the estimator predicts them: time to first token and
    inter-token latency (time per output token, TPOT)."""

    ttft_ms: float = Field(gt=0, le=600_000, allow_inf_nan=False)
    itl_ms: float = Field(gt=0, le=60_000, allow_inf_nan=False)
    margin: float | None = Field(default=None, ge=0, le=0.9, allow_inf_nan=False)  # share kept below both objectives (default 0.1)

    def limits(self) -> tuple[float, float]:
        """TTFT and ITL a chosen configuration's prediction must stay within: the objective less its margin."""
        return slo_limits(self.ttft_ms, self.itl_ms, self.margin)


# A prediction is an estimate (AIConfigurator's database, not this fleet's measurements): sizing
# keeps this share below each objective unless `slo.margin` says otherwise (issue 44, F5).
SLO_MARGIN = 0.10


def slo_limits(ttft_ms: float, itl_ms: float, margin: float | None) -> tuple[float, float]:
    """The objective less its margin (SLO_MARGIN when unset): one rule for sizing and the slo policy."""
    keep = 1 - (SLO_MARGIN if margin is None else margin)
    return ttft_ms * keep, itl_ms * keep


class Traffic(Model):
    """The load the deployment must serve within its SLO: requests per second across all its
    replicas, and the tokens of a typical request (the estimator's workload)."""

    requests_per_second: float = Field(gt=0, le=1_000_000, allow_inf_nan=False)
    input_tokens: int = Field(ge=1, le=1_000_000)
    output_tokens: int = Field(ge=1, le=1_000_000)


PRIORITY_TIERS = ("low", "standard", "critical")
# PriorityClass name and value per tier. KAI treats priority >= 100 as non-preemptible, so every
# tier keeps serving replicas safe from batch preemption; the order decides who waits.
PRIORITY_CLASSES = {"low": ("modelplane-inference-low", 100), "standard": ("modelplane-inference", 125),
                    "critical": ("modelplane-inference-critical", 150)}


class ModelDeployment(Model):
    """A model served by replicas the federation scheduler places on the fleet's clusters."""

    name: Name                     # unique in its namespace
    namespace: Namespace           # the team namespace (created on every cluster a replica lands on)
    labels: Labels = {}            # facts about the deployment for policies, e.g. modelplane.ai/residency: eu
    model: ModelSource             # where the weights come from and the name clients use
    replicas: int | None = Field(default=None, ge=0, le=1000)   # whole copies, each on one cluster (all its roles together); chosen by sizing with slo
    # Size from a latency objective instead of replicas/workers/prefill (docs/sizing.md): the plan
    # picks class, shape and replica count that meet `slo` at `traffic`; set workers or prefill to pin them.
    slo: Slo | None = None
    traffic: Traffic | None = None
    cluster_selector: ClusterSelector = ClusterSelector()   # which clusters may hold a replica
    node_selector: NodeSelector = NodeSelector()   # CEL over a class's capabilities, e.g. gpu.memoryGiB >= 80
    workers: Workers = Workers()   # decode (or unified) workers per replica and their parallelism
    engine: Engine = Engine()      # the inference engine's image, args and env
    prefill: Prefill | None = None   # present: a disaggregated replica with its own prefill role
    roles: list[ExtraRole] = []    # CPU roles beside each replica (router, tokenizer, ...)
    autoscaling: list[Autoscaling] = []   # at most one autoscaler per role
    coordination: Coordination | None = None   # split a worker budget between decode and prefill by bands
    scaling: Scaling = Scaling()   # GroupReplication (whole replicas) or InPlace (roles grow by bindings)
    adopt: list[Adopt] = []        # objects already running that become replicas (imported)
    backend: Literal["kserve", "native"] = "kserve"   # kserve: LLMInferenceService; native: Deployment/LWS
    queue: Namespace | None = None   # KAI queue; defaults to the namespace
    # Who gets scarce capacity first: the federation scheduler serves higher tiers first, and the
    # replica's PodGroup carries the tier's PriorityClass (render.names.PRIORITY_CLASSES).
    priority: Literal["low", "standard", "critical"] = "standard"
    allow_disruption: bool = False   # a change may leave it serving no replica for a while (policy no-outage)
    # How long `up` waits for each replica's workloads to serve (weights loaded, Ready) before it
    # fails: `pulumi.com/timeoutSeconds` on them (render/names.py await_ready).
    await_seconds: int = Field(default=3600, ge=60, le=86_400)
    # May its replicas run on spot nodes (reclaimed at the cloud's will)? Unset: yes, except for
    # critical and SLO-sized deployments (`spot_refusal`; Filter reason `spot`, policy spot-allowed).
    allow_spot: bool | None = None
    # Which replicas run in name slot 1 (`<name>-<i>-b`), per (replica, cluster): set by the
    # program from the placements (`with_slots`), never read from the stack file.
    _slots: dict = PrivateAttr(default_factory=dict)

    def slot(self, replica: int, cluster: str) -> int:
        """The name slot of a replica on a cluster (1 while it surges beside its old self)."""
        return self._slots.get((replica, cluster), 0)

    def with_slots(self, placements) -> "ModelDeployment":
        """This deployment, knowing the name slot of each of its placements."""
        slots = {(p.replica, p.cluster): p.slot for p in placements if p.deployment == self.key and p.slot}
        if not slots:
            return self
        out = self.model_copy()
        out._slots = slots
        return out

    @model_validator(mode="after")
    def _sized_or_counted(self):
        if self.slo is None and self.traffic is None:
            if self.replicas is None:
                raise invalid("the deployment sets neither replicas nor an slo",
                              "set replicas: N, or slo: {ttftMs, itlMs} with traffic: {requestsPerSecond, "
                              "inputTokens, outputTokens} to let the plan size it (docs/sizing.md)")
            return self
        if self.slo is None or self.traffic is None:
            missing = "traffic" if self.traffic is None else "slo"
            raise invalid(f"sizing needs both slo and traffic; {missing} is missing",
                          "add traffic: {requestsPerSecond: 20, inputTokens: 4000, outputTokens: 500}" if missing ==
                          "traffic" else "add slo: {ttftMs: 1000, itlMs: 20}")
        if self.replicas is not None:
            raise invalid("replicas is set together with slo; sizing chooses the replica count",
                          "remove replicas (or remove slo and traffic to size by hand)")
        clash = [name for name, on in (("coordination", self.coordination is not None),
                                       ("scaling.mode: InPlace", self.in_place),
                                       ("adopt", bool(self.adopt)),
                                       ("autoscaling of a GPU role", any(a.role in GPU_ROLES for a in self.autoscaling)))
                 if on]
        if clash:
            raise invalid(f"{clash[0]} cannot be combined with slo: they fix worker counts that sizing chooses",
                          f"remove {clash[0].split(' ')[0]}, or size by hand with replicas, workers and prefill")
        return self

    @property
    def sized(self) -> bool:
        """Sized from an SLO: the plan chooses class, shape and replicas (resolved before rendering)."""
        return self.slo is not None

    @property
    def spot_refusal(self) -> str:
        """Why this deployment's replicas are kept off spot capacity ("" where they may use it): the
        one rule behind the Filter reason `spot` and the policy `spot-allowed`."""
        if self.allow_spot is not None:
            return "" if self.allow_spot else "allowSpot: false"
        if self.priority == "critical":
            return "priority: critical"
        return "sized from an SLO" if self.sized else ""

    @property
    def tier(self) -> int:
        return PRIORITY_TIERS.index(self.priority)

    @property
    def priority_class(self) -> str:
        return PRIORITY_CLASSES[self.priority][0]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def disaggregated(self) -> bool:
        return self.prefill is not None

    @property
    def queue_name(self) -> str:
        return self.queue or self.namespace

    @property
    def served_name(self) -> str:
        """What clients put in `model`: model.name, else `<namespace>/<name>`, which stays unique
        when many teams' models share one gateway (vLLM and KServe take a name with a slash:
        KServe's presets pass it to --served-model-name and build `publishers/<ns>/models/<name>`)."""
        return self.model.name or f"{self.namespace}/{self.name}"

    def gpu_roles(self) -> dict[str, tuple[NodeSelector, Workers, Engine]]:
        """GPU roles in a fixed order: decode (or the unified engine) first, then prefill."""
        roles = {"decode": (self.node_selector, self.workers, self.engine)}
        if self.prefill:
            roles["prefill"] = (self.prefill.node_selector, self.prefill.workers, self.prefill.engine)
        return roles

    def role_names(self) -> list[str]:
        return [*self.gpu_roles(), *(r.name for r in self.roles)]

    def adopted(self, replica: int, cluster: str) -> dict[str, Adopt]:
        """role -> the adopted object of that replica on that cluster."""
        return {a.role: a for a in self.adopt if a.replica == replica and a.cluster == cluster}

    @property
    def in_place(self) -> bool:
        return self.scaling.mode == "InPlace"

"""Read the catalog (the package's and the project's) and a stack file into validated models, or
raise InputError."""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml
from pydantic import Field, ValidationError

from ..errors import InputError, Problem, did_you_mean
from . import catalog_cache
from .base import Model
from .collisions import check_names, check_objects
from .catalog import CatalogFile, GpuDirectRecipe, InferenceClass, ModelFacts, Price
from .cluster import InferenceCluster
from .deployment import ModelDeployment
from .service import Dns, ModelService, Provider
from .errors import format_path, problems_from, shown
from .modelconfig import DTYPE_BYTES
from .parallelism import check_expert_model
from .project import current, data_dir
from .findings import duplicates
from .rules import check_cluster, check_deployment, check_services
from .substrate import check_substrate
from .yamlread import YAML_LOADER, decode, parse, read as _read, read_bytes  # noqa: F401  (YAML_LOADER: re-exported)

NAMESPACE = "modelplane"


class StackSpec(Model):
    """Everything under the `modelplane:` namespace of a stack config file."""

    clusters: list[InferenceCluster] = []   # clusters this stack builds or adopts
    deployments: list[ModelDeployment] = []   # models to serve, placed by the federation scheduler
    services: list[ModelService] = []   # stable model names weighted over deployments and providers
    providers: list[Provider] = []  # hosted OpenAI-compatible APIs services may route to
    dns: Dns | None = None         # weighted DNS records across the clusters' gateways
    fleet: list[str] = []          # infra stacks this apps stack draws clusters from
    production: bool = False       # true: production policy config (unplaced replicas fail the plan)
    catalog_dir: str | None = Field(default=None, min_length=1)  # your own InferenceClasses: a directory of YAML files or one file
    repack: bool = False           # plan from scratch, ignoring where replicas run now (see `plan --repack`)
    unprotect: list[str] = []      # <cluster> or <cluster>/<pool> whose Pulumi protect to lift, so a later up may delete them
    per_replica_pools: bool = False   # one `up` of an install made before shared pools: KServe keeps each replica's own pool (docs/changes.md)




@dataclass
class Source:
    """A parsed YAML file that can tell the line of a path."""

    file: str
    data: object
    node: object = None

    def line(self, path) -> int | None:
        node = self.node
        if node is None:
            return None
        for part in path:
            if isinstance(node, yaml.MappingNode):
                match = next((v for k, v in node.value if k.value == (str(part) if isinstance(part, int) else part)),
                             None)
                if match is None:
                    break
                node = match
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
            else:
                break
        return node.start_mark.line + 1


def read_yaml(path: Path, display: str | None = None, raw: bytes | None = None) -> Source:
    display = display or display_path(path)
    node, data = _read(path, display, raw)
    return Source(display, data, node)


# The stack file `plan` checked, by path: its bytes and what they parsed to (stack_source).
_CHECKED: dict[str, tuple[bytes, Source]] = {}


def stack_source(path: Path) -> Source:
    """The stack file as check_stack read it, when its bytes are still the same, else read anew:
    a large fleet's file is parsed once, not once per reader. For lines and reading only: its data
    is shared, so a caller must not change it."""
    kept = _CHECKED.get(str(path))
    try:
        if kept is not None and Path(path).read_bytes() == kept[0]:
            return kept[1]
    except OSError:
        pass
    return read_yaml(path)


def display_path(path: Path) -> str:
    """A path as problems show it: relative to the project when inside it."""
    return current().display(path)


@dataclass
class Catalog:
    classes: dict[str, InferenceClass] = field(default_factory=dict)
    substrate: dict = field(default_factory=dict)
    gpudirect: dict[str, GpuDirectRecipe] = field(default_factory=dict)   # tcpx | tcpxo (catalog/gpudirect.yaml)
    net_plugins: dict[str, NetPlugin] = field(default_factory=dict)   # by fabric (catalog/netplugins.yaml)
    models: dict[str, ModelFacts] = field(default_factory=dict)     # by model uri
    prices: dict[tuple[str, str, str], Price] = field(default_factory=dict)   # by (class, region, capacity type)
    overrides: list[dict] = field(default_factory=list)   # {kind, name, file}: the user's entries that replace built-ins
    sources: dict[str, str] = field(default_factory=dict)   # class -> the user's file defining it (built-ins: absent)
    profile_dirs: list[Path] = field(default_factory=list)   # sizing profiles, the user's catalog first (sizing/profiles.py)

    def model_facts(self, md) -> dict[str, tuple[object, str]]:
        """What is known of the deployment's model, fact -> (value, where it came from): the stack's
        inline facts, else its `model.config` file's, else catalog/models.yaml's. Facts: sizeGiB,
        attentionHeads, layers, kvHeads, headDim, kvLoraRank, dtype, experts; absent: unknown."""
        m, out = md.model, {}
        stack, config = "stack", f"config.json ({m.config})"
        entry = self.models.get(m.uri)
        catalog = {} if entry is None else {"sizeGiB": entry.size_gib, "attentionHeads": entry.attention_heads,
                                            "layers": entry.layers, "kvHeads": entry.kv_heads,
                                            "headDim": entry.head_dim, "kvLoraRank": entry.kv_lora_rank,
                                            "experts": entry.moe.routed_experts if entry.moe else 0}
        inline = {"attentionHeads": m.attention_heads, "layers": m.layers, "kvHeads": m.kv_heads,
                  "headDim": m.head_dim or (m.hidden_size // m.attention_heads
                                            if m.hidden_size and m.attention_heads else None),
                  "kvLoraRank": m.kv_lora_rank, "dtype": m.dtype, "experts": m.experts}
        for name in ("attentionHeads", "layers", "kvHeads", "headDim", "kvLoraRank", "dtype", "experts"):
            for value, source in ((inline[name], stack), (m._config.get(name), config),
                                  (catalog.get(name), "catalog/models.yaml")):
                if value is not None:
                    out[name] = (value, source)
                    break
        dtype = out.get("dtype", (None,))[0]
        params = ((m.parameter_count, stack) if m.parameters else (m._config.get("parameters"), config))
        if m.size_gib:
            out["sizeGiB"] = (m.size_gib, stack)
        elif params[0] and dtype:
            out["sizeGiB"] = (round(params[0] * DTYPE_BYTES[dtype] / 1024**3, 1),
                              f"{params[1]}: parameters x {dtype}")
        elif catalog.get("sizeGiB"):
            out["sizeGiB"] = (catalog["sizeGiB"], "catalog/models.yaml")
        return out

    def weights_gib(self, md) -> float:
        """The deployment's model size (model_facts' sizeGiB), else 0 (unknown)."""
        return float(self.model_facts(md).get("sizeGiB", (0.0,))[0])

    def attention_heads(self, md) -> int:
        """The model's attention heads (model_facts'), else 0 (unknown)."""
        return int(self.model_facts(md).get("attentionHeads", (0,))[0] or 0)

    def kv_token_bytes(self, md, tensor: int, pipeline: int) -> float:
        """Bytes of KV cache one token takes on one GPU of a worker (0: unknown). vLLM's default
        kv_cache_dtype "auto" stores it in the model's activation dtype (bf16 for fp8 and 4-bit
        checkpoints alike; vllm/config/cache.py CacheConfig.cache_dtype); pipeline stages split
        the layers. Latent attention caches one latent per layer on every tensor rank; otherwise
        K and V heads are split over tensor ranks (a rank keeps at least one head)."""
        facts = {k: v for k, (v, _) in self.model_facts(md).items()}
        layers = facts.get("layers")
        if not layers:
            return 0.0
        value = 4 if facts.get("dtype") == "float32" else 2
        per_layer = -(-layers // max(pipeline, 1))
        if facts.get("kvLoraRank"):
            return float(per_layer * facts["kvLoraRank"] * value)
        if not (facts.get("kvHeads") and facts.get("headDim")):
            return 0.0
        return float(per_layer * 2 * -(-facts["kvHeads"] // max(tensor, 1)) * facts["headDim"] * value)

    def expert_gib(self, md) -> float:
        """Of the deployment's weights, the routed experts of a mixture-of-experts model (the
        catalog's share of them, so a `model.sizeGiB` of the same checkpoint scales both); 0 for a
        dense or unknown model."""
        facts = self.models.get(md.model.uri)
        return self.weights_gib(md) * facts.expert_share if facts else 0.0


@functools.lru_cache(maxsize=128)
def _parsed(raw: bytes, display: str) -> tuple:
    return parse(decode(raw, display), display)


def _catalog_file(path: Path) -> Source:
    """A catalog file, its text parsed once per process: a plan loads the catalog once per stack (an
    apps stack and each infra stack of its fleet). Its data is copied per caller (the substrate
    section is handed on as it is); its node, read only for lines, is shared."""
    try:
        raw = path.read_bytes()
    except OSError:
        return read_yaml(path)          # read_yaml says what is wrong with it
    display = display_path(path)
    node, data = _parsed(raw, display)
    return Source(display, copy.deepcopy(data), node)


# Catalogs loaded in this process, by what they were loaded from (_catalog_key): a plan loads the
# catalog once per stack (an apps stack and each infra stack of its fleet).
_CATALOGS: dict[tuple, Catalog] = {}


def _catalog_key(directory: Path, user: list) -> tuple | None:
    """Every file a catalog is read from, with its bytes, and the project root its problems and
    sources are shown against; None if one cannot be read (the load says why)."""
    try:
        paths = sorted(directory.glob("*.yaml"))
        for more in map(Path, user):
            paths += sorted(more.glob("*.yaml")) if more.is_dir() else [more]
        return (str(directory), tuple(map(str, user)), str(current().root),
                tuple((str(p), p.read_bytes()) for p in paths))
    except OSError:
        return None


def _copied(catalog: Catalog) -> Catalog:
    """A catalog a caller may change: its own containers over the shared (frozen) entries; the
    plain-data ones (substrate, overrides) copied whole."""
    deep = ("substrate", "overrides")
    return Catalog(**{f.name: (copy.deepcopy if f.name in deep else copy.copy)(getattr(catalog, f.name))
                      for f in fields(catalog)})


def load_catalog(directory: Path | None = None, extra: Path | str | list | tuple | None = None) -> Catalog:
    """The package's catalog (`directory`, default the built-in one), then the user's: `extra`, one or
    more directories of YAML files or single files (the project's catalog/, modelplane:catalogDir,
    --catalog). A user's class, model or price replaces the built-in one of that name (listed in
    `overrides`); a name the user's files define twice is an error that names both files."""
    directory = directory or data_dir("catalog")
    user = [] if extra is None else [extra] if isinstance(extra, (str, Path)) else list(extra)
    key = _catalog_key(directory, user)
    if key is None or key not in _CATALOGS:
        kept_at = catalog_cache.path_for(key) if key is not None else None
        catalog = catalog_cache.kept(kept_at, Catalog) if kept_at is not None else None
        if catalog is None:
            catalog = _load_catalog(directory, user)
            if kept_at is not None:
                catalog_cache.keep(kept_at, catalog)
        if key is not None:
            if len(_CATALOGS) >= 8:
                _CATALOGS.clear()
            _CATALOGS[key] = catalog
    return _copied(_CATALOGS[key] if key is not None else catalog)


def _load_catalog(directory: Path, user: list) -> Catalog:
    problems, catalog, origin, priced = [], Catalog(), {}, []
    paths = [(p, False) for p in sorted(directory.glob("*.yaml"))]
    catalog.profile_dirs = [directory / "profiles"]      # sizing profiles: the user's folders first
    for more in map(Path, user):
        if not more.exists():
            raise InputError([Problem(str(more), "catalogDir", f"no such file or directory: {more}",
                                      "point modelplane:catalogDir (or catalogDir) at a directory of class YAML "
                                      "files or at one file, relative to the project directory")])
        paths += [(p, True) for p in (sorted(more.glob("*.yaml")) if more.is_dir() else [more])]
        catalog.profile_dirs.insert(len(catalog.profile_dirs) - 1, (more if more.is_dir() else more.parent) / "profiles")
    seen_models, seen_prices = {}, {}
    for path, mine in paths:
        src = _catalog_file(path)
        if path.name == "substrate.yaml" and path.parent == directory:
            catalog.substrate = (src.data or {}).get("substrate", {})
            continue
        try:
            parsed = CatalogFile.model_validate(src.data or {})
        except ValidationError as exc:
            problems += problems_from(exc, CatalogFile, src.file, src.line)
            continue
        for i, cls in enumerate(parsed.classes):
            first = origin.get(cls.name)
            if first is not None and (not mine or first[1]):
                problems.append(Problem(src.file, format_path(("classes", i, "name")),
                                        f"class {cls.name!r} is already defined in {first[0]}",
                                        "class names are global: rename one of them",
                                        src.line(("classes", i, "name"))))
            elif first is not None:
                catalog.overrides.append({"kind": "class", "name": cls.name, "file": src.file})
            catalog.classes[cls.name] = cls
            origin[cls.name] = (src.file, mine)
            if mine:
                catalog.sources[cls.name] = src.file
        for i, model in enumerate(parsed.models):
            first = seen_models.get(model.uri)
            if first is not None and (not mine or first):
                problems.append(Problem(src.file, format_path(("models", i, "uri")),
                                        f"model {model.uri!r} is already described", "keep one entry per model",
                                        src.line(("models", i, "uri"))))
            elif first is not None:
                catalog.overrides.append({"kind": "model", "name": model.uri, "file": src.file})
            catalog.models[model.uri] = model
            seen_models[model.uri] = mine
        catalog.gpudirect |= parsed.gpudirect
        catalog.net_plugins |= parsed.net_plugins
        priced.append((src, parsed.prices, mine))
    for src, prices, mine in priced:    # after every file, so a price may name a class of another file
        for i, price in enumerate(prices):
            key = (price.class_, price.region, price.capacity_type)
            where = (src.file, format_path(("prices", i, "class")))
            if price.class_ not in catalog.classes:
                guess = did_you_mean(price.class_, catalog.classes)
                problems.append(Problem(*where, f"no class {price.class_!r} in the catalog",
                                        f"did you mean {guess!r}?" if guess else "price a class the catalog defines",
                                        src.line(("prices", i, "class"))))
            elif key in seen_prices and (not mine or seen_prices[key]):
                problems.append(Problem(*where, f"{price.class_} already has a {price.capacity_type} price in "
                                        f"{price.region}", "keep one price per class, region and capacity type",
                                        src.line(("prices", i, "class"))))
            catalog.prices[key] = price       # the user's price replaces the package's
            seen_prices[key] = mine
    if problems:
        raise InputError(problems)
    return catalog


def catalog_of(config: dict, project=None) -> Catalog:
    """The catalog a stack's config asks for: the package's, the project's own catalog/ and
    --catalog folders, then `modelplane:catalogDir` (relative to the project directory). Read from
    the raw config because classes are checked while parsing."""
    project = project or current()
    config = config if isinstance(config, dict) else {}    # a wrong shape is reported by load_stack
    extra = config.get(f"{NAMESPACE}:catalogDir", config.get("catalogDir"))
    mine = project.user_catalogs()
    if isinstance(extra, str) and extra.strip():
        mine.append(project.root / extra)
    return load_catalog(extra=mine)


def stack_file(stack: str, project=None) -> Path:
    """The stack's config file in the project's stackConfigDir."""
    return (project or current()).stack_file(stack)


def stack_names(project=None) -> list[str]:
    """Every stack with a config file in the project's stackConfigDir."""
    return (project or current()).stack_names()


def parse_stack_config(config: dict, src: Source, catalog: Catalog, base: Path | None = None) -> StackSpec:
    """Validate the `modelplane:` keys of a stack's config mapping (plain values, secrets left out);
    `base`: the stack file's folder (default the project's), where `model.config` paths start."""
    problems, values = [], {}
    secret_keys = set()
    known = {f.alias or n for n, f in StackSpec.model_fields.items()}
    for key, value in (config or {}).items():
        where = (src.file, f"config.{key}")
        if not isinstance(key, str):
            problems.append(Problem(*where, f"config key {key!r} is not text", "write keys as namespace:name",
                                    src.line(("config", key))))
            continue
        ns, _, name = key.rpartition(":")
        if ns not in ("", NAMESPACE):
            if ns.lower() != NAMESPACE and did_you_mean(ns, [NAMESPACE]) and name in known:
                # a misspelt namespace would hand the setting to no one: every cluster would vanish
                problems.append(Problem(*where, f"namespace '{ns}' is not a provider's; '{key}' would be ignored",
                                        f"did you mean '{NAMESPACE}:{name}'?", src.line(("config", key))))
            continue   # provider config such as gcp:project belongs to the providers
        if isinstance(value, dict) and set(value) == {"secure"}:
            if name in known:
                problems.append(Problem(*where, f"'{key}' is a setting, but holds an encrypted secret (secure:)",
                                        f"write its value as plain YAML; secrets are separate keys such as "
                                        f"'{NAMESPACE}:hfToken'", src.line(("config", key))))
            secret_keys.add(name)
            continue
        values[name] = (key, value)
    for name, (key, _) in sorted(values.items()):
        if name not in known:
            guess = did_you_mean(name, known)
            problems.append(Problem(src.file, f"config.{key}", f"unknown key '{key}'",
                                    f"did you mean '{NAMESPACE}:{guess}'?" if guess else
                                    f"modelplane reads only {', '.join(f'{NAMESPACE}:{k}' for k in sorted(known))}",
                                    src.line(("config", key))))
    plain = {n: v for n, (_, v) in values.items() if n in known}
    def rename(loc):   # model field -> the config key as written in the file
        return (values.get(loc[0], (f"{NAMESPACE}:{loc[0]}",))[0], *loc[1:]) if loc else loc

    try:
        _members_first()
        # model.config paths are relative to the stack file (by default in the project folder)
        spec = StackSpec.model_validate(plain, context={"base": base or current().root})
    except ValidationError as exc:
        problems += problems_from(exc, StackSpec, src.file, lambda p: src.line(("config", *p)), rename)
        raise InputError(problems)
    problems += _cross_check(spec, catalog, src, values, secret_keys)
    if problems:
        raise InputError(problems)
    return spec


def _members_first() -> None:
    """The schemas of the stack's large members built before the stack's own. Models are built on
    first use (base.py, `defer_build`); the stack's schema, built first, would inline its members'
    and the renderers' first dump of a deployment would build ModelDeployment's again. Members
    first, the stack's refers to theirs: about 25 ms less a plan (docs/performance.md)."""
    for model in (ModelDeployment, InferenceCluster, ModelService):
        model.model_rebuild()       # nothing once built


def _cross_check(spec: StackSpec, catalog: Catalog, src: Source, values, secret_keys) -> list[Problem]:
    out = []

    def key_of(name):
        return values.get(name, (f"{NAMESPACE}:{name}",))[0]

    def add(top, path, message, fix, rule=None):
        full = ("config", key_of(top), *path)
        out.append(Problem(src.file, format_path(full[1:]), message, fix, src.line(full), rule))

    for i, name in duplicates(spec.fleet):
        add("fleet", (i,), f"stack {name!r} is listed twice", "list each infra stack once")
    for i, name in duplicates([c.name for c in spec.clusters]):
        add("clusters", (i, "name"), f"cluster name {name!r} is used twice", "give every cluster its own name")
    for i, name in duplicates([d.key for d in spec.deployments]):
        add("deployments", (i, "name"), f"deployment {name!r} is declared twice", "rename one or merge them")
    for i, name in duplicates([f"{s.namespace}/{s.name}" for s in spec.services]):
        add("services", (i, "name"), f"service {name!r} is declared twice", "rename one or merge them")
    for i, cluster in enumerate(spec.clusters):
        for f in check_cluster(cluster, catalog.classes):
            add("clusters", (i, *f.path), f.message, f.fix, f.rule)
        for switch, path, message, fix in check_substrate(cluster.substrate, catalog.substrate):
            add("clusters", (i, "substrate", switch, *path), message, fix, "substrate")
        if cluster.existing and cluster.existing.kubeconfig_secret not in secret_keys:
            add("clusters", (i, "existing", "kubeconfigSecret"),
                f"no secret config key '{NAMESPACE}:{cluster.existing.kubeconfig_secret}' in this stack",
                f"run: pulumi config set --secret {NAMESPACE}:{cluster.existing.kubeconfig_secret} "
                f"\"$(cat kubeconfig)\" --stack <stack>")
    for f in [*check_names(spec.clusters, spec.deployments), *check_objects(spec.deployments, spec.services)]:
        add(f.path[0], f.path[1:], f.message, f.fix)
    local = {c.name for c in spec.clusters}
    for i, md in enumerate(spec.deployments):
        for f in check_deployment(md):
            add("deployments", (i, *f.path), f.message, f.fix, f.rule)
        for j, a in enumerate(md.adopt):
            if not spec.fleet and a.cluster not in local:   # fleet clusters are known only at plan time
                guess = did_you_mean(a.cluster, local)
                add("deployments", (i, "adopt", j, "cluster"), f"no cluster {a.cluster!r} in this stack",
                    f"did you mean {guess!r}?" if guess else f"use one of {sorted(local)}", "adopt")
    built = {c.name: {p.name for p in c.node_pools} for c in spec.clusters if not c.existing}
    names = sorted({*built, *(f"{c}/{p}" for c, pools in built.items() for p in pools)})
    for i, name in enumerate(spec.unprotect):
        if name not in names:
            guess = did_you_mean(name, names)
            add("unprotect", (i,), f"{name!r} is not a cluster or node pool this stack creates",
                f"did you mean {guess!r}?" if guess else
                f"name one of {', '.join(names) or '(none: this stack creates no cluster)'} as <cluster> or <cluster>/<pool>")
    _model_credentials(spec, catalog, secret_keys, add)
    for i, md in enumerate(spec.deployments):
        for f in check_expert_model(md, catalog.models.get(md.model.uri)):
            add("deployments", (i, *f.path), f.message, f.fix, f.rule)
    _node_selectors(spec, catalog, add)
    _cluster_selectors(spec, add)
    for i, name in duplicates([p.name for p in spec.providers]):
        add("providers", (i, "name"), f"provider {name!r} is declared twice", "rename one or merge them")
    for i, provider in enumerate(spec.providers):
        key = provider.api_key.secret if provider.api_key else None
        if key is not None and key not in secret_keys:
            add("providers", (i, "apiKey", "secret"), f"no secret config key '{NAMESPACE}:{key}' in this stack",
                f"run: pulumi config set --secret {NAMESPACE}:{key} <api key> --stack <stack>", "provider-credentials")
    for f in check_services(spec.services, {d.key: d for d in spec.deployments},
                            {p.name: p for p in spec.providers}, spec.dns):
        add(f.path[0], f.path[1:], f.message, f.fix, f.rule)
    return out


def _node_selectors(spec: StackSpec, catalog: Catalog, add) -> None:
    """Every nodeSelector.cel compiles and gives a bool on every catalog class, before anything runs."""
    from ..scheduler.cel import CelError, Matcher, uses_place

    matcher = Matcher()
    # pool.* and cluster.* are known only per pool: check such an expression against a pool with
    # every field and no labels (a label it reads may exist on the real pools; Filter checks those)
    sample = {"pool": {"name": "", "capacity": "on-demand", "labels": {}, "minNodes": 0},
              "cluster": {"name": "", "labels": {}, "region": "", "cloud": ""}}
    for i, md in enumerate(spec.deployments):
        sites = [(("nodeSelector", "cel"), md.node_selector.cel)]
        if md.prefill is not None:
            sites.append((("prefill", "nodeSelector", "cel"), md.prefill.node_selector.cel))
        for path, expr in sites:
            try:
                for name, cls in sorted(catalog.classes.items()):
                    matcher.matches(expr, name, cls.capabilities.model_dump(by_alias=True, exclude_none=True),
                                    sample if uses_place(expr) else None)
            except CelError as exc:
                if uses_place(expr) and "no field" in str(exc):
                    continue
                add("deployments", (i, *path), f"{shown(expr)} {exc}",
                    "write a CEL expression over the class capabilities that yields true or false, e.g. "
                    "gpu.memoryGiB >= 80 && gpu.count >= 8 (capabilities: `modelplane classes`; where: pool.capacity, "
                    "pool.name, pool.labels, cluster.labels, cluster.region, cluster.cloud)", "node-selector")


def _cluster_selectors(spec: StackSpec, add) -> None:
    """Every clusterSelector.cel (deployments, services) compiles and gives a bool on a cluster with
    every field and no labels, before anything runs (a label it reads may exist on the real clusters:
    there a cluster that lacks it is not selected, and --explain says why)."""
    from ..scheduler.cel import CLUSTER_CEL_FIX, CelError, Matcher, cluster_place

    matcher, sample = Matcher(), cluster_place("", {}, "", "")
    nameless = "on cluster '': "       # the sample has no name: say only what is wrong
    sites = [("deployments", i, md.cluster_selector.cel or "") for i, md in enumerate(spec.deployments)]
    sites += [("services", i, svc.cluster_selector.cel or "") for i, svc in enumerate(spec.services)]
    for top, i, expr in sites:
        try:
            matcher.selects(expr, sample)
        except CelError as exc:
            if "no field" in str(exc) or "cannot be evaluated" in str(exc):
                continue
            add(top, (i, "clusterSelector", "cel"), f"{shown(expr)} {str(exc).replace(nameless, '')}",
                CLUSTER_CEL_FIX, "cluster-selector")


def _model_credentials(spec: StackSpec, catalog: Catalog, secret_keys, add) -> None:
    """Gated models carry a token; a token is a secret config key; one token per namespace."""
    by_namespace: dict[str, tuple[int, str]] = {}
    for i, md in enumerate(spec.deployments):
        key = md.model.token_secret
        facts = catalog.models.get(md.model.uri)
        if key is None and facts is not None and facts.gated:
            add("deployments", (i, "model", "tokenSecret"), f"{md.model.uri} is gated: downloading it needs a "
                "Hugging Face token", f"run: pulumi config set --secret {NAMESPACE}:hfToken <token>, then set "
                "model.tokenSecret: hfToken", "model-credentials")
        if key is None:
            continue
        if key not in secret_keys:
            add("deployments", (i, "model", "tokenSecret"), f"no secret config key '{NAMESPACE}:{key}' in this stack",
                f"run: pulumi config set --secret {NAMESPACE}:{key} <token> --stack <stack>", "model-credentials")
        first = by_namespace.setdefault(md.namespace, (i, key))
        if first[1] != key:
            add("deployments", (i, "model", "tokenSecret"), f"namespace {md.namespace} already reads its token from "
                f"'{first[1]}' (deployments[{first[0]}]); a namespace's model ServiceAccount holds one token",
                f"use tokenSecret: {first[1]}, or move this deployment to another namespace", "model-credentials")


def load_stack(path: Path, catalog: Catalog | None = None, src: Source | None = None) -> StackSpec:
    """The stack file's validated spec; `src`: the file as the caller has just read it."""
    catalog = catalog or load_catalog()
    src = src or read_yaml(path)
    data = src.data or {}
    if not isinstance(data, dict):
        raise InputError([Problem(src.file, "(file)", f"the file holds {_kind(data)}; a stack file is a mapping "
                                  "with a 'config:' key",
                                  "start the file with 'config:'", 1)])
    extra = sorted(k for k in data if k not in ("config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment"))
    if extra:
        raise InputError([Problem(src.file, k, f"unknown top-level key '{k}'",
                                  "did you mean 'config'?" if did_you_mean(k, ["config"]) else "put modelplane settings under 'config:'",
                                  src.line((k,))) for k in extra])
    config = data.get("config")
    if config is not None and not isinstance(config, dict):
        raise InputError([Problem(src.file, "config", f"'config' holds {_kind(config)}; it is a mapping of "
                                  "namespace:key settings", "write 'modelplane:clusters:' and the other keys "
                                  "indented under 'config:'", src.line(("config",)))])
    if not any(isinstance(k, str) and k.rpartition(":")[0] in ("", NAMESPACE) for k in (config or {})):
        raise InputError([Problem(src.file, "config", "the file has no modelplane settings, so there is nothing "
                                  "to plan", f"add {NAMESPACE}:clusters, {NAMESPACE}:deployments or {NAMESPACE}:fleet "
                                  "under 'config:'", src.line(("config",)) or 1)])
    return parse_stack_config(config or {}, src, catalog, Path(path).parent)


def _kind(value) -> str:
    """A YAML value's kind in the user's words (never a Python type name)."""
    if isinstance(value, bool):
        return "true/false"
    return {list: "a list", str: "text", int: "a number", float: "a number", dict: "a mapping"}.get(type(value), "a value")



def check_stack(stack: str, config_file: Path | None = None) -> tuple[Path, Catalog, StackSpec]:
    """The stack file `plan` reads (Pulumi.STACK.yaml in the project's stackConfigDir, or
    --config-file), its catalog and its validated spec; InputError (naming the stacks that exist)
    before anything runs."""
    project = current()
    path = Path(config_file) if config_file else project.stack_file(stack)
    if config_file is None and not path.exists():
        known = project.stack_names()
        guess = did_you_mean(stack, known)
        where = display_path(path)
        if project.name is None:
            fix = (f"no Pulumi.yaml in {project.root} or above: run `modelplane init` to start a project, "
                   "run modelplane in your project's folder (or pass --project DIR), or plan a stack file with "
                   "--config-file PATH")
        elif guess:
            fix = f"did you mean {guess!r}?"
        else:
            fix = (f"stacks here: {', '.join(known) or '(none)'}; or plan any stack file with --config-file PATH")
        raise InputError([Problem(where, "STACK", f"no stack {stack!r} (no {where})", fix)])
    display = display_path(path)
    raw = read_bytes(path, display)      # kept with its parse for stack_source
    src = read_yaml(path, display, raw)
    data = src.data
    catalog = catalog_of(data.get("config") if isinstance(data, dict) else None, project)
    spec = load_stack(path, catalog, src)
    _CHECKED.clear()
    _CHECKED[str(path)] = (raw, src)
    return path, catalog, spec

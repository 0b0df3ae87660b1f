"""Stack policies: rules across resources. They read the ModelDeployment components' outputs
(`spec`, `placements`, and the inventory of each target cluster) and the rendered objects."""
from __future__ import annotations

from ..api import ModelDeployment
from ..api.catalog import MULTI_NODE_FABRICS
from ..api.deployment import slo_limits
from ..api.rules import check_bands, check_roles
from ..api.scaling_rules import check_adopt, check_scaling
from ..render.dra import CLAIM_NAME
from ..render.kai import gang_pods
from ..render.names import DEPLOYMENT, REPLICA, ROLE
from ..scheduler.filter import all_to_all_problem, domain_problem
from ..scheduler.model import Pool, Role, domain_nodes
from .registry import ADVISORY, policy
from .stackview import of_kind, of_type

MODEL_DEPLOYMENT = "modelplane:index:ModelDeployment"
INFERENCE_CLUSTER = "modelplane:index:InferenceCluster"


def deployments(resources):
    """(resource, spec, placements, clusters) for each ModelDeployment component."""
    for r in of_type(resources, MODEL_DEPLOYMENT):
        if r.props.get("spec"):
            yield r, r.props["spec"], list(r.props.get("placements") or []), dict(r.props.get("clusters") or {})


def replicas(resources):
    """(component, spec, placement, that cluster's inventory) for every placed replica."""
    for r, spec, placements, clusters in deployments(resources):
        for p in placements:
            yield r, spec, p, clusters.get(p["cluster"]) or {}


def inventories(resources) -> dict[str, dict]:
    """Every cluster inventory the stack has: its InferenceClusters' and its deployments' targets."""
    out = {}
    for r in of_type(resources, INFERENCE_CLUSTER):
        if r.props.get("inventory"):
            out[r.props["inventory"]["name"]] = r.props["inventory"]
    for _, _, _, clusters in deployments(resources):
        out.update(clusters)
    return out


def pools_of(inv: dict) -> dict[str, dict]:
    """A cluster inventory's pools by name."""
    return {q["name"]: q for q in inv.get("pools", [])}


def _key(spec) -> str:
    return f"{spec['namespace']}/{spec['name']}"


def _spec_findings(resources, check) -> list[tuple[str, str]]:
    out = []
    for r, spec, _, _ in deployments(resources):
        try:
            md = ModelDeployment.model_validate(spec, strict=False)
        except ValueError as exc:
            out.append((f"{_key(spec)}: spec does not validate: {str(exc).splitlines()[0]}", r.urn))
            continue
        out += [(f"{md.key}: {f.message} (fix: {f.fix})", r.urn) for f in check(md)]
    return out


@policy("roles", "Roles are valid: a disaggregated deployment has decode and prefill, names are unique, "
        "dependsOn resolves without cycles, at most one autoscaler per role, no endpoint picker as an extra role, "
        "KEDA triggers complete, no GPU-role autoscaling on the kserve backend.", "stack",
        fix="fix the deployment's roles: decode and prefill for P/D, unique names, dependsOn without cycles, one "
            "autoscaler per role, complete KEDA triggers")
def roles(resources, config=None):
    out = _spec_findings(resources, check_roles)
    for r, spec, p, _ in replicas(resources):
        want = {"decode", "prefill"} if spec.get("prefill") is not None else {"decode"}
        if set(p["roles"]) != want:
            out.append((f"{_key(spec)} replica {int(p['replica'])}: placed roles {sorted(p['roles'])}, "
                        f"expected {sorted(want)} (a disaggregated replica runs decode and prefill)", r.urn))
    return out


@policy("ratio-bands", "Ratio bands are valid (0 <= min <= max <= 100, sum(min) <= 100 <= sum(max), known "
        "roles) and the workers they imply add up to totalWorkers.", "stack",
        fix="set coordination bands with 0 <= min <= max <= 100 whose mins add up to at most 100 and maxes to at "
            "least 100")
def ratio_bands(resources, config=None):
    out = _spec_findings(resources, check_bands)
    for r, spec, p, _ in replicas(resources):
        total = (spec.get("coordination") or {}).get("totalWorkers")
        got = sum(int(rp["workers"]) for rp in p["roles"].values())
        if total is not None and got != int(total):
            out.append((f"{_key(spec)} replica {int(p['replica'])}: workers add up to {got}, "
                        f"not totalWorkers {int(total)}", r.urn))
    return out


@policy("scaling-bindings", "InPlace scaling: bindings name known roles, chain to decode without cycles, bind "
        "every GPU role, agree with declared counts and bands, and every placed replica keeps them.", "stack",
        fix="bind every GPU role to decode (directly or through another role) in the bindings, with counts and "
            "bands that agree with them")
def scaling_bindings(resources, config=None):
    from ..scheduler.bindings import holds

    out = _spec_findings(resources, lambda md: check_scaling(md, declared=False))
    for r, spec, p, _ in replicas(resources):
        bindings = {b["role"]: (b["per"], b["ratio"]) for b in (spec.get("scaling") or {}).get("bindings") or []}
        counts = {name: int(rp["workers"]) for name, rp in p["roles"].items()}
        gpu = {role: per_ratio for role, per_ratio in bindings.items() if role in counts and per_ratio[0] in counts}
        if gpu and not holds(gpu, counts):
            # roles sorted: the pack's dict order is the Struct round trip's, not the program's
            out.append((f"{_key(spec)} replica {int(p['replica'])}: placed workers {dict(sorted(counts.items()))} "
                        f"break the bindings {dict(sorted(gpu.items()))}", r.urn))
    return out


@policy("adopt", "Adopted objects name an existing replica and role, the kind modelplane renders for it, "
        "and one cluster per replica.", "stack",
        fix="name an existing replica, its role, its cluster and the kind modelplane renders for that role in the "
            "adopt entry")
def adopt(resources, config=None):
    return _spec_findings(resources, check_adopt)


def _role_topology(spec, role, rp):
    """The worker topology a placed role runs: the one its placement records (a replica kept at
    its recorded shape runs that, render/replica.py `recorded`), else the deployment's."""
    block = spec if role == "decode" else spec.get("prefill") or {}
    t = rp.get("topology") or (block.get("workers") or {}).get("topology") or {}
    tensor, pipeline, data, local = (int(t.get(k, 1)) for k in ("tensor", "pipeline", "data", "dataLocal"))
    return tensor, pipeline, data, local, bool(t.get("expert"))


@policy("topology-fits", "Every worker fits its pool: GPUs per node within the class, the declared shape "
        "intact, multi-node workers only on pools with a multi-node fabric and inside the pool's NVLink domain, "
        "expert parallelism across nodes only over RDMA or one NVLink domain.", "stack",
        fix="make workers.topology fit the pool's GPUs per node (and its NVLink domain), or select (nodeSelector) a "
            "pool whose class has a multi-node fabric (RDMA for expert parallelism across nodes)")
def topology_fits(resources, config=None):
    out = []
    for r, spec, p, inv in replicas(resources):
        pools = pools_of(inv)
        for role, rp in p["roles"].items():
            pool = pools.get(rp["pool"])
            where = f"{_key(spec)} replica {int(p['replica'])} {role} on {p['cluster']}/{rp['pool']}"
            if pool is None:
                out.append((f"{where}: the cluster has no such pool", r.urn))
                continue
            gpn, nodes, workers = int(rp["gpusPerNode"]), int(rp["nodes"]), int(rp["workers"])
            if gpn > int(pool["gpusPerNode"]):
                out.append((f"{where}: needs {gpn} GPUs per node, class {pool['class']} has "
                            f"{int(pool['gpusPerNode'])}", r.urn))
            tensor, pipeline, data, local, expert = _role_topology(spec, role, rp)
            per_worker = nodes // max(workers, 1)
            if gpn * per_worker != tensor * pipeline * data:
                out.append((f"{where}: {per_worker} node(s) x {gpn} GPUs per worker does not hold tensor "
                            f"{tensor} x pipeline {pipeline} x data {data}", r.urn))
            fabric = ((pool.get("capabilities") or {}).get("network") or {}).get("fabric")
            if per_worker > 1 and fabric not in MULTI_NODE_FABRICS:
                out.append((f"{where}: a {per_worker}-node worker needs a multi-node fabric "
                            f"({', '.join(sorted(MULTI_NODE_FABRICS))}); pool {rp['pool']} has {fabric}", r.urn))
            # the scheduler's Filter rules, on what was placed (one definition: scheduler/filter.py)
            worker = Role(role, "", workers, per_worker, gpn, expert=expert)
            target = Pool(rp["pool"], pool["class"], int(pool["gpusPerNode"]), 0, fabric=fabric or "tcp",
                          domain_nodes=domain_nodes(pool.get("capabilities") or {}))
            out += [(f"{where}: {problem}", r.urn) for problem in (domain_problem(worker, target),
                                                                   all_to_all_problem(worker, target)) if problem]
    return out


@policy("placement-co-located", "All roles of a replica (prefill and decode) run on one cluster.", "stack",
        fix="give every role of the deployment a pool on one cluster (nodeSelector, clusterSelector)")
def placement_co_located(resources, config=None):
    seen: dict[tuple, set] = {}
    urns = {}
    for r in resources:
        labels = ((r.props.get("metadata") or {}).get("labels") or {}) if r.resource_type.startswith("kubernetes:") else {}
        if DEPLOYMENT in labels and REPLICA in labels:
            key = ((r.props.get("metadata") or {}).get("namespace"), labels[DEPLOYMENT], labels[REPLICA])
            seen.setdefault(key, set()).add(r.name.split("/", 1)[0])
            urns.setdefault(key, r.urn)
    return [(f"{ns}/{d} replica {rep}: objects on clusters {', '.join(sorted(cs))}", urns[(ns, d, rep)])
            for (ns, d, rep), cs in sorted(seen.items(), key=lambda kv: tuple(map(str, kv[0]))) if len(cs) > 1]


@policy("placement-complete", "Every deployment is fully placed (mandatory in production configs).", "stack",
        level=ADVISORY,
        fix="make room: raise maxNodes of a pool that passes the filter, widen clusterSelector or nodeSelector, or "
            "lower replicas (`plan --explain DEPLOYMENT` shows every rejection)")
def placement_complete(resources, config=None):
    out = []
    for r, spec, placements, _ in deployments(resources):
        want = int(spec.get("replicas", 0))
        if len(placements) < want:
            out.append((f"{_key(spec)}: {len(placements)}/{want} replicas placed", r.urn))
    return out


@policy("spot-allowed", "Critical and SLO-sized deployments run no replica on spot capacity unless they say "
        "allowSpot: true (the Filter's `spot` rule, checked here on the recorded placements so a hand-written or "
        "retained placement cannot slip through; advisory; mandatory in production configs).", "stack",
        level=ADVISORY,
        fix="set allowSpot: true on the deployment to accept spot's reclaims, or give it a reserved or on-demand "
            "pool (nodeSelector.cel: 'pool.capacity != \"spot\"')")
def spot_allowed(resources, config=None):
    out = []
    for r, spec, placements, clusters in deployments(resources):
        # The recorded spec, without re-reading the model's config file: spot needs none of its facts.
        model = {k: v for k, v in (spec.get("model") or {}).items() if k != "config"}
        md = ModelDeployment.model_validate({**spec, "model": model}, strict=False)
        why = md.spot_refusal
        if not why:
            continue
        if r.props.get("sizing") and md.priority != "critical":
            why = "sized from an SLO"      # the resolved spec carries it as allowSpot: false
        for p in placements:
            pools = pools_of(clusters.get(p["cluster"]) or {})
            spot = sorted({rp["pool"] for rp in p["roles"].values()
                           if (pools.get(rp["pool"]) or {}).get("capacityType") == "spot"})
            if spot:
                out.append((f"{_key(spec)} replica {int(p['replica'])}: on spot pool {', '.join(spot)} of "
                            f"{p['cluster']}, but it stays off spot ({why})", r.urn))
    return out


@policy("model-known", "Every deployment's model has known facts (catalog/models.yaml, the checkpoint's "
        "config.json as `model.config`, or inline: `model.sizeGiB` or `parameters` and `dtype`, "
        "`attentionHeads`, `layers`, `kvHeads`), so the memory, disk, tensor-divides-heads and KV rules check "
        "it; a fact that is missing leaves its rule unchecked and is named (advisory; mandatory in production "
        "configs).", "stack", level=ADVISORY,
        fix="set `model.config` to the checkpoint's config.json (relative to the stack file), or give the facts "
            "inline: `model.sizeGiB` (its safetensors total) or `parameters` and `dtype`, `attentionHeads`, `layers` "
            "and `kvHeads` (config.json num_attention_heads, num_hidden_layers, num_key_value_heads); or add the model to your catalog's models.yaml")
def model_known(resources, config=None):
    # 0 is the scheduler's "unknown": the Filter skips the rule that needs the fact
    # (scheduler/filter.py memory_problem, heads_problem), so name it rather than place silently.
    out = []
    for r, spec, _, _ in deployments(resources):
        unchecked = []
        if not float(r.props.get("weightsGiB") or 0):
            unchecked.append("sizeGiB (GPU memory per GPU, node disk, the ephemeral-storage request)")
        if "attentionHeads" in r.props and not int(r.props.get("attentionHeads") or 0):
            unchecked.append("attentionHeads (tensor must divide them)")
        facts = r.props.get("modelFacts")
        if facts is not None and not ("layers" in facts and ("kvLoraRank" in facts or "kvHeads" in facts)):
            unchecked.append("KV cache facts (layers, kvHeads; the KV headroom)")
        if unchecked:
            out.append((f"{_key(spec)}: {spec['model']['uri']} has no known {' and no '.join(unchecked)}; "
                        f"those rules are unchecked", r.urn))
    return out


@policy("kv-headroom", "Every placed replica leaves its GPUs room for the KV cache of at least one request "
        "(the deployment's traffic input + output tokens, else 8192): vLLM refuses to start below it, and just "
        "above it serves one request at a time (advisory).", "stack",
        level=ADVISORY,
        fix="give each GPU fewer weights (more tensor or data ranks, a larger GPU, a smaller dtype) or state "
            "shorter requests in `traffic`; `plan --json` shows kvCache per placement")
def kv_headroom(resources, config=None):
    out = []
    for r, spec, _, _ in deployments(resources):
        for row in r.props.get("kvCache") or []:
            floor = row.get("floorGiB")
            free = float(row["kvCacheGiB"])
            if free <= 0 or (floor is not None and free < float(floor)):
                need = (f"one request of {int(row['floorTokens'])} tokens needs {float(floor):.2f} GiB"
                        if floor is not None else "the weights leave none")
                out.append((f"{_key(spec)} replica {int(row['replica'])} {row['role']} on {row['cluster']}/"
                            f"{row['pool']}: {free:.1f} GiB of KV cache per GPU; {need}", r.urn))
    return out


@policy("slo", "Deployments sized from an SLO meet it: a configuration was found, its predicted TTFT and ITL are "
        "within the objective and its placed replicas serve the traffic (advisory; mandatory in production "
        "configs).", "stack", level=ADVISORY,
        fix="make room for the chosen configuration (raise maxNodes of a pool of its class), let it use more classes "
            "(nodeSelector, clusterSelector, `modelplane size --classes`), or loosen slo / lower traffic (docs/sizing.md)")
def slo(resources, config=None):
    out = []
    for r, spec, placements, _ in deployments(resources):
        s = r.props.get("sizing")
        if not s:                     # not sized from an SLO
            continue
        goal, traffic = s["slo"], s["traffic"]
        ttft, itl = slo_limits(float(goal["ttftMs"]), float(goal["itlMs"]), goal.get("margin"))
        want = f"TTFT <= {ttft:g} ms and ITL <= {itl:g} ms (the objective less its margin)"
        if not s.get("choice"):
            out.append((f"{_key(spec)}: no configuration on the fleet's classes meets {want}: "
                        f"{'; '.join(s.get('notes') or []) or 'no candidate'}", r.urn))
            continue
        pred = s["predicted"]
        if float(pred["ttftMs"]) > ttft + 1e-6 or float(pred["itlMs"]) > itl + 1e-6:
            out.append((f"{_key(spec)}: predicted TTFT {float(pred['ttftMs']):g} ms, ITL {float(pred['itlMs']):g} ms "
                        f"miss {want}", r.urn))
        per_replica = float(pred["requestsPerSecond"]) / max(int(s["choice"]["replicas"]), 1)
        served, need = len(placements) * per_replica, float(traffic["requestsPerSecond"])
        if served + 1e-9 < need:
            out.append((f"{_key(spec)}: serves {served:.3g} of {need:g} requests/s within the SLO "
                        f"({len(placements)}/{int(s['choice']['replicas'])} replicas placed)", r.urn))
    return out


@policy("rollout-complete", "Every deployment reaches its target: no replica unplaced or placed at a smaller "
        "ratio-preserving shape (advisory; mandatory in production configs).", "stack", level=ADVISORY,
        fix="make room for the full shape: raise maxNodes of the pools it needs or widen "
            "clusterSelector/nodeSelector (`plan --explain DEPLOYMENT` shows every rejection)")
def rollout_complete(resources, config=None):
    out = []
    for r, spec, _, _ in deployments(resources):
        row = r.props.get("progress") or {}
        stuck = row.get("stuck")
        if stuck:
            role = f" ({stuck['role']})" if stuck.get("role") else ""
            out.append((f"{_key(spec)}: {int(row['placed'])}/{int(row['target'])} GPU workers placed "
                        f"({float(row['percent']):g}%); stuck at replica {int(stuck['replica'])}{role}: "
                        f"{stuck['reason']}: {stuck['detail']}", r.urn))
    return out


@policy("capacity-envelope", "Deployments with autoscaled GPU roles have nodes reserved for every replica's "
        "maxReplicas, so the autoscaler can reach its maximum.", "stack",
        fix="raise the pools' maxNodes to hold every replica at maxReplicas, or lower maxReplicas")
def capacity_envelope(resources, config=None):
    from ..engine.fleet import envelope

    out = []
    for r, spec, placements, _ in deployments(resources):
        try:
            row = envelope(ModelDeployment.model_validate(spec, strict=False), placements)
        except ValueError:
            continue    # the `roles` policy reports a spec that does not validate
        for s in (row or {}).get("short", []):
            out.append((f"{_key(spec)} replica {int(s['replica'])}: {s['role']} may scale to {s['maxReplicas']} workers but "
                        f"{s['cluster']}/{s['pool']} has room reserved for {s['reserved']}; lower maxReplicas or add "
                        f"nodes to the pool", r.urn))
    return out


def _placement_index(resources) -> dict[tuple, tuple]:
    """(namespace, deployment, replica label) -> (spec, placement, that cluster's inventory)."""
    index: dict[tuple, tuple] = {}
    for _, spec, p, inv in replicas(resources):
        index.setdefault((spec["namespace"], spec["name"], str(int(p["replica"]))), (spec, p, inv))
    return index


def _placement_of(index, obj):
    meta = obj.props.get("metadata") or {}
    labels = meta.get("labels") or {}
    return index.get((meta.get("namespace"), labels.get(DEPLOYMENT), labels.get(REPLICA)))


@policy("kai-gang", "Each replica's PodGroup waits for all its pods and names a queue its cluster has.", "stack",
        fix="let modelplane render the PodGroup, and give the namespace a queue on the cluster (the cluster's "
            "queues)")
def kai_gang(resources, config=None):
    out, index = [], _placement_index(resources)
    for obj in of_kind(resources, "PodGroup"):
        found = _placement_of(index, obj)
        if not found:
            continue
        spec, p, inv = found
        autos = {a["role"]: a.get("minReplicas", 1) for a in spec.get("autoscaling") or []}
        want = sum(gang_pods(p["roles"], autos).values())
        got = int((obj.props.get("spec") or {}).get("minMember", 0))
        if got != want:
            out.append((f"PodGroup {obj.props['metadata']['name']}: minMember {got}, but the replica has {want} pods",
                        obj.urn))
        queue = (obj.props.get("spec") or {}).get("queue")
        queues = ((inv.get("kai") or {}).get("queues")) or []
        if queue not in queues:
            out.append((f"PodGroup {obj.props['metadata']['name']}: queue {queue!r} does not exist on cluster "
                        f"{p['cluster']} (queues: {', '.join(queues) or 'none'})", obj.urn))
    return out


@policy("dra-claims", "DRA claims ask for the GPUs per node, name a device class the cluster has, and only "
        "exist on DRA clusters.", "stack",
        fix="let modelplane render the claims; enable the DRA driver on the cluster (substrate.draDriver) or use a "
            "class whose device class the cluster publishes")
def dra_claims(resources, config=None):
    out, index = [], _placement_index(resources)
    for obj in of_kind(resources, "ResourceClaimTemplate"):
        found = _placement_of(index, obj)
        if not found:
            continue
        _, p, inv = found
        role = ((obj.props.get("metadata") or {}).get("labels") or {}).get(ROLE)
        name = obj.props["metadata"]["name"]
        dra = inv.get("dra") or {}
        for req in (((obj.props.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or []:
            exactly = req.get("exactly") or {}
            if req.get("name") == CLAIM_NAME:
                if not dra.get("enabled"):
                    out.append((f"ResourceClaimTemplate {name}: cluster {p['cluster']} does not run DRA", obj.urn))
                    continue
                want = int(p["roles"].get(role, {}).get("gpusPerNode", 0))
                if int(exactly.get("count", 0)) != want:
                    out.append((f"ResourceClaimTemplate {name}: count {int(exactly.get('count', 0))}, but the worker "
                                f"uses {want} GPUs per node", obj.urn))
            if exactly.get("deviceClassName") not in (dra.get("deviceClasses") or []):
                out.append((f"ResourceClaimTemplate {name}: device class {exactly.get('deviceClassName')!r} does not "
                            f"exist on cluster {p['cluster']}", obj.urn))
    return out


@policy("gpu-budget", "The stack's placed GPUs stay within a budget.", "stack",
        config={"maxGpus": {"type": "integer", "minimum": 0}},
        fix="lower replicas or the GPUs per replica, or raise maxGpus in the policy config")
def gpu_budget(resources, config=None):
    limit = (config or {}).get("maxGpus")
    if limit is None:
        return []
    used = sum(int(rp["nodes"]) * int(rp["gpusPerNode"]) for _, _, p, _ in replicas(resources)
               for rp in p["roles"].values())
    return [(f"the stack places {used} GPUs; the budget is {int(limit)}", None)] if used > int(limit) else []


RESIDENCY_DEFAULT = {"label": "modelplane.ai/residency", "regions": {"eu": ["europe-", "eu-"], "us": ["us-"]}}


@policy("data-residency", "Deployments labelled for a jurisdiction land only on clusters in its regions.", "stack",
        config={"label": {"type": "string"}, "regions": {"type": "object"}},
        fix="select the jurisdiction's clusters with clusterSelector (e.g. modelplane.ai/residency), or remove the "
            "deployment's residency label")
def data_residency(resources, config=None):
    cfg = {**RESIDENCY_DEFAULT, **(config or {})}
    out = []
    for r, spec, p, inv in replicas(resources):
        want = (spec.get("labels") or {}).get(cfg["label"])
        prefixes = cfg["regions"].get(want) if want else None
        if want and prefixes is None:
            out.append((f"{_key(spec)} replica {int(p['replica'])}: {cfg['label']}={want} names no jurisdiction "
                        f"in the policy config (known: {', '.join(sorted(cfg['regions']))})", r.urn))
        elif want and not any(inv.get("region", "").startswith(x) for x in prefixes):
            out.append((f"{_key(spec)} replica {int(p['replica'])} is on {p['cluster']} in {inv.get('region')}, "
                        f"outside {want} ({', '.join(prefixes)}*)", r.urn))
    return out


@policy("cost-budget", "The stack's hourly cost at its autoscaling maximum (replicas plus idle minNodes, at the "
        "pools' prices) stays within maxHourlyCost, and each namespace's within its own budget.", "stack",
        config={"maxHourlyCost": {"type": "number", "minimum": 0},
                "namespaces": {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}}},
        fix="lower replicas, maxReplicas or idle minNodes, move to cheaper capacity, or raise maxHourlyCost (or the "
            "namespace's budget) in the policy config")
def cost_budget(resources, config=None):
    from ..analysis.cost import fleet_cost, money
    from ..engine.fleet import minimum_workers

    cfg = config or {}
    if cfg.get("maxHourlyCost") is None and not cfg.get("namespaces"):
        return []
    placements, minimums = [], {}
    invs = inventories(resources)
    for _, spec, mine, _ in deployments(resources):
        placements += mine
        try:
            minimums[_key(spec)] = minimum_workers(ModelDeployment.model_validate(spec, strict=False))
        except ValueError:
            pass    # the `roles` policy reports a spec that does not validate
    cost = fleet_cost(placements, invs, minimums, set(invs))
    out = []
    limit = cfg.get("maxHourlyCost")
    stack = cost["stack"]
    if limit is not None and stack.get("unpricedNodes"):
        priced = (f"the stack's priced capacity may cost {money(stack['hourly']['max'])}/hour at its autoscaling "
                  "maximum, and " if stack["hourly"]["max"] else "none of the stack's capacity is priced: ")
        out.append((f"{priced}{stack['unpricedNodes']} unpriced nodes ({unpriced_pools(cost)}) could exceed the budget "
                    f"of {money(float(limit))}/hour; {price_them(cost, invs)}", None))
    elif limit is not None and stack["hourly"]["max"] > float(limit):
        out.append((f"the stack may cost {money(stack['hourly']['max'])}/hour at its autoscaling maximum "
                    f"({money(stack['hourly']['min'])} at minimum); the budget is {money(float(limit))}/hour", None))
    per_ns: dict[str, list] = {}
    for row in cost["deployments"]:
        per_ns.setdefault(row["deployment"].split("/", 1)[0], []).append(row)
    for ns, budget in sorted((cfg.get("namespaces") or {}).items()):
        rows = per_ns.get(ns, [])
        spent = sum(row["hourly"]["max"] for row in rows)
        names = ", ".join(f"{row['deployment']} {money(row['hourly']['max'])}" for row in rows)
        unknown = sum(row.get("unpricedNodes", 0) for row in rows)
        if unknown:
            mine = {(p["cluster"], rp["pool"]) for p in placements if p["deployment"].split("/", 1)[0] == ns
                    for rp in p["roles"].values()}
            out.append((f"namespace {ns}: {unknown} unpriced nodes ({unpriced_pools(cost, mine)}) could exceed its "
                        f"budget of {money(float(budget))}/hour beside what is priced ({names}); "
                        f"{price_them(cost, invs, mine)}", None))
        elif spent > float(budget):
            out.append((f"namespace {ns} may cost {money(spent)}/hour ({names}); its budget is "
                        f"{money(float(budget))}/hour", None))
    return out


def _unpriced(cost: dict, only=None) -> list[dict]:
    """Unpriced pools that hold nodes (replicas or idle minNodes), optionally only (cluster, pool) in `only`."""
    busy = {(p["cluster"], p["pool"]) for p in cost["pools"] if p["used"]["max"] or p["idle"]["min"]}
    return [u for u in cost["unpriced"] if (u["cluster"], u["pool"]) in busy
            and (only is None or (u["cluster"], u["pool"]) in only)]


def unpriced_pools(cost: dict, only=None) -> str:
    return ", ".join(f"{u['cluster']}/{u['pool']}" for u in _unpriced(cost, only))


def price_them(cost: dict, inventories: dict, only=None) -> str:
    """How to price unpriced pools: the `prices refresh` command for their regions."""
    regions = sorted({inventories.get(u["cluster"], {}).get("region") for u in _unpriced(cost, only)} - {None, ""})
    return (f"price them with `modelplane prices refresh --regions {','.join(regions)}`" if regions else "price them")\
        + " or set capacity.hourly on those pools"


def outage(key: str, spec: dict, change: dict) -> list[str]:
    """The `no-outage` finding for one deployment's serving change ({servingBefore, servingDuring,
    replicas, causes}), unless its spec sets allowDisruption. Shared with `plan --previous`, which
    also sees node pool replacements and rolling updates (modelplane/analysis/disruptions.py)."""
    if not change or spec.get("allowDisruption"):
        return []
    before, during, want = (int(change.get(k) or 0) for k in ("servingBefore", "servingDuring", "replicas"))
    if before <= 0 or want <= 0 or during > 0:
        return []
    causes = list(change.get("causes") or [])
    why = "; ".join(causes) or "its replicas are replaced"
    if causes and all(LOST in c for c in causes):
        # nothing to apply: the cluster or pool is gone (plan --without, or one left out of the fleet)
        return [f"{key} serves {during}/{before} replicas: {LOST_WORDS} ({why})"]
    return [f"{key} serves {during}/{before} replicas while `up` applies this change ({why})"]


LOST = " lost: "      # scheduler/surge.py's cause for a replica whose cluster or pool is gone
LOST_WORDS = "every serving replica is lost with its cluster or pool"
LOST_FIX = ("give the deployment room on another cluster (clusterSelector, nodeSelector, a pool's maxNodes) so its "
            "replicas move there when a cluster or pool goes, or set allowDisruption: true on the deployment")


@policy("no-outage", "While `up` applies a change, every deployment that served keeps at least one replica "
        "serving (changed replicas surge or roll one at a time), unless it sets allowDisruption: true.", "stack",
        level=ADVISORY, fix="give the new shape room beside the old one (free nodes in the pool for a surge), run "
        "more than one replica so they change one at a time, or set allowDisruption: true on the deployment",
        fixes=((LOST_WORDS, LOST_FIX),))
def no_outage(resources, config=None):
    return [(message, r.urn) for r, spec, _, _ in deployments(resources)
            for message in outage(_key(spec), spec, dict(r.props.get("change") or {}))]

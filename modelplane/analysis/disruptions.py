"""What applying a plan does to serving replicas (pure; docs/changes.md).

`transitions`: every replica that ran before and runs differently now (surge, roll, kept, moved,
lost, removed; scheduler/surge.py), with its old and new shape. `disruptions`: each deployment
whose serving replicas dip during `up` below both what served before and what it asks for, with
why. The program knows the transitions (its previous placements); `plan --previous` also knows,
from the resources that change, which node pools are replaced (their replicas restart at once)
and which workloads update in place (they roll one replica at a time, each awaited Ready), and
adds those.
"""
from __future__ import annotations

from collections import Counter

from .changes import POOL_TYPES
from ..render.stack import CHECK_FAILURES, CHECK_INTERVAL_S
from ..scheduler.surge import serving, topology_text

WORKLOAD_TYPES = ("LLMInferenceService", "LeaderWorkerSet", "Deployment")
# Fields of a workload whose change restarts its pods (its replica count and rollout strategy do not).
QUIET_FIELDS = ("spec.replicas", "spec.strategy")


def shape(p) -> str:
    """Per role: workers x nodes per worker x GPUs per node, and the topology when recorded."""
    out = []
    for name, rp in sorted(p.roles.items()):
        text = f"{name} {rp.workers}x{rp.nodes_per_worker}x{rp.gpus_per_node}"
        if rp.topology:
            text += f" ({topology_text(rp.topology)})"
        out.append(text)
    return ", ".join(out)


def transitions(plan, previous) -> list[dict]:
    """The plan's transitions with where each replica ran and runs, for the plan document."""
    was = {(p.deployment, p.replica): p for p in previous}
    now = {(p.deployment, p.replica): p for p in plan.placements}
    out = []
    for t in plan.transitions:
        old, new = was.get((t.deployment, t.replica)), now.get((t.deployment, t.replica))
        row = {"deployment": t.deployment, "replica": t.replica, "how": t.how,
               "from": {"cluster": t.before, **({"shape": shape(old)} if old else {})},
               "to": {"cluster": new.cluster, "shape": shape(new), **({"slot": new.slot} if new.slot else {})}
               if new is not None else None,
               "why": t.why}
        if t.step:
            row["step"] = t.step
        out.append(row)
    return out


def _restarts(changes: list[dict], multi_node: set | frozenset = frozenset()) -> dict[str, dict]:
    """Per deployment, what the resource changes restart: replicas on replaced node pools (all at
    once), replicas whose workload updates its pods (one at a time) and, among those, multi-node
    LLMInferenceService replicas (`multi_node`: (deployment, replica)), which restart all at once.

    Why at once: KServe v0.20.0 reports Ready at the new generation in the reconcile that pushes
    the new spec to its LeaderWorkerSet, before that starts rolling (kserve@v0.20.0
    pkg/controller/v1alpha2/llmisvc/workload_multi_node.go L82-85, L113-136: the child's
    `Available` is read with no generation check), so `pulumi.com/waitFor: condition=Ready`
    returns at once and the one-at-a-time chain runs every update back to back; the LWS then
    recreates each replica's single group (maxUnavailable 1, maxSurge 0 by default: lws@v0.10.0
    api/leaderworkerset/v1/leaderworkerset_types.go L284-313). `up` now also awaits each child's
    rollout (render/rollout.py await_children); this count stays until a real control plane has
    shown that await holding for LeaderWorkerSets."""
    out: dict[str, dict] = {}
    for c in changes or []:
        if c["action"] == "replace" and c["type"] in POOL_TYPES:
            for ref in c.get("replicas", []):
                key, idx = ref.rsplit("#", 1)
                out.setdefault(key, {"pool": {}, "roll": set(), "together": set()})["pool"][int(idx)] = c["name"]
        elif c["action"] == "update" and c["type"].rsplit(":", 1)[-1] in WORKLOAD_TYPES and "deployment" in c:
            if any(f.startswith("spec.") and not f.startswith(QUIET_FIELDS) for f in c.get("fields", ())):
                row = out.setdefault(c["deployment"], {"pool": {}, "roll": set(), "together": set()})
                row["roll"].add(int(c["replica"]))
                if c["type"].endswith(":LLMInferenceService") and (c["deployment"], int(c["replica"])) in multi_node:
                    row["together"].add(int(c["replica"]))
    return out


def dns_exposure(plan, key: str, routes: dict | None, window: int | None, split: dict | None = None) -> dict | None:
    """What a restarting replica of the deployment costs through DNS (review N11). Alone on its
    cluster, a DNS-weighted service's share there fails until it is Ready again or DNS drops the
    cluster, whichever comes first, and comes back once the check passes again (3 passes in a row,
    as it takes 3 failures: Route 53's `FailureThreshold` counts both ways). Beside others whose
    records are per replica (`split`: service -> render/stack.py split_records), no request fails
    (the picker sends them to the others) and its own record leaves DNS after the same window, so
    its part goes to every record left. `window`: the detection window in seconds
    (render/stack.py detection_window), None without DNS."""
    if not routes or window is None:
        return None
    back = CHECK_INTERVAL_S * CHECK_FAILURES
    alone = {c for c, n in Counter(p.cluster for p in plan.placements if p.deployment == key).items() if n == 1}
    shares = sorted({(svc, b.cluster, r.dns.get(b.cluster, 0)) for svc, r in routes.items() for b in r.backends
                     if b.kind == "deployment" and b.name == key and b.cluster in alone and r.dns.get(b.cluster)})
    own = sorted({(svc, c) for svc, parts in (split or {}).items() for c, weights in parts.items()
                  for k, _ in weights if k == key})
    texts = []
    if shares:
        where = ", ".join(f"{svc} {pct}% on {c}" for svc, c, pct in shares)
        texts.append(f"a replica alone on its cluster takes that cluster's DNS share with it while it restarts "
                     f"({where}): those requests fail until it is Ready again or DNS drops the cluster, "
                     f"about {window} s (3 failed checks 30 s apart, then the TTL), whichever comes first; "
                     f"a dropped share goes to the other clusters and returns about {back} s after the replica "
                     "is Ready (3 passed checks)")
    if own:
        where = ", ".join(f"{svc} on {c}" for svc, c in own)
        texts.append(f"a replica beside others on its cluster fails no request while it restarts (its picker "
                     f"sends them to the others), and its own DNS record ({where}) leaves after about {window} s, "
                     f"moving its part to every record left, until about {back} s after it is Ready")
    if not texts:
        return None
    return {"detectionSeconds": window, "text": "; ".join(texts)}


def disruptions(plan, previous, changes: list[dict] | None = None, specs: dict | None = None,
                routes: dict | None = None, window: int | None = None, split: dict | None = None) -> list[dict]:
    """Deployments whose serving replicas dip during `up`: {deployment, servingBefore,
    servingDuring, replicas, cause, allowed, detectionSeconds}. `changes`: the resource changes
    against the previous plan (None: the program's own view only); `specs`: deployment key ->
    ModelDeployment; `routes`, `window` and `split`: the services' routes, the DNS detection window
    and their per-replica records, for what a restarting replica costs until DNS notices (dns_exposure)."""
    before, placed = Counter(p.deployment for p in previous), Counter(p.deployment for p in plan.placements)
    multi = {(p.deployment, p.replica) for p in plan.placements if any(rp.nodes_per_worker > 1 for rp in p.roles.values())}
    extra = _restarts(changes, multi)
    out = []
    for key, want in sorted(plan.desired.items()):
        mine = [t for t in plan.transitions if t.deployment == key]
        row = serving(before[key], placed[key], want, mine)
        more = extra.get(key)
        if more:
            counted = {t.replica for t in mine if t.how in ("lost", "roll")}
            pool = {i: name for i, name in more["pool"].items() if i not in counted}
            rolled = sorted(more["roll"] - counted - set(pool))
            together = sorted(set(rolled) & more["together"])
            rolled = [i for i in rolled if i not in together]
            down = len(pool) + len(together) + int(bool(rolled) and not any(t.how == "roll" for t in mine))
            row["servingDuring"] = max(0, min(row["servingDuring"] - down, placed[key]))
            for name in sorted(set(pool.values())):
                hit = ", ".join(f"#{i}" for i, n in sorted(pool.items()) if n == name)
                row["causes"].append(f"{hit} restart at once: node pool {name} is replaced")
            if together:
                row["causes"].append(f"{', '.join(f'#{i}' for i in together)} restart at once: their multi-node "
                                     "LLMInferenceService changes; `up` awaits each LeaderWorkerSet's "
                                     "rollout, but until that is shown on a real control plane they count "
                                     "as restarting together (docs/changes.md)")
            if rolled:
                row["causes"].append(f"{', '.join(f'#{i}' for i in rolled)} roll one at a time: their workload "
                                     "changes, each awaited Ready before the next")
            row["disrupted"] = row["servingDuring"] < min(row["servingBefore"], want)
        if row["disrupted"]:
            md = (specs or {}).get(key)
            cause = "; ".join(row["causes"]) or "its replicas are replaced"
            exposed = dns_exposure(plan, key, routes, window, split)
            out.append({"deployment": key, "servingBefore": row["servingBefore"], "servingDuring": row["servingDuring"],
                        "replicas": want, "cause": f"{cause}; {exposed['text']}" if exposed else cause,
                        **({"allowed": True} if md is not None and md.allow_disruption else {}),
                        **({"detectionSeconds": exposed["detectionSeconds"]} if exposed else {})})
    return out


def fleet_disruptions(changes: list[dict] | None, apps: list) -> list[dict]:
    """An infra stack's plan: per deployment of an apps stack that runs on it (`apps`: (stack name,
    Plan, {key: ModelDeployment})), the replicas its replaced node pools restart at once. Pulumi
    replaces the pool in the infra stack's `up`, which `up --env` runs before the apps stacks
    (automation/environment.py), so nothing of the apps plan waits for it: the replicas on the pool
    stop together. Rows as `disruptions`, with the apps `stack`."""
    pools = {(c["cluster"], c["name"].removeprefix(f"{c['cluster']}-")): c["name"] for c in changes or []
             if c["action"] == "replace" and c["type"] in POOL_TYPES and c.get("cluster")}
    out = []
    for stack, plan, specs in apps:
        placed = Counter(p.deployment for p in plan.placements)
        for key, want in sorted(plan.desired.items()):
            hit: dict[int, str] = {}
            for p in plan.placements:
                names = [pools[(p.cluster, rp.pool)] for rp in p.roles.values() if (p.cluster, rp.pool) in pools]
                if p.deployment == key and names:
                    hit[p.replica] = names[0]
            during = placed[key] - len(hit)
            if not hit or during >= min(placed[key], want):
                continue
            causes = [f"{', '.join(f'#{i}' for i, n in sorted(hit.items()) if n == name)} restart at once: node pool "
                      f"{name} is replaced" for name in sorted(set(hit.values()))]
            md = specs.get(key)
            out.append({"deployment": key, "stack": stack, "servingBefore": placed[key], "servingDuring": during,
                        "replicas": want, "cause": "; ".join(causes),
                        **({"allowed": True} if md is not None and md.allow_disruption else {})})
    return out


# More replicas do not help here: a replaced pool restarts every replica on it at once.
POOL_REPLACE_FIX = ("a node pool replace restarts all the replicas on it at once, however many there are: add a "
                    "pool of the new class beside this one instead of changing it in place, or set "
                    "allowDisruption: true on the deployment")


def outage_verdicts(run, rows: list[dict], config: dict, fleet: dict | None = None) -> list[dict]:
    """`no-outage` verdicts for outages only `plan --previous` sees (node pool replacements, rolling
    updates): the rule is the pack's (policy/stack.py `outage`), at the level the config gives it;
    outages the program itself knows the pack reports already. `fleet`: apps stack name -> its
    {key: ModelDeployment}, for the rows an infra stack's plan gives (fleet_disruptions)."""
    from ..engine.assemble import serving_changes
    from ..policy import DISABLED, resolve
    from ..policy.stack import outage

    level, _ = resolve(config)["no-outage"]
    if level == DISABLED:
        return []
    own = serving_changes(run.result.plan, run.result.previous)
    specs = {d.key: d.model_dump(by_alias=True, exclude_none=True, mode="json") for d in run.result.spec.deployments}
    out = []
    for row in rows:
        if "stack" in row:       # an apps stack's deployment on this infra stack's pools
            md = (fleet or {}).get(row["stack"], {}).get(row["deployment"])
            if md is None:
                continue
            spec = md.model_dump(by_alias=True, exclude_none=True, mode="json")
        elif own[row["deployment"]]["servingDuring"] == 0:
            continue
        else:
            spec = specs[row["deployment"]]
        change = {"servingBefore": row["servingBefore"], "servingDuring": row["servingDuring"],
                  "replicas": row["replicas"], "causes": [row["cause"]]}
        for message in outage(row["deployment"], spec, change):
            ns, name = row["deployment"].split("/", 1)
            out.append({"policy": "no-outage", "level": "mandatory" if level in ("mandatory", "remediate") else level,
                        "message": message, "resource": f"{ns}-{name}",
                        **({"fix": POOL_REPLACE_FIX} if "is replaced" in row["cause"] else {})})
    return out


def up_order(rows: list[dict]) -> list[str]:
    """The order `up` applies the transitions in, as steps a reviewer reads (docs/changes.md)."""
    if not rows:
        return []

    def name(t):
        return f"{t['deployment']}#{t['replica']}"
    made = [f"{name(t)} on {t['to']['cluster']}" for t in rows if t["how"] in ("surge", "moved", "lost") and t["to"]]
    rolls = sorted((t for t in rows if t["how"] == "roll"), key=lambda t: t["step"])
    gone = [f"{name(t)} on {t['from']['cluster']}" for t in rows if t["how"] in ("surge", "moved", "removed")]
    out = ["InferencePools and endpoint pickers first: the replicas that name them wait for them"]
    if made:
        out.append("create and await Ready: " + ", ".join(made))
    if rolls:
        out.append("replace in place, one at a time, each awaited Ready: " + " -> ".join(name(t) for t in rolls))
    out.append("routes, their DNS drains, then DNS records, send traffic to the Ready replicas they depend on (the "
               "record of an HTTP-01 name waits for its Gateway only)")
    if gone:
        out.append("delete at the end of `up`, a cluster's DNS record, then its drain (it waits the TTL), then its "
                   "routes, routes before replicas: the old " + ", ".join(gone))
    kept = [name(t) for t in rows if t["how"] == "kept"]
    if kept:
        out.append("left at their recorded shape until there is room: " + ", ".join(kept))
    return out

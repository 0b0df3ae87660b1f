"""The federation scheduler: Retain, then Filter -> Score -> Bind for every missing replica.

Entry point: `schedule(demands, clusters, previous)`; pure and deterministic (inputs are sorted
by name, ties break by name, nothing depends on hash order or input order).

1. Filter (static, once per deployment; filter.py): cluster selector -> KAI queue -> per pool
   and GPU role: nodeSelector CEL over the class capabilities -> per-node shape. A cluster where some GPU role
   has no pool left is rejected (`coLocation`): all roles of a replica share a cluster.
2. Retain: a previous replica (index < replicas) keeps its cluster and pools while they exist,
   still pass the filter and still have room; it is charged at its recorded size (a change of
   worker counts alone resizes it in place when its pools have room). One whose roles or worker
   topology changed also stays, charged at its recorded shape, until surge.py replaces it after
   Fill. Otherwise it is re-placed (a `Move` says why). Replicas the plan deletes (indices >=
   replicas, removed deployments, moved replicas) keep their nodes charged (`held`): Pulumi
   deletes them at the end of `up`, after everything new is created.
   An adopted replica without a previous placement is bound on its cluster here, before fill.
3. Fill, per deployment in priority tier then name order, per missing index ascending. Capacity
   is counted in GPUs of a pool: a multi-node worker takes whole nodes, a smaller worker its slot
   of a node it shares with other workers of the pool (model.need; any set of slots that fits the
   pool's GPUs fits its nodes). A candidate is a cluster plus one pool per GPU role with room (a
   pool shared by two roles must hold both); Score and Bind are in score.py. A replica is placed
   whole or not at all; once one index fails the later ones fail for the same reasons (capacity
   only shrinks). A sized deployment (Options) picks its candidate at its turn (sizing.py).
4. Exact phase (exact.py), when Fill leaves a replica unplaced; then replace changed replicas
   (surge.py: surge beside the old one, roll in place one at a time, or keep the recorded shape).

Complexity: Filter decides each (role, class) once (CEL compiled once per expression, evaluated
once per class) and then costs a dictionary lookup per pool: O(deployments x pools). Fill keeps
one best candidate per cluster in a heap and re-scores only the cluster it binds to: O(eligible
pool combinations) per deployment plus O(pools of a cluster + log clusters) per replica, so the
whole run is close to linear in replicas x eligible pools. Rejection details are built lazily
(only for unplaced replicas and `--explain`), so the happy path allocates no per-pool records.
"""
from __future__ import annotations

import gc
import heapq
from collections import Counter, defaultdict
from dataclasses import replace
from types import MappingProxyType

from .cel import CelError, Matcher, check_syntax
from .filter import Alike, DemandError, LazyRejections, Verdicts, eligible as _eligible, order as _order
from . import sizing
from .model import (CAPACITY, NO_CLUSTER, Demand, Move, Options, Placement, Plan, Rejection, RolePlacement,
                    Transition, Unplaced)
from .progress import progress as _progress
from .score import _best, _bind
from .surge import replace_changed, topology_text


def _gpus_text(n: int) -> str:
    return f"{n} GPU{'s' if n != 1 else ''}"


def _capacity_reasons(d: Demand, eligible, free, capacity, held=None) -> list[Rejection]:
    out, held = [], held or {}
    for cluster, per_role in eligible.items():
        alone = True
        for role in d.roles:
            for p in per_role[role.name]:
                have, want = free[(cluster, p.name)], role.need(p)
                if have < want:
                    alone = alone and any(free[(cluster, q.name)] >= role.need(q) for q in per_role[role.name])
                    out.append(Rejection(cluster, p.name, CAPACITY, f"{role.name} needs {_gpus_text(want)}, "
                                         f"{have}/{capacity[(cluster, p.name)]} GPUs free"
                                         + (f" ({held[(cluster, p.name)]} held by replicas this `up` deletes)"
                                            if held.get((cluster, p.name)) else ""), role.name))
            if not any(free[(cluster, q.name)] >= role.need(q) for q in per_role[role.name]):
                alone = False
        if alone and len(d.roles) > 1:
            out += _shared_pool_reasons(d, cluster, per_role, free, capacity)
    return out


def _shared_pool_reasons(d: Demand, cluster: str, per_role, free, capacity) -> list[Rejection]:
    """Every role fits some pool alone, yet no combination holds the replica: name the pools the
    roles must share and the GPUs they need there together."""
    out = []
    pools = {p.name: p for role in d.roles for p in per_role[role.name]}
    for name in sorted(pools):
        roles = [r for r in d.roles if any(p.name == name for p in per_role[r.name])]
        want = sum(r.need(pools[name]) for r in roles)
        if len(roles) > 1 and free[(cluster, name)] < want:
            out.append(Rejection(cluster, name, CAPACITY, f"{' + '.join(r.name for r in roles)} need {want} "
                                 f"GPUs together, {free[(cluster, name)]}/{capacity[(cluster, name)]} GPUs free"))
    if not out:
        total = sum(r.gpus for r in d.roles)
        out.append(Rejection(cluster, None, CAPACITY, f"needs {total} GPUs across its roles; no combination of "
                             "pools has them free at once"))
    return out


GONE, MOVED, RESHAPE, RESIZE, ROOM = "gone", "moved", "reshape", "resize", "room"


def _retain_problem(d: Demand, old: Placement, clusters, eligible, free) -> tuple[str, str] | None:
    """Why a previous replica cannot stay exactly as it is, and what kind of change that is: its
    cluster or pool is GONE (it went with it), MOVED (they no longer qualify), RESHAPE (its roles or
    a role's worker topology changed), RESIZE (only its worker counts changed) or ROOM (its pool
    shrank below what it holds); None when it stays."""
    if old.cluster not in clusters:
        return f"cluster {old.cluster} is gone", GONE
    if old.cluster not in eligible:
        return f"cluster {old.cluster} no longer passes the filter", MOVED
    if set(old.roles) != {r.name for r in d.roles}:
        return "its roles changed", RESHAPE
    need = Counter()
    pools = {p.name: p for p in clusters[old.cluster].pools}
    for role in d.roles:
        rp = old.roles[role.name]
        if rp.pool not in {p.name for p in eligible[old.cluster][role.name]}:
            if rp.pool not in pools:
                return f"pool {rp.pool} is gone", GONE
            return f"pool {rp.pool} no longer fits {role.name}", MOVED
        need[rp.pool] += rp.need(pools[rp.pool].gpus_per_node)
    for pool, n in need.items():
        if free[(old.cluster, pool)] < n:
            return f"pool {pool} has no room left for it", ROOM
    for role in d.roles:
        rp = old.roles[role.name]
        if (rp.topology and role.topology and rp.topology != role.topology) \
                or (rp.nodes_per_worker, rp.gpus_per_node) != (role.nodes_per_worker, role.gpus_per_node):
            return (f"{role.name} changed shape ({rp.workers} workers on {rp.nodes}x{rp.gpus_per_node} "
                    f"-> {role.workers} on {role.nodes}x{role.gpus_per_node} nodes x GPUs; topology "
                    f"{topology_text(rp.topology)} -> {topology_text(role.topology)})"), RESHAPE
    if tuple(old.roles[r.name].workers for r in d.roles) not in d.shapes:
        a = ", ".join(f"{r.name} {old.roles[r.name].workers}" for r in d.roles)
        return f"its workers changed ({a} -> {', '.join(f'{r.name} {r.workers}' for r in d.roles)})", RESIZE
    return None


def recorded_shape(d: Demand, old: Placement) -> Placement:
    """`old` with each role's worker topology filled in where the previous plan did not record it
    (a plan document written before topologies were recorded): the one topology with the role's
    tensor, pipeline and expert sharding that runs on the recorded GPUs per node and nodes per
    worker (GPUs per node = tensor x dataLocal, nodes per worker = pipeline x data / dataLocal).
    A role it cannot be read back for stays unknown (the replica cannot be kept as it runs)."""
    roles, changed = dict(old.roles), False
    for role in d.roles:
        rp = roles.get(role.name)
        if rp is None or rp.topology or not role.topology:
            continue
        tensor, pipeline, _, _, *expert = role.topology
        local, spare = divmod(rp.gpus_per_node, tensor)
        data, left = divmod(local * rp.nodes_per_worker, pipeline)
        if spare or left or not local or not data or data % local:
            continue
        roles[role.name] = replace(rp, topology=(tensor, pipeline, data, local, *expert))
        changed = True
    return replace(old, roles=MappingProxyType(roles)) if changed else old


def _grow(d: Demand, old: Placement, free, pools) -> Placement:
    """In place: the largest shape (not below the one it runs at) its own pools have room for."""
    now = tuple(old.roles[r.name].workers for r in d.roles)
    for shape in d.shapes:
        if shape == now:
            break
        sized = d.shaped(shape)
        need = Counter()
        for role in sized.roles:
            pool = old.roles[role.name].pool
            need[pool] += role.need(pools[(old.cluster, pool)])
        # `free` is not yet charged for this replica: its own GPUs count as room
        if all(free[(old.cluster, pool)] >= n for pool, n in need.items()):
            return Placement(d.key, old.replica, old.cluster, MappingProxyType({
                r.name: RolePlacement(old.roles[r.name].pool, r.nodes, r.gpus_per_node, r.workers, r.topology)
                for r in sized.roles}), old.slot)
    return old


def _fill_steps(d: Demand, idx: int, eligible, free, counts, pools):
    """The largest smaller shape of `d` that fits somewhere (Score as for the full shape), bound."""
    for shape in d.steps:
        sized = d.shaped(shape)
        keys = [b for c, per in eligible.items() if (b := _best(sized, c, per, free, counts[c]))]
        if keys:
            key = min(keys)
            return _bind(sized, idx, key[-2], key[-1], free, pools)
    return None


def _fill(d: Demand, have: dict, eligible, free, pools, upto: int | None = None) -> tuple[dict, int | None]:
    """Fill the missing indices of `d` (Score, Bind) on `free`, those below `upto` when given: the
    new placements by index, and the first index that fits nowhere (None when every index is placed)."""
    counts = Counter(p.cluster for p in have.values())
    filled, heap = {}, None
    for idx in range(d.replicas if upto is None else min(upto, d.replicas)):
        if idx in have:
            continue
        if heap is None:
            heap = [b for c, per in eligible.items() if (b := _best(d, c, per, free, counts[c]))]
            heapq.heapify(heap)
        if not heap:
            # Capacity only shrinks during fill: every later index fails at full shape as well;
            # they may still fit at a smaller ratio-preserving shape.
            part = _fill_steps(d, idx, eligible, free, counts, pools) if d.steps else None
            if part is None:
                return filled, idx
            filled[idx] = part
            counts[part.cluster] += 1
            continue
        key = heapq.heappop(heap)
        cluster = key[-2]
        filled[idx] = _bind(d, idx, cluster, key[-1], free, pools)
        counts[cluster] += 1
        nxt = _best(d, cluster, eligible[cluster], free, counts[cluster])
        if nxt:
            heapq.heappush(heap, nxt)
    return filled, None


def schedule(demands, clusters, previous=(), matcher: Matcher | None = None, exact: str = "auto",
             budget: float | None = None, options=()) -> Plan:
    """`exact`: "auto" runs the exact phase when the fast path leaves replicas unplaced (or a sized
    deployment's pick may not be the cheapest), "always" runs it anyway, "off" never; `budget`: its
    deterministic time budget; `options`: deployments sized from an SLO (one Options each), of
    which one candidate is placed (sizing.py)."""
    # A plan builds hundreds of thousands of short-lived objects (verdicts, spots, tuples, counts)
    # and no reference cycles worth collecting: the cycle collector, started by the allocations
    # alone, took ~7% of a 100-cluster fleet's plan (0.17 of 2.5 s in the exact phase, 0.06 s in
    # the fast path). It is paused while the plan is made and left as it was; the plan is the same.
    was = gc.isenabled()
    gc.disable()
    try:
        return _schedule(demands, clusters, previous, matcher, exact, budget, options)
    finally:
        if was:
            gc.enable()


def _schedule(demands, clusters, previous, matcher, exact, budget, options) -> Plan:
    matcher = matcher or Matcher()
    clusters = sorted(clusters, key=lambda c: c.name)
    by_name = {c.name: replace(c, pools=tuple(sorted(c.pools, key=lambda p: p.name)))
               for c in clusters}
    clusters = list(by_name.values())
    pools = {(c.name, p.name): p for c in clusters for p in c.pools}
    capacity = {key: p.max_nodes * p.gpus_per_node for key, p in pools.items()}    # GPUs per pool
    free = dict(capacity)
    demands = sorted(demands, key=lambda d: d.key)
    options = sorted(options, key=lambda o: o.key)

    prev: dict[str, dict[int, Placement]] = defaultdict(dict)
    for p in sorted(previous, key=lambda p: (p.deployment, p.replica, p.cluster)):
        prev[p.deployment].setdefault(p.replica, p)

    verdicts = {}
    for d in [*demands, *(c for o in options for c in o.candidates)]:
        for role, cel in [*((r, r.cel) for r in d.roles), (None, d.cluster_cel)]:
            if cel.strip():
                try:
                    check_syntax(cel)   # a parse error is an input error even if no cluster is eligible
                except CelError as exc:
                    raise DemandError(d.key, role and role.name, str(exc)) from None
    for d in demands:
        verdicts[d.key] = Verdicts(d, matcher)
    # decided once per Filter signature and shared (the benchmark's 349 deployments at 100 clusters
    # have 36); the first deployment of a signature is decided with its own verdicts, so an error names it
    eligible, decided, alike = {}, {}, Alike()
    for d in demands:
        sig = alike.signature(d)
        if sig not in decided:
            decided[sig] = _eligible(d, clusters, verdicts[d.key])
        eligible[d.key] = decided[sig]
    choice = sizing.Choice(options, clusters, matcher)
    for key, d in choice.sticky(prev, by_name).items():      # sized deployments that keep their configuration
        demands.append(d)
        verdicts[key], eligible[key] = choice.verdicts_of(key), choice.eligible_of(key)
    demands.sort(key=lambda d: d.key)
    rejections = LazyRejections(demands, clusters, verdicts, alike)

    kept: dict[str, dict[int, Placement]] = {d.key: {} for d in demands}
    moves, stale, leaving, gone = [], [], [], {}
    for d in demands:
        for idx, old in sorted(prev.get(d.key, {}).items()):
            if idx >= d.replicas:
                leaving.append(old)          # scale-down: deleted at the end of `up`
                continue
            old = recorded_shape(d, old)
            problem = _retain_problem(d, old, by_name, eligible[d.key], free)
            why, kind = problem or (None, None)
            if kind == RESIZE:
                grown = _grow(d, old, free, pools)
                if tuple(grown.roles[r.name].workers for r in d.roles) in d.shapes:
                    why, kind, old = None, None, grown      # resized in place: its workload scales
                else:
                    kind = RESHAPE                           # no room in its own pools: replace it
            if kind in (GONE, ROOM, MOVED):
                moves.append(Move(d.key, idx, old.cluster, why))
                gone[(d.key, idx)] = (old, why, kind)
                if kind == MOVED:
                    leaving.append(old)      # it runs on where it is until `up` ends
                continue
            if kind == RESHAPE:
                # It keeps running at its recorded shape until it is replaced (surge.py, after fill).
                # It can stay only if its objects can be rendered as they run: same roles, topology recorded.
                keepable = set(old.roles) == {r.name for r in d.roles} and all(rp.topology for rp in old.roles.values())
                stale.append((d, idx, old, why, keepable))
            elif d.steps:
                old = _grow(d, old, free, pools)
            for rp in old.roles.values():
                free[(old.cluster, rp.pool)] -= rp.need(pools[(old.cluster, rp.pool)].gpus_per_node)
            kept[d.key][idx] = old
        for idx, cluster in sorted(d.pinned.items()):
            if idx >= d.replicas or idx in kept[d.key]:
                continue
            per = eligible[d.key].get(cluster)
            count = sum(1 for p in kept[d.key].values() if p.cluster == cluster)
            key = _best(d, cluster, per, free, count) if per else None
            if key is None:
                why = "does not pass the filter" if cluster in by_name and not per else \
                    "is not in the fleet" if cluster not in by_name else "has no room for it at its shape"
                moves.append(Move(d.key, idx, cluster, f"it is adopted there, but {cluster} {why}"))
                continue
            kept[d.key][idx] = _bind(d, idx, cluster, key[-1], free, pools)
    for o in choice.open:       # sized anew: what runs now is replaced, deleted at the end of `up`
        moves += [Move(o.key, idx, old.cluster, choice.why_open(o.key, old))
                  for idx, old in sorted(prev.get(o.key, {}).items())]

    known = {d.key for d in demands}
    leaving += [p for key, olds in sorted(prev.items()) if key not in known for p in olds.values()]
    held = _hold(leaving, by_name, free)
    after_retain = dict(free)
    placements, failed_at, filled = [], {}, {d.key: {} for d in demands}
    # Fill order: priority tier (highest first), then name; within a tier every deployment with
    # nothing placed is served first (its first replica), then the rest of each (a retained
    # deployment's missing replicas too) in the same order, so a deployment of many small replicas,
    # or one scaled up, never starves another of its tier. A sized deployment picks its candidate
    # at its first turn (the one that places the most, then costs least: sizing.Choice.pick).
    items = sorted([*demands, *choice.open], key=lambda d: (-d.priority, d.key))
    for tier in sorted({item.priority for item in items}, reverse=True):
        rest = []
        for item in (i for i in items if i.priority == tier):
            if isinstance(item, Options):
                d, placed, free, failed = choice.pick(item, free, lambda *a: _fill(*a, pools))
                demands.append(d)
                verdicts[d.key], eligible[d.key] = choice.verdicts_of(d.key), choice.eligible_of(d.key)
                kept[d.key], filled[d.key] = {}, placed
            else:
                d = item
                if kept[d.key]:          # already served: its missing replicas wait for the second round
                    filled[d.key], failed = {}, None
                    rest.append(d)
                else:
                    placed, failed = _fill(d, {}, eligible[d.key], free, pools, 1)
                    filled[d.key] = placed
                    if failed is None:
                        rest.append(d)
            if failed is not None:
                failed_at[d.key] = failed
        for d in rest:
            placed, failed = _fill(d, {**kept[d.key], **filled[d.key]}, eligible[d.key], free, pools)
            filled[d.key].update(placed)
            if failed is not None:
                failed_at[d.key] = failed
    demands.sort(key=lambda d: d.key)
    rejections = LazyRejections(demands, clusters, verdicts, alike)

    phase, changed = "fast path", []
    if exact == "always" or (exact == "auto" and (failed_at or choice.dearer_than_bound(filled))):
        filled, free, phase, changed, swapped = _exact(demands, eligible, after_retain, kept, filled, budget,
                                                       exact == "auto", choice, pools)
        for key, d in swapped.items():
            demands[next(i for i, x in enumerate(demands) if x.key == key)] = d
            verdicts[key], eligible[key] = choice.verdicts_of(key), choice.eligible_of(key)
        rejections = LazyRejections(demands, clusters, verdicts, alike)
    transitions = replace_changed(stale, kept, filled, eligible, free, held, moves, pools)
    transitions += _relocated(gone, kept, filled)
    for d in demands:
        have = {**kept[d.key], **filled[d.key]}
        placements.extend(have[i] for i in sorted(have))

    # Reasons are judged against the final ledger, so a re-plan from this plan explains the same way.
    # Deployments that filter alike (same signature, and the same eligible pools: one object) have
    # the same reasons against one ledger: made once (27 times for 124 unplaced deployments at 100
    # mixed clusters).
    unplaced, why = [], {}
    for d in demands:
        missing = [i for i in range(d.replicas) if i not in kept[d.key] and i not in filled[d.key]]
        if not missing:
            continue
        same = (alike.key(d), id(eligible[d.key]))
        if same not in why:
            why[same] = tuple(sorted(set(rejections[d.key]) | set(_capacity_reasons(d, eligible[d.key], free, capacity,
                                                                                    held)), key=_order)) \
                or (Rejection("-", None, NO_CLUSTER, "the fleet has no cluster to place on"),)
        unplaced += [Unplaced(d.key, i, why[same]) for i in missing]
    by_d = defaultdict(list)
    for p in placements:
        by_d[p.deployment].append(p)
    missing_by_d = defaultdict(list)
    for u in unplaced:
        missing_by_d[u.deployment].append(u)
    progress = [_progress(d, by_d[d.key], missing_by_d[d.key], free, capacity, pools) for d in demands]
    return Plan(placements, unplaced, sorted(moves, key=lambda m: (m.deployment, m.replica)),
                {d.key: d.replicas for d in demands}, free, rejections, phase, changed, progress,
                sorted(transitions, key=lambda t: (t.deployment, t.replica)), {k: v for k, v in sorted(held.items()) if v},
                dict(choice.chosen), {key: p.gpus_per_node for key, p in pools.items()})


def _hold(leaving, clusters, free) -> Counter:
    """Charge the GPUs of replicas this plan deletes: Pulumi deletes them at the end of `up`
    (after every create and update), so nothing created in the same `up` may count on them."""
    held = Counter()
    for old in leaving:
        pools = {p.name: p for p in clusters[old.cluster].pools} if old.cluster in clusters else {}
        for rp in old.roles.values():
            if rp.pool in pools:
                n = min(rp.need(pools[rp.pool].gpus_per_node), free[(old.cluster, rp.pool)])
                free[(old.cluster, rp.pool)] -= n
                held[(old.cluster, rp.pool)] += n
    return held


def _relocated(gone: dict, kept, filled) -> list[Transition]:
    """Replicas re-placed because their spot went away or no longer qualifies: where they went.
    One that stays on its cluster while its old objects still exist there takes the other slot."""
    out = []
    for (key, idx), (old, why, kind) in sorted(gone.items()):
        new = filled[key].get(idx) or kept[key].get(idx)
        if new is not None and new.cluster == old.cluster and new.slot == old.slot and kind == MOVED:
            new = replace(new, slot=1 - old.slot)
            (filled[key] if idx in filled[key] else kept[key])[idx] = new
        how = "lost" if kind in (GONE, ROOM) else "moved" if new is not None else "removed"
        out.append(Transition(key, idx, how, old.cluster, new.cluster if new else None, why))
    return out


def _exact(demands, eligible, after_retain, kept, filled, budget, only_if_better, choice, pools):
    from .exact import refill     # OR-Tools loads only when the exact phase runs

    return refill(demands, eligible, after_retain, kept, filled, budget, only_if_better, choice, pools)

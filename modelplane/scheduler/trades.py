"""After the exact phase's CP-SAT solves (counts.optimise, stage 4): room a solution left is
filled, and each deployment still unserved is given a replica by moving what blocks it to another
spot of its kind, or taking off what is worth less. Counts per spot in, counts per spot out; the
caller keeps a result only if it raises the objective. Deterministic: every choice is in a fixed
order (spot index, size, quality cost)."""
from __future__ import annotations

import bisect
from collections import Counter, defaultdict


class Fill:
    """Whole replicas put on spots against the free GPUs per (cluster, pool) and each kind's room."""

    def __init__(self, kinds_, spots_, free, holding=()):
        """`holding`: replicas per spot a solution already has, put first."""
        self.spots, self.left = spots_, dict(free)
        self.counts = [0] * len(spots_)
        self.room = [k.want for k in kinds_]
        self.placed = Counter()
        for i, n in enumerate(holding):
            if n:
                self.put(i, n)

    def put(self, i, most) -> int:
        """Up to `most` replicas on spot `i`, as many as fit; how many were put."""
        s = self.spots[i]
        n = min(most, self.room[s.kind])
        if n <= 0:
            return 0
        left = self.left
        for key, m in s.rows:
            fits = left[key] // m
            if fits < n:
                if fits <= 0:
                    return 0
                n = fits
        for key, m in s.rows:
            left[key] -= n * m
        self.counts[i] += n
        self.room[s.kind] -= n
        self.placed[s.kind] += n
        return n


def make_room(kinds_, spots_, free, counts) -> list[int]:
    """Each deployment still unserved given a replica on a spot whose pools are made to hold it:
    replicas there move to another spot of their kind with room (nothing lost), or to one on
    their own cluster with another pool for one of their roles if the spot then lacks fewer GPUs
    (a prefill/decode pair needs room on two pools at once), else are taken
    off if worth less (a lower tier's, or its own tier's beyond each deployment's first: a tier's
    deployments served outrank its replicas). Then each kind with replicas still missing gets
    more the same way, giving up only a lower tier's (a replica for a replica of its own tier
    gains nothing). Tier by tier, highest first, smallest replicas first. What is taken off is
    placed again where room allows (`fill_room`, after)."""
    fill = Fill(kinds_, spots_, free, counts)
    by_kind = defaultdict(list)
    for i, s in enumerate(spots_):
        by_kind[s.kind].append(i)
    size = [sum(s.need.values()) for s in spots_]
    rank = [(kinds_[s.kind].priority, -size[j], j) for j, s in enumerate(spots_)]   # a blocker's: lowest first
    left = fill.left
    held = defaultdict(set)                             # (cluster, pool) -> its spots with replicas on
    for i, n in enumerate(fill.counts):
        if n:
            for p in spots_[i].need:
                held[(spots_[i].cluster, p)].add(i)
    # per kind, its spots with room for one more replica, in index order; a trade changes `left`
    # on a few pools only, so only the spots on those are looked at again
    on_pool = defaultdict(list)
    paired = [len(k.members[0].roles) > 1 for k in kinds_]   # a kind with more than one role
    same = defaultdict(list)                            # (kind, cluster) -> its spots there
    for i, s in enumerate(spots_):
        same[(s.kind, s.cluster)].append(i)
        for p in s.need:
            on_pool[(s.cluster, p)].append(i)

    def fits(t):
        return all(left[key] >= m for key, m in spots_[t].rows)

    roomy_of = {v: [t for t in mine if fits(t)] for v, mine in by_kind.items()}
    is_roomy = [False] * len(spots_)
    for mine in roomy_of.values():
        for t in mine:
            is_roomy[t] = True

    def roomy(v):
        return roomy_of[v]

    def changed(pools):
        for t in sorted({t for key in pools for t in on_pool[key]}):
            now = fits(t)
            if now != is_roomy[t]:
                is_roomy[t] = now
                mine = roomy_of[spots_[t].kind]
                if now:
                    bisect.insort(mine, t)
                else:
                    mine.pop(bisect.bisect_left(mine, t))

    def yields(v, k, tier, extra, fewer=0):
        """Whether a replica of kind v may be given up for one of kind k at `tier`, `fewer` of its
        replicas given up already: a lower tier's; or its own tier's beyond each deployment's
        first, unless it is k's own or `extra` (the replica wanted is not a deployment's first)."""
        kind = kinds_[v]
        if kind.priority > tier or v == k or (extra and kind.priority == tier):
            return False
        return kind.priority < tier or fill.placed[v] - fewer > kind.fresh

    def movable(j, k, tier, extra):
        """Whether a replica on spot j may make way for kind k at `tier`: it may move (its kind has
        another spot with room, or one on its cluster), or it may be given up."""
        v = spots_[j].kind
        if kinds_[v].group:
            return False
        if len(roomy_of[v]) > is_roomy[j] or len(same[(v, spots_[j].cluster)]) > 1:
            return True
        return yields(v, k, tier, extra)

    def plan_for(k, i, extra=False):
        """Moves [(from spot, to spot or None)] that let one replica of kind k fit on spot i, or None.
        `extra`: the replica is not a deployment's first, so only a lower tier's is given up."""
        s, tier, c = spots_[i], kinds_[k].priority, spots_[i].cluster
        want = s.need
        bal = {}                # (cluster, pool) -> GPUs free once the moves so far are made
        short = {p: m - left[(c, p)] for p, m in want.items()}
        if all(v <= 0 for v in short.values()):
            return []
        lacking = sum(v for v in short.values() if v > 0)
        # a blocker that cannot move (no other spot of its kind with room, none on its cluster)
        # and is not worth less stays, whatever the order: if those that may go cannot free a
        # short pool, nothing below can, and the search is skipped (it fails on most spots tried)
        for p, x in short.items():
            if x > 0:
                for j in held[(c, p)]:
                    if j != i and movable(j, k, tier, extra):
                        x -= fill.counts[j] * spots_[j].need[p]
                        if x <= 0:
                            break
                else:
                    return None
        moves, off, fewer = [], Counter(), Counter()
        cands = sorted({j for p in want for j in held[(c, p)] if j != i}, key=rank.__getitem__)
        for j in cands:
            v = spots_[j].kind
            if kinds_[v].group:
                continue
            freed = spots_[j].need              # j is on cluster c: it holds one of spot i's pools
            while fill.counts[j] > off[j] and any(short.get(p, 0) > 0 for p in freed):
                # another spot of its kind, off these pools, with room for one more
                to = None
                for t in roomy(v):
                    if t == j:
                        continue
                    st = spots_[t]
                    ct = st.cluster
                    if ct != c:
                        if all(bal.get((ct, p), left[(ct, p)]) >= m for p, m in st.need.items()):
                            to = t
                            break
                    elif want.keys().isdisjoint(st.need) and all(
                            bal.get((c, p), left[(c, p)]) + freed.get(p, 0) >= m for p, m in st.need.items()):
                        to = t
                        break
                if to is None and (len(want) > 1 or paired[v]):
                    # or its kind's spot on the same cluster with another pool for one of its
                    # roles (a prefill/decode pair whose prefill moves to another pool frees the
                    # pool the missing replica's decode needs), if spot i then lacks less. A
                    # one-role blocker of a one-pool spot has no such spot: its others are on
                    # other pools, which the spots with room above cover
                    for t in same[(v, c)]:
                        tneed = spots_[t].need
                        if t == j or want.keys().isdisjoint(tneed) or not all(
                                bal.get((c, p), left[(c, p)]) + freed.get(p, 0) >= m for p, m in tneed.items()):
                            continue
                        if sum(max(0, x - freed.get(p, 0) + tneed.get(p, 0)) for p, x in short.items()) < lacking:
                            to = t
                            break
                if to is None:
                    if not yields(v, k, tier, extra, fewer[v]):
                        break
                    fewer[v] += 1
                for p, m in freed.items():
                    bal[(c, p)] = bal.get((c, p), left[(c, p)]) + m
                    if p in short:
                        short[p] -= m
                if to is not None:
                    ct = spots_[to].cluster
                    for p, m in spots_[to].need.items():
                        bal[(ct, p)] = bal.get((ct, p), left[(ct, p)]) - m
                        if ct == c and p in short:
                            short[p] += m
                moves.append((j, to))
                off[j] += 1
                lacking = sum(v for v in short.values() if v > 0)
                if not lacking:
                    return moves
        return None

    def trade(k, goal, extra=False):
        """Trades that give kind k replicas on its spots, smallest first, up to `goal` placed."""
        order = sorted(by_kind[k], key=lambda i: (size[i], spots_[i].cost, i))
        while fill.placed[k] < goal and fill.room[k] > 0:
            for i in order:
                moves = plan_for(k, i, extra)
                if moves is None:
                    continue
                for j, to in moves:
                    s = spots_[j]
                    for p, m in s.need.items():
                        left[(s.cluster, p)] += m
                    fill.counts[j] -= 1
                    fill.room[s.kind] += 1
                    fill.placed[s.kind] -= 1
                for j, to in moves:
                    if to is not None:
                        assert fill.put(to, 1) == 1
                assert fill.put(i, 1) == 1
                touched = {i, *(j for j, _ in moves), *(to for _, to in moves if to is not None)}
                for t in touched:
                    for p in spots_[t].need:
                        (held[(spots_[t].cluster, p)].add if fill.counts[t] else held[(spots_[t].cluster, p)].discard)(t)
                changed({(spots_[t].cluster, p) for t in touched for p in spots_[t].need})
                break
            else:
                break

    for tier in sorted({k.priority for k in kinds_}, reverse=True):
        mine = sorted((k for k, kind in enumerate(kinds_) if kind.priority == tier and not kind.group),
                      key=lambda k: (kinds_[k].gpus, k))
        for k in mine:
            if kinds_[k].fresh:
                trade(k, kinds_[k].fresh)
        for k in mine:
            trade(k, kinds_[k].want, extra=True)
    return fill.counts


def fill_room(kinds_, spots_, free, counts) -> list[int]:
    """A solution with whole replicas added on whatever room it left, per tier, highest first:
    a replica for each fresh member not yet served, then more replicas, smallest first (the most
    fit). A large model's CP-SAT sees only the spots the LP, the start and the fast path use, so
    room it frees elsewhere stayed empty (issue 44: at 60 clusters, deployments that fit left
    unserved). Adding only ever raises the objective; a sized deployment's candidate is placed
    whole or not at all, so it is left as it is."""
    fill = Fill(kinds_, spots_, free, counts)
    by_tier = defaultdict(list)
    for i, s in enumerate(spots_):
        if not kinds_[s.kind].group:
            by_tier[kinds_[s.kind].priority].append(i)
    key = [(sum(s.need.values()), s.cost, i) for i, s in enumerate(spots_)]    # smallest, then best
    for tier in sorted(by_tier, reverse=True):
        order = sorted(by_tier[tier], key=key.__getitem__)
        for i in order:
            k = spots_[i].kind
            if kinds_[k].fresh > fill.placed[k]:
                fill.put(i, kinds_[k].fresh - fill.placed[k])
        room = fill.room
        for i in order:
            if room[spots_[i].kind] > 0:         # put() would add nothing: skipped, it is called often
                fill.put(i, room[spots_[i].kind])
    return fill.counts

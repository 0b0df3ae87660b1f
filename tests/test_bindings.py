"""Ratio bindings: counts, rounding, scale order — table-driven and with hypothesis."""
import pytest
from hypothesis import given, settings, strategies as st

from modelplane.scheduler.bindings import BindingError, holds, order, resolve, scale_path

PD = {"prefill": ("decode", 2), "router": ("decode", 0.25)}


@pytest.mark.parametrize("root,want", [
    (1, {"decode": 1, "prefill": 2, "router": 1}),     # 0.25 rounds up: a role is never below its binding
    (4, {"decode": 4, "prefill": 8, "router": 1}),
    (5, {"decode": 5, "prefill": 10, "router": 2}),
])
def test_counts_follow_the_bindings_rounded_up(root, want):
    assert resolve(PD, root) == want


def test_ratios_are_exact_decimals():
    assert resolve({"prefill": ("decode", 0.1)}, 30)["prefill"] == 3


def test_chains_resolve_through_their_parents():
    chain = {"prefill": ("decode", 1.5), "router": ("prefill", 0.5)}
    assert order(chain) == ["prefill", "router"] and resolve(chain, 3) == {"decode": 3, "prefill": 5, "router": 3}


@pytest.mark.parametrize("bindings,words", [
    ({"a": ("b", 1), "b": ("a", 1)}, "cycle"),
    ({"a": ("nowhere", 1)}, "neither 'decode' nor bound"),
])
def test_bad_graphs_are_refused(bindings, words):
    with pytest.raises(BindingError, match=words):
        resolve(bindings, 1)


def test_scale_order_is_outward_in_when_growing_and_root_first_when_shrinking():
    up = scale_path(PD, resolve(PD, 4), 5)
    # bound roles first (same depth: name order), the root last
    assert up[-1] == resolve(PD, 5) and [k for k, _ in _changes(resolve(PD, 4), up)] == ["prefill", "router", "decode"]
    down = scale_path(PD, resolve(PD, 5), 2)
    assert [k for k, _ in _changes(resolve(PD, 5), down)] == ["decode", "prefill", "router"]


def _changes(start, path):
    out, prev = [], start
    for state in path:
        (key, value), = [(k, v) for k, v in state.items() if prev[k] != v]
        out.append((key, value))
        prev = state
    return out


ratios = st.sampled_from([0.25, 0.5, 1, 1.5, 2, 3])


@st.composite
def dags(draw):
    names = [f"r{i}" for i in range(draw(st.integers(0, 4)))]
    out = {}
    for i, name in enumerate(names):
        parent = draw(st.sampled_from(["decode", *names[:i]]))
        out[name] = (parent, draw(ratios))
    return out


@settings(max_examples=150, deadline=None)
@given(dags(), st.integers(1, 40), st.integers(1, 40))
def test_every_scale_step_keeps_every_binding_and_ends_at_the_target(bindings, a, b):
    start = resolve(bindings, a)
    assert holds(bindings, start)
    path = scale_path(bindings, start, b)
    for state in path:
        assert holds(bindings, state), state
        assert set(state) == set(start)          # no role appears or vanishes
    assert (path[-1] if path else start) == resolve(bindings, b)
    assert len(path) == sum(1 for k in start if start[k] != resolve(bindings, b)[k])   # one change per role


# Rollout under scarce capacity never breaks a binding, never over-commits, never exceeds the target.
from modelplane.scheduler import Cluster, Demand, Pool, Role, schedule  # noqa: E402


@settings(max_examples=120, deadline=None)
@given(st.sampled_from([0.5, 1, 1.5, 2]), st.integers(1, 6), st.integers(1, 3),
       st.lists(st.integers(0, 12), min_size=1, max_size=3))
def test_rollout_places_ratio_preserving_shapes_only(ratio, target, replicas, sizes):
    bindings = {"prefill": ("decode", ratio)}
    shape = lambda k: (k, resolve(bindings, k)["prefill"])  # noqa: E731
    d = Demand("ml/m", replicas, (Role("decode", "", target, 1, 8), Role("prefill", "", shape(target)[1], 1, 8)),
               steps=tuple(shape(k) for k in range(target - 1, 0, -1)))
    clusters = [Cluster(f"c{i}", (Pool("h", "h200", 8, n, {}),)) for i, n in enumerate(sizes)]
    plan = schedule([d], clusters)
    used = {}
    for p in plan.placements:
        dec, pre = p.roles["decode"].workers, p.roles["prefill"].workers
        assert holds(bindings, {"decode": dec, "prefill": pre}) and (dec, pre) in d.shapes
        used[p.cluster] = used.get(p.cluster, 0) + dec + pre
    for c in clusters:
        assert used.get(c.name, 0) <= c.pools[0].max_nodes                  # never over-committed
    row = plan.progress[0]
    assert row["placed"] == sum(rp.workers for p in plan.placements for rp in p.roles.values()) <= row["target"]
    assert row["target"] == replicas * sum(shape(target))
    # the first replica takes the largest step any single cluster can hold
    if plan.placements:
        best = max((k for k in range(1, target + 1) if max(sizes) >= sum(shape(k))), default=0)
        first = plan.placements[0]
        assert first.roles["decode"].workers == best or sum(shape(target)) <= max(sizes)

"""Traffic: how a service's requests split over the replicas and providers it routes to (pure).

A service's traffic is 1,000 units. Its endpoints' weights split them (largest remainder, so the
units add up exactly); an endpoint whose deployment has no placed replica gets none, and its
weight goes to the others in proportion (the service is `degraded`, and the policy
`service-endpoints-placed` says so). A deployment endpoint's units split over the clusters its
replicas run on, in proportion to the replicas each holds (one backend per deployment and
cluster: the deployment's InferencePool or Service there, whose endpoint picker or endpoints
spread requests over every ready replica of it on that cluster); a provider endpoint's units split over the clusters that host the service in proportion
to the self-hosted units each carries (so every cluster sends the same share to the provider),
or evenly over the service's gateway clusters when nothing of it is self-hosted.

A fallback provider (`fallback: true`) takes no units: every gateway cluster the service may enter
(its clusterSelector) routes to it at a lower priority, the clusters that carry no share as
standbys (`Routes.standby`, DNS weight 0: answered only when every weighted record is unhealthy).

A cluster's units are what its HTTPRoute carries; DNS weights are the clusters' shares of the
service rounded to whole percent (largest remainder again, at least 1 for a cluster that
carries traffic; Route 53 accepts 0-255). With Route 53, a cluster carrying several replicas of a
service gets one record per replica (`replica_weights`), so DNS sheds a lost replica's part alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from .ratio import largest_remainder

TOTAL_UNITS = 1000
DNS_TOTAL = 100


@dataclass(frozen=True)
class Target:
    """One endpoint of a service: a deployment ("ns/name") or a provider (name)."""

    kind: str            # deployment | provider
    name: str
    weight: int
    fallback: bool = False   # a provider taking over when no replica can; no weighted share


@dataclass(frozen=True)
class Backend:
    cluster: str
    kind: str            # deployment | provider
    name: str
    replicas: tuple[int, ...]   # the deployment's replica indices on this cluster; () for a provider
    units: int


@dataclass
class Routes:
    """Where one service's traffic goes."""

    endpoints: list[dict] = field(default_factory=list)   # {target, weight, units, clusters{c: units}}
    backends: list[Backend] = field(default_factory=list)
    clusters: dict[str, int] = field(default_factory=dict)  # units per cluster
    dns: dict[str, int] = field(default_factory=dict)       # percent per cluster
    missing: list[str] = field(default_factory=list)        # endpoints with nothing placed
    fallback: str | None = None                            # the fallback provider's name
    standby: list[str] = field(default_factory=list)       # clusters routing only to the fallback

    @property
    def degraded(self) -> bool:
        return bool(self.missing)


def _label(t: Target) -> str:
    return f"{t.kind}:{t.name}"


def route(targets: list[Target], replicas: dict[str, list[tuple[str, int]]], gateway_clusters: list[str]) -> Routes:
    """`replicas`: deployment key -> [(cluster, replica index)] placed on clusters with a gateway;
    `gateway_clusters`: where a provider-only service enters."""
    out = Routes()
    out.fallback = next((t.name for t in targets if t.fallback), None)
    targets = [t for t in targets if not t.fallback]
    live = [t for t in targets if t.kind == "provider" or replicas.get(t.name)]
    out.missing = sorted(_label(t) for t in targets if t not in live)
    units = largest_remainder(TOTAL_UNITS, {_label(t): t.weight for t in live}) if live else {}
    per_cluster: dict[str, int] = {}
    for t in live:
        if t.kind != "deployment":
            continue
        on: dict[str, list[int]] = {}
        for cluster, idx in sorted(replicas[t.name]):
            on.setdefault(cluster, []).append(idx)
        split = largest_remainder(units[_label(t)], {c: len(idxs) for c, idxs in on.items()})
        for cluster, n in sorted(split.items()):
            out.backends.append(Backend(cluster, "deployment", t.name, tuple(on[cluster]), n))
            per_cluster[cluster] = per_cluster.get(cluster, 0) + n
    hosts = per_cluster or {c: 1 for c in sorted(gateway_clusters)}
    for t in live:
        if t.kind != "provider" or not hosts:
            continue
        split = largest_remainder(units[_label(t)], hosts)
        for cluster, n in sorted(split.items()):
            out.backends.append(Backend(cluster, "provider", t.name, (), n))
    out.backends = [b for b in out.backends if b.units]
    for b in out.backends:
        out.clusters[b.cluster] = out.clusters.get(b.cluster, 0) + b.units
    for t in targets:
        mine = [b for b in out.backends if (b.kind, b.name) == (t.kind, t.name)]
        clusters: dict[str, int] = {}
        for b in mine:
            clusters[b.cluster] = clusters.get(b.cluster, 0) + b.units
        out.endpoints.append({"target": _label(t), "weight": t.weight, "units": sum(b.units for b in mine),
                              "clusters": dict(sorted(clusters.items()))})
    if out.clusters:
        carrying = sorted(out.clusters)
        out.dns = largest_remainder(DNS_TOTAL, out.clusters, lo={c: 1 for c in carrying}) \
            if len(carrying) <= DNS_TOTAL else dict(out.clusters)
    out.clusters = dict(sorted(out.clusters.items()))
    if out.fallback is not None:
        out.standby = sorted(set(gateway_clusters) - set(out.clusters))
    return out


def delivered(dns: dict[str, int], endpoints: list[dict]) -> list[dict[str, int]]:
    """Per endpoint ({clusters: {cluster: units}}), the per mille of the service's requests each
    cluster serves of it once DNS picks the cluster by its whole-percent weight (`dns`): what the
    trace follows, so the services table and the trace say the same figure (DNS 67% of a cluster
    carrying 633 + 33 units serves 637 + 33, not 633 + 33). Without DNS weights, the units."""
    carried: dict[str, int] = {}
    for e in endpoints:
        for c, u in e["clusters"].items():
            carried[c] = carried.get(c, 0) + u
    if not dns or set(carried) - set(dns):
        return [dict(e["clusters"]) for e in endpoints]
    exact = {(c, i): Fraction(dns[c] * u, carried[c]) for i, e in enumerate(endpoints)
             for c, u in e["clusters"].items() if carried[c]}
    split = largest_remainder(TOTAL_UNITS, exact) if exact else {}
    return [{c: split[(c, i)] for c in e["clusters"] if (c, i) in split} for i, e in enumerate(endpoints)]


def replica_weights(routes: Routes) -> dict[str, dict[tuple[str, int], int]]:
    """cluster -> {(deployment key, replica index): DNS weight} for each cluster that carries two or
    more replicas of the service: its weight split into one record per replica (review N11), each
    replica's part its deployment's units there over that deployment's replicas there (a provider
    share on the cluster rides with them, in proportion). Lost, a replica's record leaves DNS with
    its part alone, so the survivors everywhere take it in proportion to their weights, not that
    cluster's other replicas alone. Whole weights adding up to the cluster's, at least 1 each (a
    weight of 0 would make it a standby); a cluster of weight below its replica count gives each 1."""
    out: dict[str, dict[tuple[str, int], int]] = {}
    for cluster, weight in sorted(routes.dns.items()):
        parts = {(b.name, i): Fraction(b.units, len(b.replicas)) for b in routes.backends
                 if b.cluster == cluster and b.kind == "deployment" and b.replicas for i in b.replicas}
        if len(parts) < 2:
            continue
        out[cluster] = largest_remainder(weight, parts, lo={k: 1 for k in parts}) if weight >= len(parts) \
            else {k: 1 for k in parts}
    return out

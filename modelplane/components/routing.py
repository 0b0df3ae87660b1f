"""ModelService and ServiceDns: wire the rendered routing objects and the weighted DNS records."""
from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp

from ..render.routing import service_objects
from .k8s import register

GATEWAYS_SUBDOMAIN = "gateways"


class ModelService(pulumi.ComponentResource):
    """A service's route (and provider backends) on every cluster that carries a share of it."""

    def __init__(self, svc, routes, deployments: dict, providers: dict, targets: dict, model: str,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("modelplane:index:ModelService", f"{svc.namespace}-{svc.name}", None, opts)
        gateways = {c: targets[c].inventory["gateway"] for c in routes.clusters}
        self.resources = []
        for cluster, objects in service_objects(svc, routes, deployments, providers, gateways).items():
            target = targets[cluster]
            child = pulumi.ResourceOptions(parent=self, provider=target.provider, depends_on=target.ready_in(svc.namespace))
            self.resources += [register(cluster, obj, child) for obj in objects]
        # What the policy pack's service rules read.
        self.register_outputs({
            "spec": svc.model_dump(by_alias=True, exclude_none=True, mode="json"),
            "model": model,
            "routes": routes_json(routes),
            "providers": {p: providers[p].model_dump(by_alias=True, exclude_none=True, mode="json",
                                                     exclude={"api_key"})
                          for p in sorted({e.provider for e in svc.endpoints if e.provider in providers})},
            "targets": {e.key(svc.namespace): (deployments[e.key(svc.namespace)].labels if e.deployment else {})
                        for e in svc.endpoints if e.deployment is None or e.key(svc.namespace) in deployments},
            "gateways": gateways,
        })


def routes_json(routes) -> dict:
    return {"endpoints": routes.endpoints, "clusters": routes.clusters, "dns": routes.dns,
            "missing": routes.missing,
            "backends": [{"cluster": b.cluster, "kind": b.kind, "name": b.name, "replica": b.replica,
                          "units": b.units} for b in routes.backends]}


def gateway_record(domain: str, cluster: str) -> str:
    """The per-cluster name a service's weighted records point at (Route 53)."""
    return f"{cluster}.{GATEWAYS_SUBDOMAIN}.{domain}"


class ServiceDns(pulumi.ComponentResource):
    """Weighted records for every service with a hostname: one per cluster that carries a share of it,
    weighted by that share. Route 53: a weighted CNAME per cluster to `<cluster>.gateways.<domain>`
    (an A record for an IP gateway, a CNAME for a load balancer hostname). Cloud DNS: one A record
    set with a weighted round robin routing policy (IP gateways only)."""

    def __init__(self, dns, services: list, addresses: dict, opts: pulumi.ResourceOptions | None = None):
        super().__init__("modelplane:index:ServiceDns", dns.kind, None, opts)
        zone = dns.zone
        if dns.kind == "route53":
            provider = aws.Provider("dns-route53", region="us-east-1", opts=pulumi.ResourceOptions(parent=self))
            child = pulumi.ResourceOptions(parent=self, provider=provider)
            for cluster in sorted({c for _, routes in services for c in routes.dns}):
                address, kind = addresses[cluster]
                aws.route53.Record(f"gateway-{cluster}", zone_id=zone.zone_id, name=gateway_record(zone.domain, cluster),
                                   type="A" if kind == "IPAddress" else "CNAME", ttl=dns.ttl, records=[address],
                                   opts=child)
            for svc, routes in services:
                for cluster, weight in sorted(routes.dns.items()):
                    aws.route53.Record(f"{svc.namespace}-{svc.name}-{cluster}", zone_id=zone.zone_id,
                                       name=svc.hostname, type="CNAME", ttl=dns.ttl, set_identifier=cluster,
                                       weighted_routing_policies=[{"weight": weight}],
                                       records=[gateway_record(zone.domain, cluster)], opts=child)
        else:
            provider = gcp.Provider("dns-clouddns", project=zone.project, opts=pulumi.ResourceOptions(parent=self))
            child = pulumi.ResourceOptions(parent=self, provider=provider)
            for svc, routes in services:
                wrrs = [{"weight": weight, "rrdatas": [addresses[cluster][0]]}
                        for cluster, weight in sorted(routes.dns.items())]
                gcp.dns.RecordSet(f"{svc.namespace}-{svc.name}", project=zone.project, managed_zone=zone.managed_zone,
                                  name=f"{svc.hostname}.", type="A", ttl=dns.ttl, routing_policy={"wrrs": wrrs},
                                  opts=child)
        self.register_outputs({})

"""ModelService and ServiceDns: wire the rendered routing objects and the weighted DNS records."""
from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp

from ..render.routing import health_path, health_targets, service_objects
from .k8s import register

GATEWAYS_SUBDOMAIN = "gateways"
# Cloud DNS health checks of external endpoints probe from three Google Cloud regions.
HEALTH_SOURCE_REGIONS = ("us-central1", "europe-west4", "asia-southeast1")


class ModelService(pulumi.ComponentResource):
    """A service's route (and provider backends) on every cluster that carries a share of it."""

    def __init__(self, svc, routes, deployments: dict, providers: dict, targets: dict, model: str,
                 opts: pulumi.ResourceOptions | None = None, dns=None):
        super().__init__("modelplane:index:ModelService", f"{svc.namespace}-{svc.name}", None, opts)
        gateways = {c: targets[c].inventory["gateway"] for c in routes.clusters}
        self.resources = []
        hosts = health_hosts(dns, routes) if svc.hostname else None
        for cluster, objects in service_objects(svc, routes, deployments, providers, gateways, hosts).items():
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


HEALTH_HOST = "modelplane-health"   # the Host Cloud DNS health checks send (they probe addresses)


def health_hosts(dns, routes) -> dict | None:
    """cluster -> the hostnames its health route answers: the Route 53 per-cluster gateway name,
    and one fixed name for Cloud DNS (one health check serves every address of a record set)."""
    if dns is None:
        return None
    return {c: [gateway_record(dns.zone.domain, c), f"{HEALTH_HOST}.{dns.zone.domain}"] for c in routes.dns}


class ServiceDns(pulumi.ComponentResource):
    """Weighted records for every service with a hostname: one per cluster that carries a share of it,
    weighted by that share. Route 53: a weighted CNAME per cluster to `<cluster>.gateways.<domain>`
    (an A record for an IP gateway, a CNAME for a load balancer hostname). Cloud DNS: one A record
    set with a weighted round robin routing policy (IP gateways only)."""

    def __init__(self, dns, services: list, addresses: dict, deployments: dict,
                 opts: pulumi.ResourceOptions | None = None):
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
                probed = set(health_targets(svc, routes, deployments))   # where a health route answers
                for cluster, weight in sorted(routes.dns.items()):
                    # A cluster whose replicas stop answering loses its share until they answer again.
                    check = aws.route53.HealthCheck(
                        f"{svc.namespace}-{svc.name}-{cluster}", type="HTTP", port=80,
                        fqdn=gateway_record(zone.domain, cluster), resource_path=health_path(svc.name, svc.namespace),
                        request_interval=30, failure_threshold=3, opts=child) if cluster in probed else None
                    aws.route53.Record(f"{svc.namespace}-{svc.name}-{cluster}", zone_id=zone.zone_id,
                                       name=svc.hostname, type="CNAME", ttl=dns.ttl, set_identifier=cluster,
                                       weighted_routing_policies=[{"weight": weight}],
                                       health_check_id=check.id if check else None,
                                       records=[gateway_record(zone.domain, cluster)], opts=child)
        else:
            provider = gcp.Provider("dns-clouddns", project=zone.project, opts=pulumi.ResourceOptions(parent=self))
            child = pulumi.ResourceOptions(parent=self, provider=provider)
            for svc, routes in services:
                probed = set(health_targets(svc, routes, deployments))   # where a health route answers
                policy = {"wrrs": [{"weight": weight, "rrdatas": [addresses[cluster][0]]}
                                   for cluster, weight in sorted(routes.dns.items())]}
                if probed == set(routes.dns):
                    # Health-checked WRR on external endpoints: items carry healthCheckedTargets instead of
                    # rrdatas, and one HTTP health check (with three source regions) probes each address.
                    check = gcp.compute.HealthCheck(
                        f"{svc.namespace}-{svc.name}", project=zone.project,
                        source_regions=list(HEALTH_SOURCE_REGIONS), check_interval_sec=30, timeout_sec=10,
                        unhealthy_threshold=3, http_health_check={
                            "port": 80, "host": f"{HEALTH_HOST}.{zone.domain}",
                            "request_path": health_path(svc.name, svc.namespace)}, opts=child)
                    policy = {"health_check": check.id, "wrrs": [
                        {"weight": weight, "health_checked_targets": {"external_endpoints": [addresses[cluster][0]]}}
                        for cluster, weight in sorted(routes.dns.items())]}
                gcp.dns.RecordSet(f"{svc.namespace}-{svc.name}", project=zone.project, managed_zone=zone.managed_zone,
                                  name=f"{svc.hostname}.", type="A", ttl=dns.ttl, routing_policy=policy,
                                  opts=child)
        self.register_outputs({})

"""InferenceCluster: a GKE, EKS or existing cluster with GPU node pools built from classes."""
from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from .base import Model, Name, Namespace, invalid, require_one
from .substrate import Component, EndpointPicker, Switch
from .syntax import (AwsRegion, DnsLabel, DnsSubdomain, GcpName, GcpProject, GcpRegion, IamArn, Labels,
                     MachineType, NodeLabels, Region, SubnetId, TaintKey, TaintValue, Zone)

# No pool or cluster holds more nodes (GKE: 15,000 per cluster); a bigger number is a typo.
MAX_NODES = 15_000
MAX_GPUS = 1_000_000

# The label and taint every GPU node carries; renderers pin and tolerate with the same values.
POOL_LABEL = "modelplane.ai/pool"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
# The node label the NVIDIA DRA driver's kubelet plugin and device plugin select GPU nodes by
# when Node Feature Discovery is not installed (dra-driver-nvidia-gpu v0.4.1 values.yaml,
# k8s-device-plugin v0.18.2 values.yaml).
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"


class Taint(Model):
    key: TaintKey
    value: TaintValue = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"


class Capacity(Model):
    """How the pool's nodes are bought."""

    type: Literal["on-demand", "spot", "reservation", "flex-start", "capacity-block"] = "on-demand"
    reservation: str | None = None   # GKE reservation name or EC2 capacity reservation id
    # What one node costs you per hour (USD) when it is not the catalog's list price: a contracted
    # reservation, a Capacity Block bought at a given rate, a negotiated discount.
    hourly: float | None = Field(default=None, gt=0, le=10_000, allow_inf_nan=False)

    @model_validator(mode="after")
    def _needs_reservation(self):
        if self.type in ("reservation", "capacity-block") and not self.reservation:
            raise invalid(f"capacity type {self.type!r} needs a reservation",
                          "set capacity.reservation to the reservation name (GKE) or id cr-… (EKS)")
        if self.type == "capacity-block" and not re.fullmatch(r"cr-[0-9a-f]+", self.reservation or ""):
            raise invalid(f"{self.reservation!r} is not an EC2 capacity reservation id",
                          "use the id of the Capacity Block, e.g. cr-0123456789abcdef0")
        return self


class NodePool(Model):
    """A GPU node pool built from one InferenceClass of the catalog."""

    name: Name                         # the pool's name, unique in its cluster
    class_: str = Field(alias="class")  # an InferenceClass name (`modelplane classes` lists them)
    min_nodes: int = Field(default=0, ge=0, le=MAX_NODES)   # nodes kept running (and paid for) when idle
    max_nodes: int = Field(ge=0, le=MAX_NODES)       # the most nodes the pool may grow to; the scheduler plans with these
    zones: list[Zone] = []          # GKE: node locations within the cluster's region
    subnet_ids: list[SubnetId] = []    # EKS: subnets for this pool (default: the cluster's)
    labels: NodeLabels = {}            # extra node labels
    taints: list[Taint] = []           # extra node taints (the GPU taint is added for you)
    capacity: Capacity = Capacity()    # how the nodes are bought: on-demand, spot, reservation, ...

    @model_validator(mode="after")
    def _bounds(self):
        seen = {(GPU_TAINT["key"], GPU_TAINT["effect"])}     # the API server refuses a repeated key and effect
        for t in self.taints:
            if (t.key, t.effect) in seen:
                raise invalid(f"taint {t.key}:{t.effect} is set twice (modelplane adds {GPU_TAINT['key']}="
                              f"{GPU_TAINT['value']}:{GPU_TAINT['effect']} itself)", "remove the repeated taint")
            seen.add((t.key, t.effect))
        if self.min_nodes > self.max_nodes:
            raise invalid(f"minNodes ({self.min_nodes}) is greater than maxNodes ({self.max_nodes})",
                          "raise maxNodes or lower minNodes")
        return self


# DRA's resource.k8s.io/v1 is served from Kubernetes 1.34 on (GKE and EKS alike).
DRA_MIN_VERSION = (1, 34)
_VERSION = r"^1\.\d+(\.\d+(-gke\.\d+)?)?$"


def minor_version(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


class Gke(Model):
    project: GcpProject
    region: GcpRegion
    version: str = Field(default="1.34", pattern=_VERSION)   # control plane (min_master_version)
    release_channel: Literal["RAPID", "REGULAR", "STABLE", "EXTENDED"] = "REGULAR"
    network: GcpName = "default"
    subnetwork: GcpName | None = None
    system_machine_type: MachineType = "e2-standard-4"
    deletion_protection: bool = True    # set false before `modelplane destroy`


class Eks(Model):
    region: AwsRegion
    version: str = Field(default="1.34", pattern=r"^1\.\d+$")
    subnet_ids: list[SubnetId] = Field(min_length=2)
    system_instance_type: MachineType = "m6i.xlarge"
    # IAM principals (CI, admins) that get cluster-admin access entries besides the creator.
    admin_role_arns: list[IamArn] = []


class Existing(Model):
    """Bring your own cluster: the kubeconfig is a secret stack config key."""

    kubeconfig_secret: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]*$")
    version: str | None = Field(default=None, pattern=_VERSION)   # the cluster's Kubernetes version
    cloud: Literal["gcp", "aws", "azure", "oci", "on-prem", "other"] = "other"
    region: Region = "unknown"
    # DRA device classes the cluster's own drivers provide (e.g. gpu.amd.com), beyond the ones
    # modelplane installs; devices without a class are claimed through their device plugin.
    device_classes: list[str] = []
    nvidia_driver_root: str = "/"      # where the nodes' NVIDIA driver lives (for the DRA driver)


class Queue(Model):
    """A KAI leaf queue, one per team namespace, under the cluster's root queue."""

    namespace: Namespace
    gpu_quota: int = Field(default=-1, ge=-1, le=MAX_GPUS)      # -1: unbounded
    gpu_limit: int = Field(default=-1, ge=-1, le=MAX_GPUS)
    over_quota_weight: int = Field(default=1, ge=0, le=1000)

    @field_validator("gpu_limit")
    @classmethod
    def _limit_covers_quota(cls, limit: int, info: ValidationInfo) -> int:
        # a field validator, so a problem names queues[i].gpuLimit, not the whole queue entry
        quota = info.data.get("gpu_quota", -1)
        if limit == 0:
            raise invalid("gpuLimit 0 lets no GPU pod into the queue", "set gpuLimit >= 1, or -1 for no limit")
        if limit != -1 and quota != -1 and limit < quota:
            raise invalid(f"gpuLimit ({limit}) is below gpuQuota ({quota}): KAI never lends the queue its full "
                          "quota", "raise gpuLimit to at least gpuQuota, or -1 for no limit")
        return limit


class Substrate(Model):
    """Which in-cluster operators modelplane installs: each `true`, `false` (the cluster already
    runs it, e.g. an existing cert-manager) or `{enabled, version, values}` to pick the chart
    version and deep-merge Helm values over modelplane's (pins and values: catalog/substrate.yaml,
    render/addons.py; what each switch covers: api/substrate.py)."""

    dra_driver: Switch = Component()
    kai: Switch = Component()
    lws: Switch = Component()
    kserve: Switch = Component()
    keda: Switch = Component()
    cert_manager: Switch = Component()
    gateway: Switch = Component()       # Envoy Gateway + Envoy AI Gateway and the cluster's inference Gateway
    autoscaler: Switch = Component()    # EKS: the cluster autoscaler (GKE scales its node pools itself)
    endpoint_picker: EndpointPicker = EndpointPicker()   # the picker image of KServe's shared pools (render/picker.py)


class GatewayRef(Model):
    """A Gateway the cluster already runs (then set substrate.gateway: false)."""

    name: DnsSubdomain
    namespace: DnsLabel
    address_type: Literal["IPAddress", "Hostname"] = "IPAddress"


class IssuerRef(Model):
    """A cert-manager Issuer or ClusterIssuer that already exists on the cluster."""

    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    kind: Literal["ClusterIssuer", "Issuer"] = "ClusterIssuer"   # an Issuer lives in modelplane-gateway


LETS_ENCRYPT = ("https://acme-v02.api.letsencrypt.org/directory",
                "https://acme-staging-v02.api.letsencrypt.org/directory")
# Let's Encrypt refuses contacts at names reserved for documentation and testing (RFC 2606, RFC 6761):
# boulder's policy returns `invalidContact` for them (letsencrypt/boulder#3748).
_RESERVED_MAIL = re.compile(r"(^|\.)(example\.(com|net|org)|[^.]+\.(example|test|invalid|localhost|local))$|"
                            r"^(example|test|invalid|localhost|local)$")


class Route53Solver(Model):
    """DNS-01 in a Route 53 hosted zone, with the cluster's own AWS identity (EKS Pod Identity)."""

    hosted_zone_id: str = Field(pattern=r"^Z[A-Z0-9]{1,31}$")   # the zone that holds the hostnames
    region: AwsRegion = "us-east-1"   # the region cert-manager's AWS client signs for (Route 53 is global)


class CloudDnsSolver(Model):
    """DNS-01 in a Cloud DNS zone, with the cluster's own Google identity (GKE Workload Identity),
    allowed to edit that managed zone alone (review N9)."""

    project: GcpProject   # the project that holds the managed zone
    managed_zone: DnsLabel | None = None   # the managed zone's name (not its DNS name)

    @model_validator(mode="after")
    def _zone_named(self):
        if self.managed_zone is None:
            raise invalid("cloudDns needs managedZone: cert-manager's identity is bound to that zone alone, "
                          "not to every zone of the project (it could otherwise rewrite the service records)",
                          "add managedZone: <the name of the Cloud DNS managed zone that holds the hostnames> "
                          "(gcloud dns managed-zones list --project <project>)")
        return self


class Dns01(Model):
    """Solve ACME challenges with DNS records instead of HTTP: any cluster can answer, wildcards work."""

    route53: Route53Solver | None = None
    cloud_dns: CloudDnsSolver | None = None

    @model_validator(mode="after")
    def _one_zone(self):
        require_one(self, ("route53", "cloud_dns"), "dns01 needs exactly one of route53 or cloudDns",
                    "route53: {hostedZoneId: Z...} on an EKS cluster, or cloudDns: {project: ..., managedZone: ...} on a GKE cluster")
        return self


class Acme(Model):
    """An ACME account modelplane registers: a ClusterIssuer solving HTTP-01 through the Gateway, or
    DNS-01 in the stack's zone with the cluster's own cloud identity (`dns01`)."""

    email: str = Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")   # the account's contact
    server: str = LETS_ENCRYPT[0]     # the ACME directory URL
    dns01: Dns01 | None = None        # DNS-01 instead of HTTP-01 (required when DNS splits a name across clusters)

    @model_validator(mode="after")
    def _contact(self):
        domain = self.email.rsplit("@", 1)[1].lower()
        if self.server in LETS_ENCRYPT and _RESERVED_MAIL.search(domain):
            raise invalid(f"Let's Encrypt refuses the contact {self.email}: {domain} is reserved for documentation "
                          "(RFC 2606), so the account never registers and no certificate issues",
                          "use an address at a domain you receive mail for")
        return self

    @property
    def solver(self) -> str:
        return "dns01" if self.dns01 else "http01"


_HOSTNAME = r"^(\*\.)?([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,63}$"


class GatewayTls(Model):
    """HTTPS on the cluster's inference Gateway: a cert-manager Certificate for `hostnames`, HTTP
    requests redirected to HTTPS. Service hostnames routed to this cluster must be covered."""

    hostnames: list[Annotated[str, Field(pattern=_HOSTNAME)]] = Field(min_length=1)   # the certificate's names
    issuer_ref: IssuerRef | None = None   # sign with this existing issuer (one of issuerRef, acme)
    acme: Acme | None = None              # or let modelplane create an ACME ClusterIssuer (HTTP-01: no wildcards)

    @model_validator(mode="after")
    def _one_issuer(self):
        require_one(self, ("issuer_ref", "acme"), "exactly one of issuerRef, acme is required",
                    "name an existing issuer (issuerRef: {name: ...}) or give an ACME account (acme: {email: ...})")
        wild = [h for h in self.hostnames if h.startswith("*.")]
        if self.acme is not None and self.acme.dns01 is None and wild:
            raise invalid(f"ACME HTTP-01 cannot issue wildcard names ({', '.join(wild)})",
                          "list each service hostname, or solve DNS-01: acme.dns01: {route53: {hostedZoneId: ...}}")
        return self

    def covers(self, host: str) -> bool:
        return tls_covers(self.hostnames, host)


def tls_covers(hostnames: list[str], host: str) -> bool:
    """Whether a certificate for `hostnames` is valid for `host` (a wildcard covers one label)."""
    return any(h == host or (h.startswith("*.") and "." in host and host.split(".", 1)[1] == h[2:]) for h in hostnames)


def https_problems(service: str, host: str | None, gateways: dict[str, dict]) -> list[str]:
    """A service hostname served in cleartext, or on an HTTPS listener whose certificate does not
    cover it, on any of `gateways` (cluster -> the inventory's gateway)."""
    if not host:
        return []
    out = []
    for cluster, gw in sorted(gateways.items()):
        tls = (gw or {}).get("tls")
        if tls is None:
            out.append(f"service {service} is served over plain HTTP on cluster {cluster} ({host})")
        elif not tls_covers(tls["hostnames"], host):
            out.append(f"service {service}: the HTTPS certificate on cluster {cluster} does not cover {host} "
                       f"(it covers {', '.join(tls['hostnames'])})")
    return out


def issuance_problems(host: str | None, gateways: dict[str, dict]) -> dict[str, str]:
    """cluster -> why its certificate for `host` cannot issue: ACME HTTP-01 on a name that weighted DNS
    also sends to another cluster. cert-manager answers the challenge only on the cluster that holds
    it (cert-manager@v1.21.1 pkg/issuer/acme/http/httproute.go), and Let's Encrypt checks from
    several vantage points, each resolving the name itself, so most checks land elsewhere and fail.
    `gateways`: every cluster that carries the host -> the inventory's gateway."""
    if not host or len(gateways) < 2:
        return {}
    out = {}
    for cluster, gw in sorted(gateways.items()):
        if proves_by_http01(host, gw):
            others = ", ".join(c for c in sorted(gateways) if c != cluster)
            out[cluster] = (f"the certificate for {host} on cluster {cluster} cannot issue: ACME HTTP-01 is answered "
                            f"only by the cluster that holds the challenge, and DNS also sends {host} to {others}")
    return out


def proves_by_http01(host: str | None, gw: dict | None) -> bool:
    """Whether this Gateway's certificate for `host` issues over ACME HTTP-01: Let's Encrypt then
    fetches the challenge from whatever `host` resolves to, so its DNS record must exist first."""
    tls = (gw or {}).get("tls") or {}
    return bool(host) and tls.get("acme") == "http01" and tls_covers(tls.get("hostnames") or [], host)


def external_issuer(gw: dict | None) -> str | None:
    """The issuer a cluster's certificate names but modelplane does not create (it must exist)."""
    ref = ((gw or {}).get("tls") or {}).get("issuerRef")
    return f"{ref.get('kind', 'ClusterIssuer')} {ref['name']}" if ref else None


class InferenceCluster(Model):
    """A GKE or EKS cluster modelplane builds, or an existing one it adopts, with its GPU pools."""

    name: Name                         # the cluster's name in the fleet (placements refer to it)
    labels: Labels = {}                # facts deployments select on (clusterSelector.matchLabels)
    gke: Gke | None = None             # build a GKE cluster (exactly one of gke, eks, existing)
    eks: Eks | None = None             # build an EKS cluster
    existing: Existing | None = None   # use a cluster that already exists (kubeconfig in a secret key)
    dra: bool = True                   # GPUs through Dynamic Resource Allocation (Kubernetes >= 1.34)
    scheduler: Literal["kai"] = "kai"  # the in-cluster gang scheduler
    node_pools: list[NodePool] = Field(min_length=1)   # the GPU pools
    queues: list[Queue] = []           # KAI queues, one per team namespace
    substrate: Substrate = Substrate()   # which in-cluster components modelplane installs
    gateway_ref: GatewayRef | None = None   # serve through an existing Gateway instead of our own
    tls: GatewayTls | None = None      # HTTPS on modelplane's Gateway (cert-manager), HTTP redirected

    @model_validator(mode="after")
    def _tls_needs_our_gateway(self):
        if self.tls is not None and (not self.substrate.gateway or self.gateway_ref is not None
                                     or not self.substrate.cert_manager):
            raise invalid("tls configures modelplane's own Gateway and needs its cert-manager",
                          "keep substrate.gateway and substrate.certManager on, or terminate TLS on your own Gateway")
        return self

    @model_validator(mode="after")
    def _dns01_identity(self):
        dns01 = self.tls.acme.dns01 if self.tls and self.tls.acme else None
        if dns01 is None:
            return self
        # cert-manager answers DNS-01 with the cluster's own cloud identity: EKS Pod Identity for Route 53,
        # GKE Workload Identity for Cloud DNS; another cloud's zone would need long-lived keys.
        wanted = "eks" if dns01.route53 else "gke"
        if self.source != wanted:
            zone = "route53" if dns01.route53 else "cloudDns"
            raise invalid(f"tls.acme.dns01.{zone} needs a{'n' if wanted == 'eks' else ''} {wanted.upper()} cluster "
                          f"(cert-manager uses the cluster's own cloud identity), this one is {self.source}",
                          "solve DNS-01 in the cloud the cluster runs in, or name your own issuer with tls.issuerRef")
        return self

    @model_validator(mode="after")
    def _one_source(self):
        given = [k for k in ("gke", "eks", "existing") if getattr(self, k) is not None]
        if len(given) != 1:
            raise invalid(f"exactly one of gke, eks, existing is required, found {given or 'none'}",
                          "keep one block that says where the cluster comes from")
        return self

    @property
    def source(self) -> str:
        return "gke" if self.gke else "eks" if self.eks else "existing"

    @property
    def cloud(self) -> str:
        return "gcp" if self.gke else "aws" if self.eks else self.existing.cloud

    @property
    def region(self) -> str:
        return (self.gke or self.eks or self.existing).region

    @property
    def version(self) -> str | None:
        return (self.gke or self.eks or self.existing).version

    def queue_names(self) -> list[str]:
        return sorted(q.namespace for q in self.queues)

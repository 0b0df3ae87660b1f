"""ModelService, InferenceProvider and the DNS layer: one stable endpoint per service, weighted
across deployments (wherever they were placed) and external providers (routing-only targets)."""
from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from .base import Model, Name, Namespace, invalid, require_one
from .deployment import ClusterSelector, KeyRef

_HOSTNAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$")
# Envoy Gateway's credential injection reads the header value from this key of the Secret.
CREDENTIAL_KEY = "credential"


def _hostname(value: str | None) -> str | None:
    if value is not None and (len(value) > 253 or not _HOSTNAME.match(value)):
        raise invalid(f"{value!r} is not a DNS name", "use a lowercase name such as chat.inference.example.com")
    return value


class Endpoint(Model):
    """One weighted target of a service: a ModelDeployment or a provider, never both."""

    deployment: str | None = None   # "name" in the service's namespace, or "namespace/name"
    provider: str | None = None     # a modelplane:providers entry
    weight: int = Field(default=1, ge=1, le=1000)
    # A provider that takes the service's requests only when no replica can (Envoy AI Gateway's
    # backendRef priority 1, retried there on a failure: render/routing.py fallback_objects). It
    # carries no weighted share; list the provider again with a weight for both.
    fallback: bool | None = None   # true: takes the requests only when no replica can (no weighted share)

    @model_validator(mode="after")
    def _one_target(self):
        require_one(self, ("deployment", "provider"), "an endpoint names exactly one of deployment or provider",
                    "write {deployment: <name>, weight: N} or {provider: <name>, weight: N}")
        if self.fallback and self.provider is None:
            raise invalid("fallback: true is for a provider endpoint (a deployment's replicas are the primary)",
                          "write {provider: <name>, fallback: true}")
        if self.fallback and self.weight != 1:
            raise invalid("a fallback endpoint takes no weighted share, so it has no weight",
                          "drop its weight, or list the provider a second time with a weight for a share as well")
        return self

    def key(self, namespace: str) -> str:
        """The deployment's "namespace/name", or the provider's name."""
        if self.provider is not None:
            return self.provider
        return self.deployment if "/" in self.deployment else f"{namespace}/{self.deployment}"


class ModelService(Model):
    name: Name
    namespace: Namespace
    hostname: str | None = None      # what clients call (HTTPRoute hostnames, DNS record)
    # The model name clients send; requests pass through unchanged, so every endpoint answers to
    # it (deployments serve it as an alias; a provider must be that model). Default: the
    # providers' model, else the service's name.
    model: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._/:-]*$")
    labels: dict[str, str] = {}      # e.g. modelplane.ai/residency: eu (checked against the endpoints)
    cluster_selector: ClusterSelector = ClusterSelector()   # where provider-only traffic enters
    endpoints: list[Endpoint] = Field(min_length=1)

    _host = field_validator("hostname")(lambda cls, v: _hostname(v))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class ApiKey(Model):
    """How the gateway authenticates to a provider; the key never appears in clear."""

    secret: str | None = Field(default=None, pattern=r"^[A-Za-z][A-Za-z0-9_-]*$")   # a secret stack config key
    secret_key_ref: KeyRef | None = None     # a Secret in the service's namespace holding the header value
    header: str = "Authorization"
    scheme: str = "Bearer"                   # prefix of the header value ("" for raw keys)

    @model_validator(mode="after")
    def _one_source(self):
        require_one(self, ("secret", "secret_key_ref"), "apiKey needs exactly one of secret or secretKeyRef",
                    "secret: <config key> (pulumi config set --secret modelplane:<key> ...) or "
                    "secretKeyRef: {name: <Secret>, key: credential}")
        if self.secret_key_ref is not None and self.secret_key_ref.key != CREDENTIAL_KEY:
            raise invalid(f"the gateway reads the header value from key {CREDENTIAL_KEY!r} of the Secret, not "
                          f"{self.secret_key_ref.key!r}", f"store the full header value (e.g. 'Bearer sk-...') under "
                          f"key {CREDENTIAL_KEY!r}, or use secret: <config key> and let modelplane build the Secret")
        return self


class Provider(Model):
    """An external OpenAI-compatible endpoint: a routing-only target, never placed."""

    name: Name
    url: str
    model: str | None = None                 # the provider's name of the model
    api_key: ApiKey | None = None
    labels: dict[str, str] = {}              # e.g. modelplane.ai/residency: us

    @field_validator("url")
    @classmethod
    def _https(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise invalid(f"{url!r} is not an https URL", "providers are reached over TLS: use https://host/v1")
        _hostname(parts.hostname)
        return url

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or 443

    @property
    def base_path(self) -> str:
        """The path OpenAI-style requests go under (clients call /v1/...)."""
        return urlsplit(self.url).path.rstrip("/") or "/v1"


class Route53Zone(Model):
    zone_id: str
    domain: str

    _domain = field_validator("domain")(lambda cls, v: _hostname(v))


class CloudDnsZone(Model):
    project: str
    managed_zone: str
    domain: str

    _domain = field_validator("domain")(lambda cls, v: _hostname(v))


class Dns(Model):
    """Weighted DNS records, one per cluster gateway, for every service with a hostname."""

    route53: Route53Zone | None = None
    cloud_dns: CloudDnsZone | None = None
    ttl: int = Field(default=60, ge=5, le=86400)
    # When a cluster leaves a service, wait the TTL between deleting its record and its routes
    # (render/drain.py); false: they go seconds apart.
    drain: bool = True

    @model_validator(mode="after")
    def _one_zone(self):
        require_one(self, ("route53", "cloud_dns"), "dns needs exactly one of route53 or cloudDns",
                    "route53: {zoneId: Z..., domain: ...} or cloudDns: {project, managedZone, domain}")
        return self

    @property
    def zone(self) -> Route53Zone | CloudDnsZone:
        return self.route53 or self.cloud_dns

    @property
    def kind(self) -> Literal["route53", "cloudDns"]:
        return "route53" if self.route53 else "cloudDns"

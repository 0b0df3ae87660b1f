"""Kubernetes, cloud and OCI syntax, checked as the API servers and registries check it.

Each check returns None or (message, fix); `annotated()` turns one into a pydantic field type.
"""
from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from .base import invalid

# k8s.io/apimachinery/pkg/util/validation: qualified names, label values, DNS-1123 subdomains.
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")


def _quoted(value: str) -> str:
    from .errors import shown

    return shown(value)


def qualified_name(key: str, what: str = "label key"):
    """A label, annotation or taint key: [DNS-subdomain prefix '/'] name of <= 63 characters."""
    prefix, _, name = key.rpartition("/")
    example = "use e.g. 'modelplane.ai/tier' or 'tier'"
    if "/" in key and not prefix:
        return f"{what} {_quoted(key)} has an empty prefix before '/'", example
    if prefix and (len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix)):
        return (f"{what} {_quoted(key)}: the prefix must be a DNS subdomain (lowercase letters, digits, '-' "
                f"and '.', at most 253 characters)", example)
    if not name or len(name) > 63 or not _NAME.fullmatch(name):
        return (f"{what} {_quoted(key)}: the name part must be 1-63 characters of letters, digits, '-', '_' "
                f"and '.', starting and ending with a letter or digit", example)
    return None


def label_value(value: str, what: str = "label value"):
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        return (f"{what} {_quoted(value)} is not a valid Kubernetes label value (at most 63 letters, digits, "
                f"'-', '_' and '.', starting and ending with a letter or digit)", "shorten or simplify the value")
    return None


def labels_problem(labels: dict[str, str], reserved=()) -> tuple[str, str] | None:
    for key, value in labels.items():
        found = qualified_name(key) or label_value(value, f"value of label {key!r}")
        if found:
            return found
        if key in reserved or any(key.startswith(p) for p in reserved if p.endswith("/")):
            return (f"label {key!r} is set by modelplane (or Kubernetes) itself; scheduling relies on its value",
                    "remove it, or use a label of your own prefix")
    return None


def _labels(reserved=()):
    def check(labels: dict[str, str]) -> dict[str, str]:
        found = labels_problem(labels, reserved)
        if found:
            raise invalid(*found)
        return labels
    return AfterValidator(check)


def _check(fn):
    def check(value):
        found = fn(value)
        if found:
            raise invalid(*found)
        return value
    return AfterValidator(check)


# Labels the renderers put on nodes and pods; a user label with the same key would override them.
RESERVED_NODE_LABELS = ("modelplane.ai/pool", "nvidia.com/gpu.present", "kubernetes.io/", "k8s.io/")

Labels = Annotated[dict[str, str], _labels()]
NodeLabels = Annotated[dict[str, str], _labels(RESERVED_NODE_LABELS)]
TaintKey = Annotated[str, _check(lambda k: qualified_name(k, "taint key"))]
TaintValue = Annotated[str, _check(lambda v: label_value(v, "taint value"))]


def dns_subdomain(value: str, what: str = "name"):
    if len(value) > 253 or not _SUBDOMAIN.fullmatch(value):
        return (f"{what} {_quoted(value)} is not a DNS subdomain (lowercase letters, digits, '-' and '.', at most "
                f"253 characters)", "use a name such as 'inference' or 'gw.example'")
    return None


def dns_label(value: str, what: str = "name"):
    if len(value) > 63 or not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", value):
        return (f"{what} {_quoted(value)} is not a DNS label (lowercase letters, digits and '-', at most 63 "
                f"characters)", "use a name such as 'gateway-system'")
    return None


DnsSubdomain = Annotated[str, _check(dns_subdomain)]
DnsLabel = Annotated[str, _check(dns_label)]


# Cloud identifiers: shapes from the clouds' naming rules; they end up in resource names and kubeconfigs.
def _shape(pattern: str, what: str, example: str):
    compiled = re.compile(pattern)

    def check(value: str):
        if not compiled.fullmatch(value):
            return f"{_quoted(value)} is not {what}", f"use {example}"
        return None
    return _check(check)


GcpRegion = Annotated[str, _shape(r"[a-z]+(-[a-z]+)+[0-9]+", "a GCP region", "a region such as us-central1")]
# A zone of either cloud (us-central1-a, us-east-1a); which cloud's zones a pool takes is a rule (pool-zones).
Zone = Annotated[str, _shape(r"[a-z]+(-[a-z]+)+[0-9]+-[a-z]|[a-z]{2}(-[a-z]+)+-[0-9]+[a-z]", "a zone",
                             "a zone such as us-central1-a")]
GcpProject = Annotated[str, _shape(r"([a-z0-9.-]+:)?[a-z][a-z0-9-]{0,28}[a-z0-9]?", "a GCP project id",
                                   "the project id (lowercase letters, digits and '-'), e.g. my-project-123")]
GcpName = Annotated[str, _shape(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", "a GCP resource name",
                                "lowercase letters, digits and '-', e.g. default")]
AwsRegion = Annotated[str, _shape(r"[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+", "an AWS region",
                                  "a region such as us-east-1")]
SubnetId = Annotated[str, _shape(r"subnet-[0-9a-f]{1,17}", "an EC2 subnet id",
                                 "the subnet's id, e.g. subnet-0123456789abcdef0 (not an Availability Zone)")]
IamArn = Annotated[str, _shape(r"arn:aws[a-z-]*:(iam|sts)::[0-9]{12}:[A-Za-z0-9+=,.@_/-]+", "an IAM role or user ARN",
                               "an ARN such as arn:aws:iam::123456789012:role/admin")]
MachineType = Annotated[str, _shape(r"[a-z0-9][a-z0-9.-]{0,62}", "a machine or instance type",
                                    "a type such as e2-standard-4 or m6i.xlarge")]
Region = Annotated[str, _shape(r"[a-z0-9][a-z0-9-]{0,62}", "a region name",
                               "lowercase letters, digits and '-', e.g. fra1")]


# The OCI distribution reference grammar (distribution/reference/regexp.go), anchored.
_ALNUM = r"[a-z0-9]+"
_SEP = r"(?:[._]|__|[-]+)"
_COMPONENT = rf"{_ALNUM}(?:{_SEP}{_ALNUM})*"
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*|\[(?:[a-fA-F0-9:]+)\])"
_DOMAIN = rf"{_HOST}(?::[0-9]+)?"
_NAME_RE = rf"(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*"
_REFERENCE = re.compile(rf"(?P<name>{_NAME_RE})(?::(?P<tag>[\w][\w.-]{{0,127}}))?"
                        rf"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{{32,}}))?")


def image_problem(image: str):
    """None if `image` is a valid OCI reference, else (message, fix)."""
    fix = "write registry/repository:tag or @sha256:<digest>, e.g. vllm/vllm-openai:v0.10.2"
    if not image:
        return "the image is empty", fix
    if any(c.isspace() for c in image):
        return f"image {_quoted(image)} contains whitespace", "remove it; engine flags go in engine.args"
    if image.startswith("-"):
        return f"image {_quoted(image)} starts with '-'", "name an image; engine flags go in engine.args"
    match = _REFERENCE.fullmatch(image)
    if match is None:
        return f"image {_quoted(image)} is not a valid OCI image reference", fix
    if len(match["name"]) > 255:
        return "the image's repository name is longer than 255 characters", fix
    return None


# Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource), the forms people write.
Quantity = Annotated[str, _shape(r"[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?", "a Kubernetes quantity",
                                 "a quantity such as 500m or 2 (CPU), 2Gi (memory)")]
HttpPath = Annotated[str, _shape(r"/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*", "an HTTP path", "a path such as /health")]
HttpUrl = Annotated[str, _shape(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?",
                                "an http(s) URL", "a URL such as http://prometheus.monitoring:9090")]
Decimal = Annotated[str, _shape(r"[0-9]+(\.[0-9]+)?", "a decimal number", "a number in quotes, such as \"50\"")]
SecretKey = Annotated[str, _shape(r"[-._a-zA-Z0-9]{1,253}", "a Secret or ConfigMap key",
                                  "letters, digits, '-', '_' and '.', e.g. token")]


def _no_credentials(value: str) -> str:
    from .secrets import secret_kind

    kind = secret_kind(value)
    if kind:
        raise invalid(f"holds a credential ({kind}) in plain text (not shown)",
                      "remove it; credentials go in secret config keys (model.tokenSecret) or Secrets")
    return value


NoCredentials = AfterValidator(_no_credentials)

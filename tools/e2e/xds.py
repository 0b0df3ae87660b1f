"""The Envoy configuration Envoy Gateway serves one Gateway's proxy, read over xDS as the proxy would.

The Gateway's Envoy pods are KWOK's, so no Envoy ever connects; `xds-dump` (our ADS client,
mods/xds-dump) asks in its place, with the proxy's node cluster (the `--service-cluster` argument
Envoy Gateway gives its Envoy container, v1.8.1 internal/infrastructure/common/proxy_args.go L69)
and the cluster CA's admin pair (Envoy Gateway's xDS server asks for a client certificate signed by
the CA in its /certs, internal/crypto/cert_load.go L38-51: ours, tools/e2e/operators.py `_certs`).
"""
from __future__ import annotations

import json
import subprocess

import build

EG_NS = "envoy-gateway-system"


def service_cluster(c, gateway_ns: str, gateway: str) -> str:
    """The `--service-cluster` of the Envoy Deployment Envoy Gateway made for a Gateway."""
    deps = c.get("deployments", "-n", EG_NS, "-l", f"gateway.envoyproxy.io/owning-gateway-namespace={gateway_ns},"
                 f"gateway.envoyproxy.io/owning-gateway-name={gateway}")["items"]
    if len(deps) != 1:
        raise RuntimeError(f"{len(deps)} Envoy deployments for Gateway {gateway_ns}/{gateway}")
    for container in deps[0]["spec"]["template"]["spec"]["containers"]:
        args = container.get("args", [])
        if "--service-cluster" in args:
            return args[args.index("--service-cluster") + 1]
    raise RuntimeError(f"no --service-cluster on the Envoy deployment of {gateway_ns}/{gateway}")


def dump(c, gateway_ns: str, gateway: str) -> dict:
    """{"listeners": [...], "routes": [...], "clusters": [...]} as protojson dicts."""
    exe = build.binary("xds-dump")
    if exe is None:
        raise RuntimeError("xds-dump is not built (python tools/e2e/build.py xds-dump)")
    pki = c.dir / "pki"
    out = subprocess.run([str(exe), "-ca", str(pki / "ca.crt"), "-cert", str(pki / "admin.crt"),
                          "-key", str(pki / "admin.key"), "-cluster", service_cluster(c, gateway_ns, gateway)],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return json.loads(out.stdout)


def virtual_host(d: dict, domain: str) -> dict:
    """The one virtual host answering `domain` (any port), across the route configurations."""
    hosts = [vh for rc in d["routes"] for vh in rc.get("virtualHosts", [])
             if any(x.split(":")[0] == domain for x in vh.get("domains", []))]
    if len(hosts) != 1:
        raise AssertionError(f"{len(hosts)} virtual hosts answer {domain}: {[h.get('name') for h in hosts]}")
    return hosts[0]


def header_value(route: dict, header: str) -> str | None:
    """The exact value a route's match requires of `header`, if it matches on it."""
    for h in route.get("match", {}).get("headers", []):
        if h.get("name") == header:
            sm = h.get("stringMatch", {})
            return sm.get("exact", h.get("exactMatch"))
    return None


def cluster(d: dict, name: str) -> dict:
    found = [x for x in d["clusters"] if x.get("name") == name]
    if len(found) != 1:
        raise AssertionError(f"{len(found)} clusters named {name}")
    return found[0]


def endpoint_hosts_by_priority(cl: dict) -> dict[int, list[str]]:
    """priority -> the endpoints' addresses (host:port) of a cluster's inline load assignment."""
    out: dict[int, list[str]] = {}
    for group in cl.get("loadAssignment", {}).get("endpoints", []):
        for lb in group.get("lbEndpoints", []):
            sock = lb.get("endpoint", {}).get("address", {}).get("socketAddress", {})
            out.setdefault(int(group.get("priority", 0)), []).append(f"{sock.get('address')}:{sock.get('portValue')}")
    return out


def matches(d: dict) -> list[tuple[tuple[str, ...], str, tuple[str, ...]]]:
    """Every route match served: (its virtual host's domains, its path or prefix, its header names)."""
    out = []
    for rc in d["routes"]:
        for vh in rc.get("virtualHosts", []):
            for r in vh.get("routes", []):
                m = r.get("match", {})
                path = m.get("prefix", m.get("path", m.get("pathSeparatedPrefix", m.get("safeRegex", {}).get("regex", ""))))
                out.append((tuple(vh.get("domains", [])), path, tuple(h.get("name", "").lower() for h in m.get("headers", []))))
    return out

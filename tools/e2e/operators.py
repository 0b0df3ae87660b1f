"""The operators' controllers, run as processes beside a loopback cluster (tools/e2e/operators.md).

Each entry starts only if tools/e2e/build.py built it; what could not start is recorded with why.
Before any controller: the namespaces their charts would have created (modelplane's stack marks
these components `preinstalled`, so its objects land in them).
"""
from __future__ import annotations

NAMESPACES = ("kserve", "envoy-gateway-system", "envoy-ai-gateway-system", "cert-manager", "lws-system",
              "kai-scheduler", "keda", "dra-driver-nvidia-gpu")


def _namespace(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


CONTROLLERS: dict = {}      # name -> (start(cluster) -> None, stop(cluster) -> None); filled below


def start_all(clusters: dict, report) -> dict:
    out = {}
    for c in clusters.values():
        c.apply([_namespace(n) for n in NAMESPACES])
    for name, (start, _stop) in CONTROLLERS.items():
        try:
            for c in clusters.values():
                start(c)
            out[name] = {"running": True}
        except Exception as exc:      # recorded, never hidden: the report names it and why
            out[name] = {"running": False, "error": str(exc)}
    return out


def stop_all(cluster) -> None:
    from cluster import stop
    for name in CONTROLLERS:
        stop(cluster, name)

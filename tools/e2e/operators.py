"""What a loopback cluster needs before modelplane's first `up`, besides CRDs: the namespaces the
operators' charts would have created (the e2e infra stack marks those components `preinstalled`,
so modelplane's objects land in them).

The operators' controllers themselves are not started yet: tools/e2e/operators.md says how each
runs as a process and why KServe's services cannot become Ready without the gateway controllers.
"""
from __future__ import annotations

NAMESPACES = ("kserve", "envoy-gateway-system", "envoy-ai-gateway-system", "cert-manager", "lws-system",
              "kai-scheduler", "keda", "dra-driver-nvidia-gpu")


def prepare(cluster) -> None:
    cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in NAMESPACES])

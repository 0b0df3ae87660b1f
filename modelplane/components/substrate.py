"""In-cluster substrate: the operators (pinned in catalog/substrate.yaml) and our own objects.

Helm choice per operator:
- NVIDIA DRA driver, KAI scheduler, KServe: `helm.v3.Release`. Their charts ship CRDs that must
  be upgraded in place and rely on Helm hooks (webhook certificates, pre-upgrade jobs), which
  only a real Helm release runs.
- LeaderWorkerSet, KEDA: `helm.v4.Chart`. Plain manifests without hooks, so every object becomes
  its own Pulumi resource that transforms and the policy pack can see.
"""
from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from ..api import InferenceCluster
from ..render import namespace, priority_class, queues
from .k8s import register


def _release(name: str, spec: dict, values: dict, opts) -> pulumi.Resource:
    return k8s.helm.v3.Release(name, chart=spec["chart"], version=str(spec["version"]),
                               repository_opts={"repo": spec["repository"]} if not spec["repository"].startswith("oci://") else None,
                               namespace=spec["namespace"], create_namespace=True, atomic=True,
                               cleanup_on_fail=True, values=values, opts=opts)


def _chart(name: str, spec: dict, values: dict, opts) -> pulumi.Resource:
    oci = spec["repository"].startswith("oci://")
    return k8s.helm.v4.Chart(name, chart=f"{spec['repository']}/{spec['chart']}" if oci else spec["chart"],
                             version=str(spec["version"]), namespace=spec["namespace"],
                             repository_opts=None if oci else {"repo": spec["repository"]},
                             values=values, opts=opts)


def install(c: InferenceCluster, versions: dict, team_namespaces: list[str], opts: pulumi.ResourceOptions) -> list:
    """Install the toggled operators, then namespaces, the PriorityClass and KAI queues."""
    s, ready = c.substrate, []
    if s.dra_driver and c.dra:
        driver_root = "/home/kubernetes/bin/nvidia" if c.source == "gke" else "/"
        ready.append(_release(f"{c.name}-dra-driver", versions["draDriver"],
                              {"nvidiaDriverRoot": driver_root, "resources": {"gpus": {"enabled": True}}}, opts))
    if s.kai:
        ready.append(_release(f"{c.name}-kai", versions["kai"], {}, opts))
    if s.lws:
        ready.append(_chart(f"{c.name}-lws", versions["lws"], {}, opts))
    if s.kserve:
        crds = _release(f"{c.name}-kserve-crd", {**versions["kserve"], "chart": versions["kserve"]["crdChart"]}, {}, opts)
        ready.append(crds)
        ready.append(_release(f"{c.name}-kserve", versions["kserve"], {},
                              pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[crds]))))
    if s.keda:
        ready.append(_chart(f"{c.name}-keda", versions["keda"], {}, opts))
    after = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=list(ready)))
    objs = [namespace(ns) for ns in sorted(set(team_namespaces))]
    if s.kai:
        objs.append(priority_class())
        objs += queues([q.model_dump(by_alias=True) for q in c.queues])
    created = [register(c.name, obj, after) for obj in objs]
    return ready + created

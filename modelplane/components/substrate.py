"""In-cluster substrate: the operators (pinned in catalog/substrate.yaml) and our own objects.

Helm choice per operator:
- NVIDIA DRA driver, KAI scheduler, KServe: `helm.v3.Release`. Their charts ship CRDs that must
  be upgraded in place and rely on Helm hooks (webhook certificates, pre-upgrade jobs), which
  only a real Helm release runs.
- LeaderWorkerSet, KEDA: `helm.v4.Chart`. Plain manifests without hooks, so every object becomes
  its own Pulumi resource that transforms and the policy pack can see.
- Gateway API and Inference Extension CRDs (KServe needs both): `yaml.v2.ConfigFile` of the
  upstream release manifests, applied before KServe.
"""
from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from ..api import InferenceCluster
from ..render import namespace, priority_class, queues
from .k8s import register


def chart_ref(spec: dict) -> tuple[str, dict | None]:
    """(chart, repository_opts): an OCI chart is addressed by its full reference, others by repo."""
    if spec["repository"].startswith("oci://"):
        return f"{spec['repository']}/{spec['chart']}", None
    return spec["chart"], {"repo": spec["repository"]}


def _release(name: str, spec: dict, values: dict, opts) -> pulumi.Resource:
    chart, repo = chart_ref(spec)
    return k8s.helm.v3.Release(name, chart=chart, version=str(spec["version"]), repository_opts=repo,
                               namespace=spec["namespace"], create_namespace=True, atomic=True,
                               cleanup_on_fail=True, values=values, opts=opts)


def _chart(name: str, spec: dict, values: dict, opts) -> pulumi.Resource:
    chart, repo = chart_ref(spec)
    return k8s.helm.v4.Chart(name, chart=chart, version=str(spec["version"]), namespace=spec["namespace"],
                             repository_opts=repo, values=values, opts=opts)


def install(c: InferenceCluster, versions: dict, team_namespaces: list[str], opts: pulumi.ResourceOptions) -> list:
    """Install the toggled operators, then namespaces, the PriorityClass and KAI queues."""
    s, ready = c.substrate, []
    if s.dra_driver and c.dra:
        driver_root = "/home/kubernetes/bin/nvidia" if c.source == "gke" else "/"
        # GPU allocation through DRA is opt-in in the 25.x charts (the override acknowledges it).
        ready.append(_release(f"{c.name}-dra-driver", versions["draDriver"],
                              {"nvidiaDriverRoot": driver_root, "resources": {"gpus": {"enabled": True}},
                               "gpuResourcesEnabledOverride": True}, opts))
    if s.kai:
        ready.append(_release(f"{c.name}-kai", versions["kai"], {}, opts))
    if s.lws:
        ready.append(_chart(f"{c.name}-lws", versions["lws"], {}, opts))
    if s.kserve:
        kserve = versions["kserve"]
        apis = [k8s.yaml.v2.ConfigFile(f"{c.name}-{key}", file=kserve[url], opts=opts)
                for key, url in (("gateway-api", "gatewayApi"), ("inference-extension", "inferenceExtension"))]
        ready += apis
        crds = _release(f"{c.name}-kserve-crd", {**kserve, "chart": kserve["crdChart"]}, {},
                        pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=apis)))
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

"""What a cluster's substrate is made of, in which order, with which values (pure).

One `Addon` per Helm release, upstream manifest file or group of our own objects. `after`
names the addons that must be ready first ("system" is the cluster's system node pool); the
component registers them in that order with those dependencies. Versions and chart coordinates
come from catalog/substrate.yaml; the reasons and sources are in docs/runtime.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from . import gpudirect as gd
from . import presets
from ..api.substrate import SWITCH_OF, deep_merge
from .names import MANAGED_BY, meta
from .substrate import namespace

SYSTEM = "system"
GATEWAY_CLASS = "envoy"
GATEWAY_NAMESPACE = "modelplane-gateway"
GATEWAY_NAME = "inference"
ENVOY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
ENVOY_NAMESPACE = "envoy-gateway-system"     # the envoyGateway release's namespace; its proxies run here
# The hop Gateway: where a pool's weighted share of a shared cluster goes to reach its own rule
# (render/routing.py). Its Envoy has a ClusterIP Service only, so no client outside the cluster reaches
# it, and its routes never send anything back to the hop, so nothing can loop.
HOP_GATEWAY = "inference-hop"
HOP_SERVICE = "modelplane-hop"
HOP_PORT = 80
# KServe's managed routes (render/kserve.py `router`) attach to a listener of the hop Gateway of their
# own, under a Host no request through the inference Gateway carries (the service routes keep the
# client's Host, AI Gateway sets its Backend's), so none of the hop's traffic can reach them.
KSERVE_LISTENER = "kserve"
KSERVE_HOST = "kserve.modelplane.internal"
# Envoy Gateway v1.8.1 binds a listener on a privileged port 10000 higher in the proxy container
# (internal/gatewayapi/listener.go, wellKnownPortShift in translator.go).
ENVOY_HTTP_CONTAINER_PORT = 80 + 10000
AI_GATEWAY_SERVICE = "ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local"
KSERVE_WEBHOOK_SERVICE = "llmisvc-webhook-server-service"
GKE_DRIVER_ROOT = "/home/kubernetes/bin/nvidia"     # where Google's COS installer puts the driver
TOLERATE_ALL = [{"operator": "Exists"}]             # node agents run on every (tainted) GPU node


@dataclass(frozen=True)
class Addon:
    name: str                            # Helm release name; unique per cluster
    kind: str                            # release | manifests | objects | gate
    why: str
    after: tuple[str, ...] = (SYSTEM,)
    key: str | None = None               # entry of catalog/substrate.yaml (release, manifests)
    values: dict = field(default_factory=dict, compare=False)
    skip_crds: bool = False
    objects: tuple = ()                  # kind objects: Kubernetes dicts we render ourselves
    wait_for: str = ""                   # kind gate: a pulumi.com/waitFor expression on `objects[0]`
    version: str = ""                    # kind release: the chart version (pinned, or the stack's override)
    switch: str = ""                     # kind gate: the substrate switch whose install it waits for


@dataclass(frozen=True)
class ClusterFacts:
    """What the addon plan needs to know of a cluster (plain data)."""

    name: str
    source: str                          # gke | eks | existing
    region: str
    dra: bool                            # GPUs claimed through the NVIDIA DRA driver
    toggles: dict                        # substrate toggles (camelCase keys as in the stack file)
    efa: bool = False                    # some pool attaches EFA interfaces
    driver_root: str = "/"               # existing clusters: where the host's NVIDIA driver lives
    latest_driver: bool = False          # GKE DRA: some pool's GPU needs GKE's LATEST driver (H200, B200)
    gpudirect_installers: tuple[tuple[str, str], ...] = ()   # GKE: (tcpx | tcpxo, substrate key of its installer)
    plugin_installers: tuple[str, ...] = ()   # substrate keys of NCCL net plugin installers (GKE gIB)
    gpu_nics: int = 0                    # GKE: GPUDirect VPCs (Network objects vpc1..vpcN)
    tls: dict | None = None              # the cluster's GatewayTls (camelCase), when HTTPS is on
    dns01_account: str = ""              # GKE: the Google service account cert-manager uses for DNS-01
    overrides: dict = field(default_factory=dict)   # substrate.yaml key -> {version, values} from the stack
    compute_domains: bool = False        # some pool is one multi-node NVLink domain (DRA ComputeDomains)
    preinstalled: frozenset = frozenset()   # switches the cluster's owners installed: no release, no gate


def is_own_gateway(gateway: dict | None) -> bool:
    """Whether a cluster's inference Gateway is the one modelplane installs (not a gatewayRef)."""
    return bool(gateway) and (gateway["name"], gateway["namespace"]) == (GATEWAY_NAME, GATEWAY_NAMESPACE)


def _on(facts: ClusterFacts, key: str) -> bool:
    return facts.toggles.get(key, True)


def envoy_gateway_values() -> dict:
    """Envoy Gateway with the Backend API (external providers) and Envoy AI Gateway as extension
    server, which is what routes to InferencePools (envoyproxy/ai-gateway v1.0.0
    manifests/envoy-gateway-values.yaml and examples/inference-pool/envoy-gateway-values-addon.yaml)."""
    hooks = {kind: {"includeAll": True} for kind in ("listener", "route", "cluster", "secret")}
    return {"config": {"envoyGateway": {
        "gateway": {"controllerName": ENVOY_CONTROLLER},
        "provider": {"type": "Kubernetes"},
        "extensionApis": {"enableEnvoyPatchPolicy": True, "enableBackend": True},
        "extensionManager": {
            "hooks": {"xdsTranslator": {"translation": hooks, "post": ["Translation", "Cluster", "Route"]}},
            "service": {"fqdn": {"hostname": AI_GATEWAY_SERVICE, "port": 1063}},
            "backendResources": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}],
            # Closed on purpose: when the AI Gateway extension fails, Envoy Gateway keeps serving the
            # last good xDS snapshot (internal/xds/runner/runner.go) instead of publishing routes to
            # InferencePools without their endpoint picker, which would send requests nowhere. The
            # pack's route-rules policy keeps the rules the extension refuses out of the stack.
            "failOpen": False,
        },
    }}}


def dra_driver_values(facts: ClusterFacts) -> dict:
    """dra-driver-nvidia-gpu v0.4.1: GPUs, and ComputeDomains (IMEX channels over multi-node NVLink)
    where some pool is an NVLink domain (GB200 NVL72); the kubelet plugin on every GPU node
    (selected by nvidia.com/gpu.present, tolerating every taint: the GPU taint, GKE's arm64 one), the
    driver root of the node image: COS on GKE, the host root on EKS AL2023 (docs/install.md @ v0.4.1).
    The ComputeDomain controller (a Deployment) only prefers a control-plane node (values.yaml:
    preferred affinity) and tolerates no GPU taint, so on GKE and EKS it runs on the system pool, as
    Cluster Toolkit's A4X install keeps it (modules/management/kubectl-apply/main.tf: off GPU nodes,
    nvidiaDriverRoot /home/kubernetes/bin/nvidia, the kubelet plugin tolerating the GPU and arm64
    taints); on GKE its system-node-critical priority is admitted by the namespace's ResourceQuota
    (dra-driver-quota)."""
    root = GKE_DRIVER_ROOT if facts.source == "gke" else facts.driver_root
    return {"nvidiaDriverRoot": root, "gpuResourcesEnabledOverride": True,
            "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": facts.compute_domains}},
            "kubeletPlugin": {"tolerations": TOLERATE_ALL}}


def critical_pods_quota(namespace: str) -> dict:
    """GKE admits system-node-critical pods outside kube-system only in namespaces with a
    ResourceQuota scoped to those priority classes."""
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta("critical-pods", namespace, MANAGED_BY),
            "spec": {"hard": {"pods": "100"}, "scopeSelector": {"matchExpressions": [
                {"operator": "In", "scopeName": "PriorityClass",
                 "values": ["system-node-critical", "system-cluster-critical"]}]}}}


# cert-manager's controller ServiceAccount: the chart names it after the release, in the release's
# namespace (catalog/substrate.yaml certManager); the cloud identities for DNS-01 bind to it.
CERT_MANAGER_SERVICE_ACCOUNT = ("cert-manager", "cert-manager")   # (namespace, name)
GATEWAY_TLS_SECRET = "inference-gateway-tls"
ACME_ISSUER = "modelplane-acme"


def listeners(tls: dict | None) -> list[dict]:
    """The inference Gateway's listeners: HTTP :80 always (with TLS: the redirect and ACME HTTP-01
    answers), HTTPS :443 terminating with the cert-manager Secret."""
    out = [{"name": "http", "protocol": "HTTP", "port": 80, "allowedRoutes": {"namespaces": {"from": "All"}}}]
    if tls:
        out.append({"name": "https", "protocol": "HTTPS", "port": 443,
                    "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": GATEWAY_TLS_SECRET}]},
                    "allowedRoutes": {"namespaces": {"from": "All"}}})
    return out


def acme_solver(acme: dict) -> dict:
    """HTTP-01 through this Gateway's HTTP listener (cert-manager's gatewayHTTPRoute solver), or DNS-01
    in the stack's zone with the cluster's ambient cloud identity: Route 53 through EKS Pod Identity,
    Cloud DNS through GKE Workload Identity (no keys in the issuer)."""
    dns01 = acme.get("dns01")
    if dns01 and dns01.get("route53"):
        r53 = dns01["route53"]
        return {"dns01": {"route53": {"region": r53.get("region", "us-east-1"), "hostedZoneID": r53["hostedZoneId"]}}}
    if dns01:
        # With hostedZoneName cert-manager looks no zone up in the project (cert-manager v1.21.1
        # pkg/issuer/acme/dns/clouddns/clouddns.go L244-246), so a zone-level role is enough.
        return {"dns01": {"cloudDNS": {"project": dns01["cloudDns"]["project"],
                                       "hostedZoneName": dns01["cloudDns"]["managedZone"]}}}
    return {"http01": {"gatewayHTTPRoute": {"parentRefs": [
        {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": GATEWAY_NAME,
         "namespace": GATEWAY_NAMESPACE, "sectionName": "http"}]}}}


def tls_objects(tls: dict) -> list[dict]:
    """The Certificate the HTTPS listener serves, and the ACME ClusterIssuer when modelplane makes one
    (HTTP-01 answered through this Gateway's HTTP listener: cert-manager's gatewayHTTPRoute solver)."""
    out = []
    if tls.get("acme"):
        acme = tls["acme"]
        solver = acme_solver(acme)
        out.append({"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": meta(ACME_ISSUER, None, MANAGED_BY),
                    "spec": {"acme": {"email": acme["email"],
                                      "server": acme.get("server", "https://acme-v02.api.letsencrypt.org/directory"),
                                      "privateKeySecretRef": {"name": f"{ACME_ISSUER}-account"}, "solvers": [solver]}}})
        issuer = {"group": "cert-manager.io", "kind": "ClusterIssuer", "name": ACME_ISSUER}
    else:
        ref = tls["issuerRef"]
        issuer = {"group": "cert-manager.io", "kind": ref.get("kind", "ClusterIssuer"), "name": ref["name"]}
    out.append({"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                "metadata": meta(GATEWAY_TLS_SECRET, GATEWAY_NAMESPACE, MANAGED_BY),
                "spec": {"secretName": GATEWAY_TLS_SECRET, "dnsNames": list(tls["hostnames"]), "issuerRef": issuer}})
    return out


def gateway_objects(tls: dict | None = None) -> list[dict]:
    """The GatewayClass of Envoy Gateway, the cluster's inference Gateway (HTTP :80, and HTTPS :443
    when `tls` is set), the hop Gateway with its EnvoyProxy (ClusterIP only) and the Service in front
    of the hop Gateway's Envoy. Pulumi waits until the inference Gateway has an address, which the DNS
    layer points at."""
    gateway_class = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
                     "metadata": meta(GATEWAY_CLASS, None, MANAGED_BY),
                     "spec": {"controllerName": ENVOY_CONTROLLER}}
    gateway = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": meta(GATEWAY_NAME, GATEWAY_NAMESPACE, MANAGED_BY,
                                {"pulumi.com/waitFor": "jsonpath={.status.addresses[0].value}"}),
               "spec": {"gatewayClassName": GATEWAY_CLASS, "infrastructure": _proxy_ref(GATEWAY_NAME),
                        "listeners": listeners(tls)}}
    return [namespace(GATEWAY_NAMESPACE), gateway_class, *(tls_objects(tls) if tls else []),
            envoy_proxy(GATEWAY_NAME, "LoadBalancer"), gateway, *hop_gateway_objects()]


ENVOY_REPLICAS = 2   # a lost Envoy pod must not take a cluster's traffic with it


def envoy_proxy(name: str, service_type: str) -> dict:
    """The Envoy fleet behind one Gateway: two replicas, a PodDisruptionBudget that keeps one of them
    through a node drain, and its Service type. Envoy Gateway v1.8.1 takes a Gateway's
    `infrastructure.parametersRef` EnvoyProxy from the Gateway's namespace (internal/gatewayapi/
    contexts.go L103-110; api/v1alpha1/envoyproxy_types.go envoyDeployment, envoyService, and
    envoyPDB L542-544 with shared_types.go L475-500's minAvailable)."""
    return {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "EnvoyProxy",
            "metadata": meta(name, GATEWAY_NAMESPACE, MANAGED_BY),
            "spec": {"provider": {"type": "Kubernetes", "kubernetes": {
                "envoyDeployment": {"replicas": ENVOY_REPLICAS}, "envoyPDB": {"minAvailable": 1},
                "envoyService": {"type": service_type}}}}}


def _proxy_ref(name: str) -> dict:
    return {"parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": name}}


def hop_gateway_objects() -> list[dict]:
    """A second Gateway for the hop, on an Envoy of its own whose Service is ClusterIP only: no
    client outside the cluster reaches it, and none of its routes sends anything back to it. Its
    `kserve` listener carries KServe's managed routes under a Host of their own."""
    hop = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
           "metadata": meta(HOP_GATEWAY, GATEWAY_NAMESPACE, MANAGED_BY),
           "spec": {"gatewayClassName": GATEWAY_CLASS, "infrastructure": _proxy_ref(HOP_GATEWAY),
                    "listeners": [{"name": "http", "protocol": "HTTP", "port": HOP_PORT,
                                   "allowedRoutes": {"namespaces": {"from": "All"}}},
                                  {"name": KSERVE_LISTENER, "protocol": "HTTP", "port": HOP_PORT,
                                   "hostname": KSERVE_HOST, "allowedRoutes": {"namespaces": {"from": "All"}}}]}}
    return [envoy_proxy(HOP_GATEWAY, "ClusterIP"), hop, hop_service()]


def hop_service() -> dict:
    """A fixed name for the hop Gateway's Envoy pods, which the service routes send a pool's share
    to. Envoy Gateway names its generated Service with a hash but labels every proxy pod with its
    owning Gateway (internal/infrastructure/kubernetes/proxy/resource_provider.go, stableSelector);
    a listener on port 80 binds container port 10080 (internal/gatewayapi/listener.go)."""
    selector = {"app.kubernetes.io/name": "envoy", "app.kubernetes.io/component": "proxy",
                "app.kubernetes.io/managed-by": "envoy-gateway",
                "gateway.envoyproxy.io/owning-gateway-name": HOP_GATEWAY,
                "gateway.envoyproxy.io/owning-gateway-namespace": GATEWAY_NAMESPACE}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta(HOP_SERVICE, ENVOY_NAMESPACE, MANAGED_BY),
            "spec": {"type": "ClusterIP", "selector": selector,
                     "ports": [{"name": "http", "port": HOP_PORT, "targetPort": ENVOY_HTTP_CONTAINER_PORT,
                                "protocol": "TCP"}]}}


def addons(facts: ClusterFacts, versions: dict) -> list[Addon]:
    """Every addon of one cluster, in a stable order; dependencies name earlier entries."""
    out: list[Addon] = []

    def add(addon: Addon):
        if _preinstalled(addon, facts.preinstalled):
            return      # its dependants' `after` names it and finds nothing to wait for
        if addon.key is None or addon.key in versions:
            out.append(_configured(addon, versions, facts.overrides))

    kserve = _on(facts, "kserve")
    gateway = _on(facts, "gateway")
    # The Gateway API CRDs serve our Gateway and KServe's routes: not ours to install where every
    # component that needs them is there already (preinstalled) or off.
    if (gateway and "gateway" not in facts.preinstalled) or (kserve and "kserve" not in facts.preinstalled):
        add(Addon("gateway-api-crds", "manifests", "Gateway API CRDs (Gateway, HTTPRoute, BackendTLSPolicy)",
                  key="gatewayApi"))
    acme = (facts.tls or {}).get("acme") or {}
    http01 = bool(acme) and not acme.get("dns01")
    if _on(facts, "certManager") and (kserve or facts.tls):
        # HTTP-01 through the Gateway needs cert-manager's Gateway API support, which it turns on only
        # when the Gateway API CRDs exist at start. `config.gatewayAPI.enabled` is the v1.21 spelling
        # (cert-manager@v1.21.1 pkg/apis/config/controller/v1alpha1/types.go deprecates enableGatewayAPI).
        values = {"crds": {"enabled": True}}
        if http01:
            values["config"] = {"gatewayAPI": {"enabled": True}}
        if facts.dns01_account:   # GKE Workload Identity: the Google account cert-manager acts as
            values["serviceAccount"] = {"annotations": {"iam.gke.io/gcp-service-account": facts.dns01_account}}
        add(Addon("cert-manager", "release", "KServe's webhooks and the Gateway's HTTPS certificate",
                  key="certManager", after=("gateway-api-crds",) if http01 else (SYSTEM,), values=values))
    if _on(facts, "lws"):
        add(Addon("lws", "release", "LeaderWorkerSet: multi-node workers", key="lws"))
    if kserve:
        add(Addon("kserve-llmisvc-crd", "release", "the LLMInferenceService CRDs", key="kserveCrds"))
        deps = tuple(n for n in ("cert-manager", "kserve-llmisvc-crd", "lws", "gateway-api-crds")
                     if any(a.name == n for a in out))
        add(Addon("kserve-llmisvc-resources", "release", "the LLMInferenceService controller; owns the "
                  "Inference Extension CRDs (InferencePool)", after=deps, key="kserve",
                  values={"kserve": {"llmisvc": {"createGIECRDs": True}}}))
        kserve_ns = versions.get("kserve", {}).get("namespace", "kserve")
        webhook = {"apiVersion": "v1", "kind": "Endpoints",
                   "metadata": {"name": KSERVE_WEBHOOK_SERVICE, "namespace": kserve_ns}}
        add(Addon("kserve-webhook-ready", "gate", "the presets go through KServe's validating webhook: wait "
                  "until its Service has a ready endpoint", after=("kserve-llmisvc-resources",),
                  objects=(webhook,), wait_for="jsonpath={.subsets[0].addresses[0].ip}", switch="kserve"))
        add(Addon("kserve-runtime-configs", "release", "the LLMInferenceServiceConfig presets every "
                  "LLMInferenceService merges", after=("kserve-webhook-ready",), key="kserveRuntimeConfigs",
                  values={"kserve": {"llmisvcConfigs": {"enabled": True}}}))
        add(Addon("kserve-pipeline-preset", "objects", "our pipeline-parallel LLMInferenceServiceConfigs (whole "
                  "model, decode and prefill roles), which KServe looks up by name for pipeline > 1 and no release "
                  "ships (render/presets.py)", after=("kserve-webhook-ready",), objects=presets.all_presets(kserve_ns)))
    if gateway:
        add(Addon("envoy-gateway-crds", "release", "Envoy Gateway's own CRDs (Backend, HTTPRouteFilter)",
                  after=("gateway-api-crds",), key="envoyGatewayCrds",
                  values={"crds": {"gatewayAPI": {"enabled": False}, "envoyGateway": {"enabled": True}}}))
        # Envoy Gateway watches every backendResources kind without checking its CRD exists (EG v1.8.1
        # internal/provider/kubernetes/controller.go L2847-2857): it starts after the InferencePool CRD.
        pool_crd = tuple(n for n in ("kserve-llmisvc-resources",) if any(a.name == n for a in out))
        add(Addon("envoy-gateway", "release", "the Gateway implementation that serves the inference Gateway",
                  after=("envoy-gateway-crds", *pool_crd), key="envoyGateway", values=envoy_gateway_values(),
                  skip_crds=True))
        add(Addon("ai-gateway-crds", "release", "Envoy AI Gateway CRDs", key="aiGatewayCrds"))
        add(Addon("ai-gateway", "release", "routes to InferencePools (extension server of Envoy Gateway)",
                  after=("envoy-gateway", "ai-gateway-crds"), key="aiGateway"))
        add(Addon("gateway", "objects", "the cluster's inference Gateway and its GatewayClass",
                  after=("envoy-gateway", "gateway-api-crds", *(("cert-manager",) if facts.tls else ())),
                  objects=tuple(gateway_objects(facts.tls))))
    if _on(facts, "kai"):
        add(Addon("kai-scheduler", "release", "gang scheduling (PodGroups) and queues", key="kai"))
    if _on(facts, "keda"):
        add(Addon("keda", "release", "autoscaling of native GPU roles and extra roles", key="keda"))
    add_drivers(facts, versions, add)
    return out


def _preinstalled(addon: Addon, switches: frozenset) -> bool:
    """An install step of a component the cluster already runs: its chart, manifests or install gate."""
    if addon.kind in ("release", "manifests"):
        return SWITCH_OF.get(addon.key or "") in switches
    return addon.kind == "gate" and addon.switch in switches


def _configured(addon: Addon, versions: dict, overrides: dict) -> Addon:
    """A release at the cluster's chart version, with the stack's values deep-merged over ours."""
    if addon.kind != "release":
        return addon
    over = overrides.get(addon.key, {})
    return replace(addon, version=str(over.get("version") or versions[addon.key]["version"]),
                   values=deep_merge(addon.values, over.get("values", {})))


def add_drivers(facts: ClusterFacts, versions: dict, add) -> None:
    """GPU and NIC drivers and the node autoscaler, per cloud."""
    driver_deps: tuple[str, ...] = (SYSTEM,)
    if facts.dra and facts.source == "gke":
        # The plain manifest installs COS's default driver; GPUs whose floor is above it (H200 >= 550,
        # B200 >= 570: the classes' gpuDriver LATEST) get the manifest that installs the latest one.
        add(Addon("cos-driver-installer", "manifests", "GKE does not install the GPU driver on DRA pools; "
                  "Google's COS installer DaemonSet does",
                  key="cosDriverInstallerLatest" if facts.latest_driver else "cosDriverInstaller"))
        ns = versions.get("draDriver", {}).get("namespace", "dra-driver-nvidia-gpu")
        add(Addon("dra-driver-quota", "objects", "GKE admits the driver's system-node-critical pods only with "
                  "this ResourceQuota", objects=(namespace(ns), critical_pods_quota(ns))))
        driver_deps = (SYSTEM, "cos-driver-installer", "dra-driver-quota")
    if facts.dra:
        add(Addon("dra-driver-nvidia-gpu", "release", "publishes the GPUs as DRA devices (gpu.nvidia.com)",
                  after=driver_deps, key="draDriver", values=dra_driver_values(facts)))
    elif facts.source == "eks":
        add(Addon("nvidia-device-plugin", "release", "advertises nvidia.com/gpu (EKS AL2023 AMIs do not "
                  "ship the device plugin)", key="nvidiaDevicePlugin", values={"tolerations": TOLERATE_ALL}))
    if facts.source == "gke" and facts.gpu_nics:
        add(Addon("gpu-networks", "objects", "GKE multi-networking: a GKENetworkParamSet and a Network per GPUDirect "
                  "VPC, which pods name in networking.gke.io/interfaces",
                  objects=tuple(gd.network_objects(facts.name, facts.gpu_nics))))
        add(Addon("nri-device-injector", "manifests", "injects the GPU devices into the tcpx(o)-daemon sidecar "
                  "(devices.gke.io/container.* annotation)", key="nriDeviceInjector"))
        for kind, key in facts.gpudirect_installers:   # the release for the cluster's GKE minor
            add(Addon(f"nccl-{kind}-installer", "manifests", "installs the GPUDirect NCCL "
                      "plugin into /home/kubernetes/bin/nvidia/lib64 on the A3 nodes", key=key))
    for key in facts.plugin_installers:   # Google's gIB installer DaemonSets (x86, Arm)
        add(Addon("nccl-gib-installer" + ("-arm64" if key.endswith("Arm64") else ""), "manifests",
                  "installs Google's gIB NCCL plugin into /home/kubernetes/bin/gib on the RDMA (RoCE) nodes", key=key))
    if facts.source == "eks" and facts.efa:
        add(Addon("efa-device-plugin", "release", "advertises the EFA interfaces as vpc.amazonaws.com/efa",
                  key="efaDevicePlugin", values={"tolerations": TOLERATE_ALL}))
    if facts.source == "eks" and _on(facts, "autoscaler"):
        args = {"balance-similar-node-groups": True, "skip-nodes-with-system-pods": False, "expander": "least-waste"}
        if facts.dra:
            args["enable-dynamic-resource-allocation"] = True
        add(Addon("cluster-autoscaler", "release", "scales the EKS node groups (they do not scale on their own)",
                  key="clusterAutoscaler", values={
                      "cloudProvider": "aws", "awsRegion": facts.region,
                      "autoDiscovery": {"clusterName": facts.name},
                      "rbac": {"serviceAccount": {"create": True, "name": "cluster-autoscaler"}},
                      "extraArgs": args}))

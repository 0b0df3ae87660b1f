"""The operators' own controllers as host processes beside a loopback cluster (operators.md says
how each one runs, with the upstream lines).

- `prepare(cluster)`: the namespaces the operators' charts would have created (the e2e infra stacks
  mark those components `preinstalled`, so modelplane's objects land in them).
- `start_kserve(cluster)`: KServe's LLMInferenceService controller, after its ConfigMap and the
  well-known presets the chart ships (read from the module cache).
- `start_lws(cluster)`: the LeaderWorkerSet controller with its webhooks registered by URL (its pod
  webhook labels leader pods; without it no LeaderWorkerSet becomes Available).
- `start_gateways(cluster)`: AI Gateway (in a network namespace of its own: it and Envoy Gateway
  both bind controller-runtime's fixed :8080) and Envoy Gateway (in a mount namespace that holds
  its fixed /certs), wired as Envoy Gateway's extension server. Needs root (`unshare`, `ip netns`).
- `LoadBalancers(cluster)`: what a cloud's load-balancer controller does for Envoy's Services.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import build
import cluster as loopback

NAMESPACES = ("kserve", "envoy-gateway-system", "envoy-ai-gateway-system", "cert-manager", "lws-system",
              "kai-scheduler", "keda", "dra-driver-nvidia-gpu")
KSERVE = ("github.com/kserve/kserve", build.COMPONENTS["kserve"]["version"])
LWS = ("sigs.k8s.io/lws", build.COMPONENTS["lws"]["version"])
LWS_POD_SELECTOR = {"matchExpressions": [{"key": "leaderworkerset.sigs.k8s.io/name", "operator": "Exists"}]}
AI_GATEWAY_NS = "envoy-ai-gateway-system"
ENVOY_GATEWAY_NS = "envoy-gateway-system"
# AI Gateway's network namespace and the veth pair to it: it reaches the API server (bound to every
# address, cluster.up(bind_all=True)) at HOST_IP, Envoy Gateway reaches its extension server at NS_IP.
NETNS, HOST_IP, NS_IP = "mp-e2e-aig", "10.231.0.1", "10.231.0.2"
AIG_EXT_PORT = 1063


def prepare(cluster) -> None:
    cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in NAMESPACES])


def _certs(c, name: str, sub: str = "certs") -> Path:
    """The cluster CA and its API server pair (SAN 127.0.0.1, localhost) as a controller's serving
    certificates: no client of these webhooks or xDS servers checks more than the CA."""
    d = c.dir / "run" / name / sub
    d.mkdir(parents=True, exist_ok=True)
    for src, dst in (("apiserver.crt", "tls.crt"), ("apiserver.key", "tls.key"), ("ca.crt", "ca.crt")):
        shutil.copy(c.dir / "pki" / src, d / dst)
    return d


def _yaml_docs(path: Path) -> list[dict]:
    import yaml
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def start_kserve(c) -> None:
    """inferenceservice-config (every reconcile reads it first) and the kserve-config-llm-* presets
    (a service whose presets are missing stops at PresetsCombined=False), then the controller."""
    src = build.module_dir(*KSERVE)
    objs = _yaml_docs(src / "config/configmap/inferenceservice.yaml")
    for f in sorted((src / "config/llmisvcconfig").glob("config-llm-*.yaml")):
        for d in _yaml_docs(f):
            d["metadata"]["namespace"] = "kserve"    # kustomization.yaml sets it
            objs.append(d)
    c.apply(objs)
    run = c.dir / "run" / "kserve"
    _certs(c, "kserve", "k8s-webhook-server/serving-certs")   # controller-runtime's default under TMPDIR
    loopback._start(c, "kserve", [str(loopback.need("llmisvc-manager")), "--kubeconfig", str(c.kubeconfig),
                                  "--leader-elect=false", f"--metrics-addr=127.0.0.1:{loopback.free_port()}",
                                  "--metrics-secure=false", f"--health-probe-addr=127.0.0.1:{loopback.free_port()}",
                                  f"--webhook-port={loopback.free_port()}"],
                    env={"POD_NAMESPACE": "kserve", "TMPDIR": str(run)})


def _wait_port(port: int, what: str, timeout: float = 60) -> None:
    import socket
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f}s")


def lws_webhooks(port: int, ca: bytes) -> list[dict]:
    """config/webhook/manifests.yaml with each Service reference replaced by the local URL and the pod
    webhooks narrowed to LWS pods as config/webhook/{mutating,validating}-patch.yaml do."""
    out = _yaml_docs(build.module_dir(*LWS) / "config/webhook/manifests.yaml")
    for cfg in out:
        cfg["metadata"]["name"] = "lws-" + cfg["metadata"]["name"]
        for w in cfg["webhooks"]:
            path = w["clientConfig"]["service"]["path"]
            w["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": base64.b64encode(ca).decode()}
            if w["name"] in ("mpod.kb.io", "vpod.kb.io"):
                w["objectSelector"] = LWS_POD_SELECTOR
    return out


def start_lws(c) -> None:
    """Its DisaggregatedSet CRD (its controller starts unconditionally, cmd/main.go L210-218), the
    controller with internal certificate management off, then its webhooks once it listens."""
    import yaml
    src = build.module_dir(*LWS)
    c.apply(_yaml_docs(src / "config/crd/bases/disaggregatedset.x-k8s.io_disaggregatedsets.yaml"))
    certs = _certs(c, "lws")
    port = loopback.free_port()
    config = {"apiVersion": "config.lws.x-k8s.io/v1alpha1", "kind": "Configuration",
              "leaderElection": {"leaderElect": False}, "internalCertManagement": {"enable": False},
              "health": {"healthProbeBindAddress": f"127.0.0.1:{loopback.free_port()}"},
              "metrics": {"bindAddress": f"127.0.0.1:{loopback.free_port()}"},
              "webhook": {"host": "127.0.0.1", "port": port, "certDir": str(certs)}}
    (certs.parent / "config.yaml").write_text(yaml.safe_dump(config))
    loopback._start(c, "lws", [str(loopback.need("lws-controller-manager")), "--kubeconfig", str(c.kubeconfig),
                               "--config", str(certs.parent / "config.yaml"), "--zap-log-level=info"])
    _wait_port(port, "the LeaderWorkerSet webhook server")
    c.apply(lws_webhooks(port, (certs / "ca.crt").read_bytes()))


def start_cert_manager(c) -> None:
    """cert-manager's own control loops for CA-issued certificates (mods/cert-manager: our main over
    the root module, since the proxy serves no controller binary); its CRDs are the cluster's
    already (crds.toml)."""
    loopback._start(c, "cert-manager", [str(loopback.need("cert-manager-controller")), "--kubeconfig",
                                        str(c.kubeconfig), "--cluster-resource-namespace", "cert-manager"])


def ca_issuer(c, name: str = "e2e-ca") -> list[dict]:
    """A ClusterIssuer signing with the cluster's own CA (its pair as a cert-manager `ca` Secret)."""
    import base64

    pki = c.dir / "pki"
    data = {k: base64.b64encode((pki / f).read_bytes()).decode() for k, f in (("tls.crt", "ca.crt"), ("tls.key", "ca.key"))}
    return [{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
             "metadata": {"name": name, "namespace": "cert-manager"}, "data": data},
            {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": name},
             "spec": {"ca": {"secretName": name}}}]


def gateways_possible() -> str | None:
    """Why the gateway controllers cannot run on this machine, or None."""
    if os.geteuid() != 0:
        return "Envoy Gateway needs a private mount of /certs and AI Gateway a network namespace: run as root"
    for exe in ("envoy-gateway", "ai-gateway-controller"):
        if build.binary(exe) is None:
            return f"{exe} is not built (tools/e2e/build.py; out/e2e/build.json has its error)"
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            return f"needs `{tool}` (util-linux, iproute2)"
    return None


def _netns_up() -> None:
    subprocess.run(["ip", "netns", "del", NETNS], capture_output=True)
    subprocess.run(["ip", "link", "del", "mp-aig0"], capture_output=True)
    for cmd in (["ip", "netns", "add", NETNS],
                ["ip", "link", "add", "mp-aig0", "type", "veth", "peer", "name", "mp-aig1"],
                ["ip", "link", "set", "mp-aig1", "netns", NETNS],
                ["ip", "addr", "add", f"{HOST_IP}/30", "dev", "mp-aig0"],
                ["ip", "link", "set", "mp-aig0", "up"],
                ["ip", "netns", "exec", NETNS, "ip", "addr", "add", f"{NS_IP}/30", "dev", "mp-aig1"],
                ["ip", "netns", "exec", NETNS, "ip", "link", "set", "mp-aig1", "up"],
                ["ip", "netns", "exec", NETNS, "ip", "link", "set", "lo", "up"]):
        subprocess.run(cmd, check=True, capture_output=True)


def netns_down() -> None:
    subprocess.run(["ip", "netns", "del", NETNS], capture_output=True)
    subprocess.run(["ip", "link", "del", "mp-aig0"], capture_output=True)


def _kubeconfig_via(c, host: str) -> Path:
    """The admin kubeconfig pointed at HOST; the serving certificate is checked as `localhost`."""
    cfg = json.loads(c.kubeconfig.read_text())
    cl = cfg["clusters"][0]["cluster"]
    cl["server"] = cl["server"].replace("127.0.0.1", host)
    cl["tls-server-name"] = "localhost"
    out = c.dir / f"kubeconfig-{host}"
    out.write_text(json.dumps(cfg))
    return out


def _pod_mutator(ca: bytes) -> dict:
    """The one MutatingWebhookConfiguration AI Gateway insists on patching at start (cmd/controller/
    main.go L481-509), selecting no pod: it would add the ext-proc sidecar to Envoy pods KWOK never runs."""
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": f"envoy-ai-gateway-gateway-pod-mutator.{AI_GATEWAY_NS}"},
            "webhooks": [{"name": "ai-gateway-pod-mutator.aigateway.envoyproxy.io", "admissionReviewVersions": ["v1"],
                          "sideEffects": "None", "failurePolicy": "Ignore",
                          "clientConfig": {"url": f"https://{NS_IP}:9443/mutate", "caBundle": base64.b64encode(ca).decode()},
                          "objectSelector": {"matchLabels": {"modelplane.ai/e2e-never": "true"}},
                          "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                     "resources": ["pods"]}]}]}


def envoy_gateway_config() -> dict:
    """modelplane's own values for the chart (render/addons.py), with the Kubernetes provider's
    leader election and topology injector off and the extension server at AI Gateway's address."""
    from modelplane.render.addons import envoy_gateway_values
    cfg = json.loads(json.dumps(envoy_gateway_values()["config"]["envoyGateway"]))
    cfg.update({"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "EnvoyGateway"})
    kube = cfg.setdefault("provider", {"type": "Kubernetes"}).setdefault("kubernetes", {})
    kube["leaderElection"] = {"disable": True}
    kube["proxyTopologyInjector"] = {"disabled": True}
    cfg["extensionManager"]["service"] = {"ip": {"address": NS_IP, "port": AIG_EXT_PORT}}
    return cfg


def start_gateways(c) -> None:
    """AI Gateway first (Envoy Gateway calls it on every translation), then Envoy Gateway."""
    _netns_up()
    certs = _certs(c, "aig")
    c.apply([_pod_mutator((certs / "ca.crt").read_bytes())])
    kc = _kubeconfig_via(c, HOST_IP)
    loopback._start(c, "ai-gateway", [
        "ip", "netns", "exec", NETNS, str(loopback.need("ai-gateway-controller")),
        "--enableLeaderElection=false", f"--envoyGatewayNamespace={ENVOY_GATEWAY_NS}",
        f"--port={NS_IP}:{AIG_EXT_PORT}", "--webhookPort=9443", f"--tlsCertDir={certs}"],
        env={"POD_NAMESPACE": AI_GATEWAY_NS, "DISABLE_PPROF": "1", "KUBECONFIG": str(kc)})
    import yaml
    eg = c.dir / "run" / "eg"
    eg.mkdir(parents=True, exist_ok=True)
    (eg / "envoy-gateway.yaml").write_text(yaml.safe_dump(envoy_gateway_config()))
    eg_certs = _certs(c, "eg")
    Path("/certs").mkdir(exist_ok=True)       # the mount point; the bind mount is private to EG
    loopback._start(c, "envoy-gateway", [
        "unshare", "-m", "--propagation", "private", "sh", "-c",
        f'mount --bind "{eg_certs}" /certs && exec "{loopback.need("envoy-gateway")}" server '
        f'--config-path "{eg / "envoy-gateway.yaml"}"'],
        env={"ENVOY_GATEWAY_NAMESPACE": ENVOY_GATEWAY_NS, "KUBECONFIG": str(c.kubeconfig)})


class LoadBalancers:
    """Gives every LoadBalancer Service an ingress address, as a cloud's controller would (the
    loopback kube-controller-manager runs without one): Envoy Gateway programs a Gateway only once
    its Service has one (internal/gatewayapi/status/gateway.go, operators.md)."""

    def __init__(self, c, ip: str = "127.0.0.2"):
        self.c, self.ip, self.stopped = c, ip, threading.Event()
        self.assigned: list[str] = []

    def __enter__(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join(10)

    def _run(self):
        patch = json.dumps({"status": {"loadBalancer": {"ingress": [{"ip": self.ip}]}}})
        while not self.stopped.is_set():
            try:
                for s in self.c.get("services", "-A")["items"]:
                    if s["spec"].get("type") == "LoadBalancer" and not s.get("status", {}).get("loadBalancer", {}).get("ingress"):
                        ns, name = s["metadata"]["namespace"], s["metadata"]["name"]
                        self.c.kubectl("patch", "service", name, "-n", ns, "--subresource=status",
                                       "--type=merge", "-p", patch)
                        self.assigned.append(f"{ns}/{name}")
            except Exception:   # the API server restarting or a Service deleted meanwhile: next round
                pass
            self.stopped.wait(1.0)

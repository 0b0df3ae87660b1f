"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler (DRA on, as in 1.35 by default) and KWOK for nodes that run no containers.

    python tools/e2e/cluster.py up [NAME ...]     # default: one cluster "local"; prints kubeconfigs
    python tools/e2e/cluster.py down [NAME ...]   # stops them and removes their state

Each cluster lives in out/e2e/clusters/NAME/ (PKI, etcd data, logs, pids, kubeconfig). Binaries
come from tools/e2e/build.py's cache. Nodes are added by tools/e2e/nodes.py (GPU nodes shaped like
modelplane's classes, with the ResourceSlices the NVIDIA DRA driver publishes).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build  # noqa: E402

STATE = build.ROOT / "out" / "e2e" / "clusters"
SERVICE_CIDR = "10.96.0.0/16"       # allocated by the API server only: nothing listens there
KAI_STANDIN = "kai-scheduler"      # render/pod.py KAI_SCHEDULER
POD_CIDR = "10.244.0.0/16"          # KWOK writes pod IPs from it; no traffic is ever sent to them


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def pki(d: Path) -> None:
    """A CA, the API server's serving pair, an admin client (system:masters) and the SA key pair."""
    d.mkdir(parents=True, exist_ok=True)
    if (d / "admin.crt").exists():
        return
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "30", "-subj", "/CN=modelplane-e2e-ca", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,"
                               "DNS:kubernetes.default.svc,IP:10.96.0.1\n")
    for name, subj, ext in (("apiserver", "/CN=kube-apiserver", ["-extfile", "san.ext"]),
                            ("admin", "/O=system:masters/CN=modelplane-e2e-admin", [])):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", subj, cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-days", "30", "-out", f"{name}.crt", *ext, cwd=d)
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)


def kubeconfig(d: Path, name: str, port: int) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": {"server": f"https://127.0.0.1:{port}",
                                                "certificate-authority": str(d / "pki/ca.crt")}}],
        "users": [{"name": "admin", "user": {"client-certificate": str(d / "pki/admin.crt"),
                                             "client-key": str(d / "pki/admin.key")}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "admin"}}],
    }, indent=2)


def inline_kubeconfig(path: Path) -> str:
    """The same kubeconfig with the certificates inline: what a stack secret must hold."""
    import base64
    cfg = json.loads(path.read_text())
    c, u = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    c["certificate-authority-data"] = base64.b64encode(Path(c.pop("certificate-authority")).read_bytes()).decode()
    for f in ("client-certificate", "client-key"):
        u[f + "-data"] = base64.b64encode(Path(u.pop(f)).read_bytes()).decode()
    return json.dumps(cfg)


TRANSIENT = ("Please retry", "Client.Timeout", "TLS handshake timeout", "connection refused")


@dataclass
class Cluster:
    name: str
    dir: Path

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        for attempt in range(3):
            run = subprocess.run([str(need("kubectl")), "--kubeconfig", str(self.kubeconfig), *args],
                                 input=input, capture_output=True, text=True)
            # A loaded 2-core machine: the API server answers a request (often kubectl's OpenAPI
            # fetch for validation) after kubectl's client timeout, and kubectl says to retry.
            if run.returncode == 0 or not any(x in run.stderr for x in TRANSIENT):
                break
            time.sleep(2 * (attempt + 1))
        if check and run.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {run.stderr.strip()}")
        return run.stdout

    def get(self, *args: str) -> dict:
        return json.loads(self.kubectl("get", *args, "-o", "json"))

    def apply(self, objs: list[dict]) -> None:
        self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-",
                     input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))


def need(exe: str) -> Path:
    p = build.binary(exe)
    if p is None:
        raise SystemExit(f"e2e: {exe} is not built; run `python tools/e2e/build.py` (make e2e-build)")
    return p


def _start(c: Cluster, name: str, argv: list[str], env: dict | None = None) -> None:
    log = open(c.dir / "logs" / f"{name}.log", "ab")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            cwd=c.dir, env={**os.environ, **(env or {})})
    (c.dir / "pids" / name).write_text(str(proc.pid))


def _ready(c: Cluster, port: int, timeout: float = 90) -> None:
    ctx = ssl.create_default_context(cafile=str(c.dir / "pki/ca.crt"))
    ctx.load_cert_chain(str(c.dir / "pki/admin.crt"), str(c.dir / "pki/admin.key"))
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=ctx, timeout=5) as r:
                if r.status == 200:
                    return
        except Exception as exc:   # not up yet: connection refused, 500 while post-start hooks run
            last = str(exc)
        time.sleep(0.5)
    raise RuntimeError(f"cluster {c.name}: kube-apiserver not ready after {timeout:.0f}s ({last}); "
                       f"see {c.dir / 'logs/kube-apiserver.log'}")


# KServe's workload pods become Ready this long after they are bound; every other pod at once. A
# real engine takes seconds to load a model: an `up` that awaits a roll lasts at least this long,
# one that does not returns while the new pods are still starting (test_gateway.py, review C2).
KSERVE_READY_DELAY_MS = 4000
KSERVE_WORKLOAD = '.metadata.labels["kserve.io/component"]'


def kwok_stages() -> str:
    """KWOK's own fast pod stages (kustomize/stage/pod/fast in its module, what it uses when given
    none), with pod-ready split in two: KServe's workload pods after KSERVE_READY_DELAY_MS."""
    import yaml
    src = build.module_dir("sigs.k8s.io/kwok", build.COMPONENTS["kwok"]["version"]) / "kustomize/stage/pod/fast"
    stages = [yaml.safe_load((src / f"pod-{s}.yaml").read_text()) for s in ("ready", "complete", "delete")]
    ready = stages[0]
    slow = json.loads(json.dumps(ready))
    ready["spec"]["selector"]["matchExpressions"].append({"key": KSERVE_WORKLOAD, "operator": "DoesNotExist"})
    slow["metadata"]["name"] = "pod-ready-kserve-workload"
    slow["spec"]["selector"]["matchExpressions"].append({"key": KSERVE_WORKLOAD, "operator": "In", "values": ["workload"]})
    slow["spec"]["delay"] = {"durationMilliseconds": KSERVE_READY_DELAY_MS}
    return yaml.safe_dump_all([*stages, slow])


def up(name: str, bind_all: bool = False) -> Cluster:
    """Start one cluster (or find it running). `bind_all`: the API server listens on every address,
    for controllers run in a network namespace of their own (operators.py); else on 127.0.0.1."""
    c = Cluster(name, STATE / name)
    if (c.dir / "pids").exists() and alive(c):
        return c
    for sub in ("logs", "pids", "etcd"):
        (c.dir / sub).mkdir(parents=True, exist_ok=True)
    pki(c.dir / "pki")
    p = c.dir / "pki"
    etcd_port, peer, api = free_port(), free_port(), free_port()
    _start(c, "etcd", [str(need("etcd")), "--data-dir", str(c.dir / "etcd"), "--name", name,
                       "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
                       "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
                       "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                       "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                       "--initial-cluster", f"{name}=http://127.0.0.1:{peer}",
                       "--unsafe-no-fsync", "--quota-backend-bytes", str(2 << 30)])
    _start(c, "kube-apiserver", [
        str(need("kube-apiserver")), f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        f"--bind-address={'0.0.0.0' if bind_all else '127.0.0.1'}", "--advertise-address=127.0.0.1",
        f"--secure-port={api}",
        f"--cert-dir={p}", f"--tls-cert-file={p}/apiserver.crt", f"--tls-private-key-file={p}/apiserver.key",
        f"--client-ca-file={p}/ca.crt", "--authorization-mode=Node,RBAC",
        "--service-account-issuer=https://kubernetes.default.svc", f"--service-account-key-file={p}/sa.pub",
        f"--service-account-signing-key-file={p}/sa.key", f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--allow-privileged=true", "--enable-priority-and-fairness=false", "--endpoint-reconciler-type=none"])
    c.kubeconfig.write_text(kubeconfig(c.dir, name, api))
    _ready(c, api)
    kc = str(c.kubeconfig)
    _start(c, "kube-controller-manager", [
        str(need("kube-controller-manager")), f"--kubeconfig={kc}", "--leader-elect=false",
        f"--service-account-private-key-file={p}/sa.key", f"--root-ca-file={p}/ca.crt",
        f"--cluster-signing-cert-file={p}/ca.crt", f"--cluster-signing-key-file={p}/ca.key",
        "--use-service-account-credentials=false", "--controllers=*,-nodeipam,-service-lb-controller",
        "--bind-address=127.0.0.1", f"--secure-port={free_port()}", f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}"])
    _start(c, "kube-scheduler", [
        str(need("kube-scheduler")), f"--kubeconfig={kc}", "--leader-elect=false",
        "--bind-address=127.0.0.1", f"--secure-port={free_port()}", f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}"])
    # KAI v0.17.0 is not served by the module proxy: pods that name `kai-scheduler` are placed by a
    # second kube-scheduler under that name (placement and DRA allocation, no gangs, no queues). It
    # bin-packs as KAI does by default (its `binpack` placement strategy): MostAllocated on the CPU and
    # memory our pods request per GPU (render/pod.py). kube-scheduler's default, LeastAllocated,
    # spreads 1-GPU pods over every node and leaves no whole node for a multi-node replica the plan
    # placed, which KAI would not do.
    (c.dir / "kai-standin.yaml").write_text(json.dumps({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False}, "clientConnection": {"kubeconfig": kc},
        "profiles": [{"schedulerName": KAI_STANDIN, "pluginConfig": [{"name": "NodeResourcesFit", "args": {
            "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1},
                                                                        {"name": "memory", "weight": 1}]}}}]}]}))
    _start(c, "kai-standin-scheduler", [
        str(need("kube-scheduler")), f"--config={c.dir / 'kai-standin.yaml'}",
        "--bind-address=127.0.0.1", f"--secure-port={free_port()}", f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}"])
    # KWOK manages only the nodes tools/e2e/nodes.py annotates; its pod stages (kwok_stages) make their
    # pods Running and Ready once bound; its default node stages keep the nodes Ready
    # (kwok pkg/kwok/cmd/root.go L160-182: defaults per resource kind the config gives no stage for).
    (c.dir / "kwok-stages.yaml").write_text(kwok_stages())
    _start(c, "kwok", [
        str(need("kwok")), f"--kubeconfig={kc}", f"--config={c.dir / 'kwok-stages.yaml'}", "--manage-all-nodes=false",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", f"--cidr={POD_CIDR}",
        "--node-ip=10.244.0.1", f"--server-address=127.0.0.1:{free_port()}", "--node-lease-duration-seconds=40"])
    (c.dir / "versions.json").write_text(json.dumps(versions(), indent=2))
    return c


def versions() -> dict:
    spec = build.COMPONENTS
    return {n: spec[k]["version"] for k in ("etcd", "kubernetes", "kwok")
            for n in spec[k]["binaries"] if n != "kubectl"}


def alive(c: Cluster) -> bool:
    pids = list((c.dir / "pids").glob("*"))
    return bool(pids) and all(_running(int(f.read_text())) for f in pids)


def _running(pid: int) -> bool:
    try:       # our own child: reap it, or an exited one stays a zombie that kill(0) calls alive
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass   # started by another process (`cluster.py up` earlier): kill(0) tells
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def stop(c: Cluster, process: str) -> None:
    f = c.dir / "pids" / process
    if f.exists():
        pid = int(f.read_text())
        try:
            os.killpg(pid, signal.SIGTERM)
        except OSError:
            pass
        for _ in range(50):
            if not _running(pid):
                break
            time.sleep(0.1)
        else:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        f.unlink()


def down(name: str, keep: bool = False) -> None:
    import shutil
    c = Cluster(name, STATE / name)
    if (c.dir / "pids").exists():
        # Controllers first, the API server next, etcd last.
        order = sorted((f.name for f in (c.dir / "pids").iterdir()),
                       key=lambda n: {"etcd": 2, "kube-apiserver": 1}.get(n, 0))
        for proc in order:
            stop(c, proc)
    if not keep:
        shutil.rmtree(c.dir, ignore_errors=True)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("up", "down"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    names = argv[1:] or ["local"]
    if argv[0] == "down":
        for n in names:
            down(n)
            print(f"cluster {n}: stopped")
        return 0
    for n in names:
        c = up(n)
        print(f"cluster {n}: up; kubeconfig {c.kubeconfig}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

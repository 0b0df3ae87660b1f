"""Optional cross-check, outside the test suite: the dev and prod stacks' rendered objects
through an independent validator, `validate_manifests.py` of a `shared/` folder beside the clone
(given our copies of the kinds its collection lacks: cert-manager, GKE networking, Envoy Gateway's
EnvoyProxy and BackendTrafficPolicy, Kubernetes RBAC and PodDisruptionBudget; each with its source in schemas/SOURCES.md).

    python tools/crosscheck_shared.py [SHARED_DIR]       # make crosscheck

Exit 0 when every object passes, 1 when one fails, 2 when there is no such validator.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What the shared collection has no schema for, as files of ours (its --schemas takes folders).
EXTRA = ("cert-manager", "gke-networking", "envoy-gateway/gateway.envoyproxy.io_envoyproxies.json",
         "envoy-gateway/gateway.envoyproxy.io_backendtrafficpolicies.json",
         "kubernetes/v1.35/apis__rbac.authorization.k8s.io__v1_openapi.json",
         "kubernetes/v1.35/apis__policy__v1_openapi.json")


def main(argv: list[str]) -> int:
    shared = Path(argv[0]) if argv else ROOT.parent / "shared"
    tool = shared / "tools" / "validate_manifests.py"
    if not tool.exists():
        print(f"no independent validator at {tool}", file=sys.stderr)
        return 2
    worst = 0
    ours = Path(tempfile.mkdtemp(prefix="mp-extra-schemas-"))
    for name in EXTRA:
        src, dst = ROOT / "schemas" / name, ours / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
    extra = ["--schemas", str(ours)]
    for stack in ("dev", "prod"):
        with tempfile.TemporaryDirectory() as out:
            planned = subprocess.run([sys.executable, "-m", "modelplane", "plan", stack, "--out", out],
                                     capture_output=True, text=True, cwd=ROOT)
            if planned.returncode != 0:
                print(f"plan {stack} failed:\n{planned.stderr}", file=sys.stderr)
                return 1
            checked = subprocess.run([sys.executable, str(tool), *extra, out], capture_output=True, text=True)
            bad = [line for line in checked.stdout.splitlines() if not line.startswith("ok ")]
            print(f"{stack}: {len(checked.stdout.splitlines()) - len(bad)} objects pass"
                  + "".join(f"\n  {line}" for line in bad))
            worst = max(worst, checked.returncode)
    shutil.rmtree(ours)
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""`make cluster` / `make cluster-down`: the e2e control plane for trying `modelplane up` by hand.

    python tools/e2e/local.py up [--stack-file F] [--pools-of CLUSTER]
    python tools/e2e/local.py down

`up` starts one loopback cluster named "local" with the CRDs, namespaces and controllers the e2e
tests use (no operator controllers yet: tools/e2e/operators.md), and GPU nodes shaped like the pools of CLUSTER in the stack file; it prints the kubeconfig
and the environment that puts the built engine first on PATH.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import build  # noqa: E402
import cluster as loopback  # noqa: E402
import crds  # noqa: E402
import nodes  # noqa: E402
import operators  # noqa: E402

NAME = "local"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="tools/e2e/local.py")
    ap.add_argument("action", choices=("up", "down"))
    ap.add_argument("--stack-file", type=Path, default=HERE.parents[1] / "tests/e2e/stacks/Pulumi.e2e.yaml")
    ap.add_argument("--pools-of", default="e2e-a")
    args = ap.parse_args(argv)
    if args.action == "down":
        loopback.down(NAME)
        print(f"cluster {NAME}: stopped and removed")
        return 0
    c = loopback.up(NAME)
    crds.install(c)
    c.apply(nodes.objects_for(args.stack_file, args.pools_of))
    operators.prepare(c)
    engine = sorted({str(build.binary(exe).parent) for exe in ("pulumi", "pulumi-resource-kubernetes")})
    print(f"cluster {NAME}: up, GPU nodes of {args.pools_of} in {args.stack_file}")
    print(f"kubeconfig: {c.kubeconfig}")
    print("put the built engine first on PATH and give the stack the kubeconfig:")
    print(f"  export PATH={os.pathsep.join(engine)}{os.pathsep}$PATH")
    print("  pulumi config set --secret --stack STACK modelplane:KEY \"$(python tools/e2e/local.py kubeconfig)\"")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["kubeconfig"]:
        print(loopback.inline_kubeconfig(loopback.STATE / NAME / "kubeconfig"))
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))

"""Optional cross-check, outside the test suite: the dev and prod stacks' rendered objects
through an independent validator, `validate_manifests.py` of a `shared/` folder beside the clone
(given our copies of the kinds its collection lacks: cert-manager, GKE networking).

    python tools/crosscheck_shared.py [SHARED_DIR]       # make crosscheck

Exit 0 when every object passes, 1 when one fails, 2 when there is no such validator.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    shared = Path(argv[0]) if argv else ROOT.parent / "shared"
    tool = shared / "tools" / "validate_manifests.py"
    if not tool.exists():
        print(f"no independent validator at {tool}", file=sys.stderr)
        return 2
    extra = [arg for d in ("cert-manager", "gke-networking") for arg in ("--schemas", str(ROOT / "schemas" / d))]
    worst = 0
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
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

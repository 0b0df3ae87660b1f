"""What `make e2e` costs on a machine that has built nothing: every component of
tools/e2e/components.toml built with an empty Go build cache and an empty binary cache.

    python benchmarks/cold_build.py [component ...]

The module cache (GOMODCACHE, the proxy's downloads) is kept: downloads depend on the network, not on
this machine. Prints per component the wall seconds and the CPU seconds of the Go toolchain (user +
system of its processes): on a machine with N idle cores a cold build takes about CPU / N, so the
CPU figure is the one to compare with CI's budget when the machine is shared. Writes
out/e2e/cold-build.json.
"""
from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools" / "e2e"))


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="mp-cold-") as tmp:
        os.environ["GOCACHE"] = str(Path(tmp) / "gocache")
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "xdg")     # build.py's binary cache
        import build                                           # reads XDG_CACHE_HOME per call

        names = argv or list(build.COMPONENTS)
        rows, total_wall, total_cpu = [], 0.0, 0.0
        for name in names:
            cpu0, t0 = _children_cpu(), time.monotonic()
            r = build.build(name, log=lambda *_: None)
            wall, cpu = time.monotonic() - t0, _children_cpu() - cpu0
            total_wall, total_cpu = total_wall + wall, total_cpu + cpu
            rows.append({"component": name, "version": r["version"], "ok": r["ok"],
                         "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                         **({"error": r["error"].strip().splitlines()[-1]} if not r["ok"] else {})})
            print(f"{name:22} {r['version']:40} {'ok' if r['ok'] else 'FAILED':6} "
                  f"wall {wall:7.1f} s  cpu {cpu:7.1f} s  (load {os.getloadavg()[0]:.1f})", flush=True)
            _write(rows, total_wall, total_cpu)       # after each component: a stopped run keeps what it measured
    cores = os.cpu_count() or 1
    print(f"{'total':22} {'':40} {'':6} wall {total_wall:7.1f} s  cpu {total_cpu:7.1f} s "
          f"(cpu / {cores} cores = {total_cpu / cores / 60:.1f} min)")
    return 0 if all(r["ok"] for r in rows) else 1


def _write(rows: list[dict], wall: float, cpu: float) -> None:
    out = ROOT / "out" / "e2e"
    out.mkdir(parents=True, exist_ok=True)
    (out / "cold-build.json").write_text(json.dumps(
        {"components": rows, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "cores": os.cpu_count(),
         "load": round(os.getloadavg()[0], 1)}, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

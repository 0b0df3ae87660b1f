"""Build the real engine and control plane from the Go module proxy, cached by version.

    python tools/e2e/build.py [NAME ...]      # all of components.toml by default

Each component is built in a scratch copy of its consumer module (mods/NAME: our go.mod and go.sum)
into $XDG_CACHE_HOME/modelplane/e2e/NAME/KEY/, where KEY is the version and a digest of the module
files: a second run with the same pins builds nothing. A component that fails to build is recorded
with its error (out/e2e/build.json) and the others still build; the exit status is 1 if any failed.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
COMPONENTS = tomllib.loads((HERE / "components.toml").read_text())


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "modelplane" / "e2e"


def key(name: str) -> str:
    spec = COMPONENTS[name]
    # What the binaries are made of, not the prose about them (`why`, `wants`).
    made_of = {k: spec.get(k) for k in ("version", "binaries", "ldflags", "prepare")}
    h = hashlib.sha256(json.dumps(made_of, sort_keys=True).encode())
    for f in sorted((HERE / spec["mod"]).iterdir()):
        if f.is_file():
            h.update(f.name.encode() + f.read_bytes())
    return f"{spec['version']}-{h.hexdigest()[:12]}"


def bin_dir(name: str) -> Path:
    return cache_root() / name / key(name)


def binary(exe: str) -> Path | None:
    """The cached path of one executable (e.g. 'kube-apiserver'), or None if not built."""
    for name, spec in COMPONENTS.items():
        if exe in spec["binaries"]:
            p = bin_dir(name) / exe
            return p if p.exists() else None
    raise KeyError(exe)


def module_dir(module: str, version: str) -> Path:
    """Where the module cache holds MODULE@VERSION (downloading it first); RuntimeError if refused."""
    out = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"], capture_output=True, text=True)
    info = json.loads(out.stdout or "{}")
    if out.returncode != 0 or "Dir" not in info:
        raise RuntimeError(f"{module}@{version}: {info.get('Error') or out.stderr.strip()}")
    return Path(info["Dir"])


def provider_schema(work: Path, spec: dict) -> None:
    """What upstream's `go generate` writes beside its main: the schema with the release version."""
    src = module_dir("github.com/pulumi/pulumi-kubernetes/provider/v4", spec["version"]) / "cmd/pulumi-resource-kubernetes"
    schema = json.loads((src / "schema.json").read_text())
    schema["version"] = spec["wants"]
    (work / "schema-embed.json").write_text(json.dumps(schema, separators=(",", ":")))
    mapping = json.loads((src / "terraform-mapping.json").read_text())
    (work / "terraform-mapping-embed.json").write_text(json.dumps(mapping, separators=(",", ":")))


PREPARE = {"provider_schema": provider_schema}


def build(name: str, log=print) -> dict:
    spec = COMPONENTS[name]
    dest = bin_dir(name)
    record = {"version": spec["version"], "wants": spec.get("wants", spec["version"]),
              "binaries": sorted(spec["binaries"]), "dir": str(dest)}
    if spec.get("why"):
        record["why"] = spec["why"]
    if all((dest / exe).exists() for exe in spec["binaries"]):
        return record | {"ok": True, "cached": True, "seconds": 0}
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"mp-e2e-{name}-") as tmp:
        work = Path(tmp) / "mod"
        shutil.copytree(HERE / spec["mod"], work)
        try:
            if spec.get("prepare"):
                PREPARE[spec["prepare"]](work, spec)
            stage = Path(tmp) / "bin"
            for exe, pkg in spec["binaries"].items():
                log(f"e2e build: {name} {spec['version']}: {exe}")
                flags = spec.get("ldflags", "").format(version=spec["version"])
                cmd = ["go", "build", "-trimpath", "-o", str(stage / exe), f"-ldflags={flags}", pkg]
                run = subprocess.run(cmd, cwd=work, capture_output=True, text=True,
                                     env=os.environ | {"CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"})
                if run.returncode != 0:
                    tail = (run.stderr or run.stdout).strip().splitlines()[-15:]
                    return record | {"ok": False, "cached": False, "seconds": round(time.monotonic() - start),
                                     "error": f"go build {pkg} failed:\n" + "\n".join(tail)}
        except (RuntimeError, OSError, KeyError, ValueError) as exc:
            return record | {"ok": False, "cached": False, "seconds": round(time.monotonic() - start),
                             "error": f"{type(exc).__name__}: {exc}"}
        dest.parent.mkdir(parents=True, exist_ok=True)
        partial = dest.with_name(dest.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(stage, partial)
        shutil.rmtree(dest, ignore_errors=True)
        partial.rename(dest)
    return record | {"ok": True, "cached": False, "seconds": round(time.monotonic() - start)}


def main(argv: list[str]) -> int:
    names = argv or list(COMPONENTS)
    unknown = [n for n in names if n not in COMPONENTS]
    if unknown:
        print(f"e2e build: unknown component(s) {', '.join(unknown)}; known: {', '.join(COMPONENTS)}",
              file=sys.stderr)
        return 2
    if shutil.which("go") is None:
        print("e2e build: needs the Go toolchain (go) on PATH", file=sys.stderr)
        return 2
    out = ROOT / "out" / "e2e"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "build.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    for name in names:
        results[name] = build(name)
        r = results[name]
        state = "cached" if r.get("cached") else ("built in %ss" % r["seconds"] if r["ok"] else "FAILED")
        print(f"e2e build: {name} {r['version']}: {state}")
        if not r["ok"]:
            print("  " + r["error"].replace("\n", "\n  "), file=sys.stderr)
        path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    return 0 if all(results[n]["ok"] for n in names) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

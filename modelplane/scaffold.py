"""`modelplane init`: a minimal project of your own in an empty folder: Pulumi.yaml (a Python
program whose stacks live in stacks/), the program's entry point, the requirements line (one a CI
runner can install), a .gitignore, and a dev stack with one GKE cluster and one model that
`modelplane plan dev` plans at once."""
from __future__ import annotations

import re
from pathlib import Path

from . import __version__
from .errors import InputError, Problem

PROGRAM = '''"""Pulumi entry point: modelplane's config-driven program plans and deploys the stack files in stacks/."""
import modelplane.engine.program

modelplane.engine.program.main()
'''

DEV_STACK = '''# dev: one GKE cluster with an L4 pool, and one model on it. Plan it offline:
#   modelplane plan dev
# Every key: `modelplane schema --out stack.schema.json` (a JSON Schema for your editor).
config:
  gcp:project: my-gcp-project            # your Google Cloud project
  modelplane:clusters:
    - name: dev-gke
      labels: {modelplane.ai/cloud: gcp, modelplane.ai/region: us-central1}
      gke: {project: my-gcp-project, region: us-central1, version: "1.34"}
      nodePools:
        - {name: l4, class: gke-l4-1x-g2, minNodes: 0, maxNodes: 2, zones: [us-central1-a]}
      queues:
        - {namespace: ml, gpuQuota: 8}
  modelplane:deployments:
    - name: qwen3-8b
      namespace: ml
      model: {uri: hf://Qwen/Qwen3-8B}
      replicas: 1
      workers: {count: 1, topology: {tensor: 1}}
'''


def project_name(folder: Path) -> str:
    """A Pulumi project name from the folder's (letters, digits, '-', '_' and '.')."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", folder.resolve().name).strip("-.")
    return name or "modelplane-project"


def _git(folder: str, *args: str) -> str:
    import subprocess

    try:
        done = subprocess.run(["git", "-C", folder, *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def requirement() -> str:
    """The requirement line for the modelplane running now, one a CI runner can install too: a VCS
    commit where pip installed it from one (PEP 610's direct_url.json) or from a clone with a
    remote; a URL pip can fetch; else this version from the package index, with a comment naming
    the local file it came from (a runner has no such file)."""
    import json
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    try:
        origin = json.loads(metadata.distribution("modelplane").read_text("direct_url.json") or "null")
    except (metadata.PackageNotFoundError, ValueError):
        origin = None
    pinned = f"modelplane=={__version__}"
    if not isinstance(origin, dict) or not isinstance(origin.get("url"), str):
        return pinned
    vcs = origin.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") and vcs.get("commit_id"):
        return f"modelplane @ {vcs['vcs']}+{origin['url']}@{vcs['commit_id']}"
    url = origin["url"]
    if not url.startswith("file:"):
        return f"modelplane @ {url}"
    local = unquote(urlparse(url).path)
    remote, commit = _git(local, "remote", "get-url", "origin"), _git(local, "rev-parse", "HEAD")
    if remote and commit and "://" in remote and not remote.startswith("file:"):
        return f"modelplane @ git+{remote}@{commit}"
    return (f"# installed here from {url}, which a CI runner does not have: publish that wheel to your package\n"
            f"# index (this line then installs it), or name a commit: modelplane @ git+https://HOST/REPO@COMMIT\n"
            f"{pinned}")


GITIGNORE = """# modelplane and Pulumi: local state (`modelplane up` without a backend), virtualenvs, plan output
.pulumi-state/
venv/
.venv/
__pycache__/
out/
"""

# What may already be in the folder `init` writes into: git's folder and a virtualenv made first.
ALLOWED = (".git", ".venv", "venv")


def files(folder: Path) -> dict[str, str]:
    """What `init` writes, by path relative to the folder (Pulumi.yaml names the virtualenv already
    there, `.venv` or `venv`)."""
    venv = ".venv" if (folder / ".venv").is_dir() and not (folder / "venv").is_dir() else "venv"
    return {
        ".gitignore": GITIGNORE,
        "Pulumi.yaml": (f"name: {project_name(folder)}\n"
                        "description: LLM inference on GPU fleets with modelplane\n"
                        f"runtime:\n  name: python\n  options:\n    toolchain: pip\n    virtualenv: {venv}\n"
                        "stackConfigDir: stacks\n"),
        "__main__.py": PROGRAM,
        "requirements.txt": requirement() + "\n",
        "stacks/Pulumi.dev.yaml": DEV_STACK,
    }


def init(folder: Path) -> list[str]:
    """Write a minimal project into `folder` (created if missing; it may hold a .git and a virtualenv,
    nothing else); return the files written. InputError, and nothing written, if it holds more."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputError([Problem(str(folder), "FOLDER", "is a file, not a folder", "name a new or empty folder")])
    there = sorted(p.name for p in folder.iterdir() if p.name not in ALLOWED) if folder.exists() else []
    if there:
        raise InputError([Problem(str(folder), "FOLDER", f"the folder is not empty ({', '.join(there[:5])}"
                                  f"{', ...' if len(there) > 5 else ''})",
                                  "run `modelplane init` in a new or empty folder (a .git and a .venv may be there); "
                                  "an existing project only needs "
                                  "modelplane in its requirements and stack files in its stackConfigDir")])
    written = []
    for name, text in files(folder).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(name)
    return written

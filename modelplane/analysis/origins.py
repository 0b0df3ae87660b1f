"""Where a policy verdict comes from in the user's files: the stack-file entry (a deployment, a
service, a cluster or one of its node pools, the DNS settings) whose settings made the resource
the verdict names. CI points its annotations there (`plan --format sarif`)."""
from __future__ import annotations

from pathlib import Path

from ..api.loader import NAMESPACE, read_yaml, stack_source
from .changes import POOL_TYPES
from ..errors import InputError
from ..policy.serving import quota_subject
from ..engine.references import infra_file


def _records(run) -> tuple[dict, dict]:
    """(urn -> record, name -> the first record of that name): looked up per verdict, built once."""
    by_urn, by_name = {}, {}
    for r in run.records:
        by_urn[r.urn] = r
        by_name.setdefault(r.name, r)
    return by_urn, by_name


def _entry(records: tuple[dict, dict], name: str | None):
    """(key of the config list, entry name, pool name or None) for the resource `name`, from the
    component it belongs to; None for a stack-wide verdict. `records`: `_records(run)`."""
    by_urn, by_name = records
    record = by_name.get(name)
    pool = None
    while record is not None:
        kind = record.type.rsplit(":", 1)[-1]
        if record.type in POOL_TYPES:
            pool = record.name
        elif record.type == "modelplane:index:InferenceCluster":
            return "clusters", record.name, pool[len(record.name) + 1:] if pool else None
        elif kind in ("ModelDeployment", "ModelService") and record.type.startswith("modelplane:"):
            return ("deployments" if kind == "ModelDeployment" else "services"), record.name, None
        elif record.type == "modelplane:index:ServiceDns":
            return "dns", None, None
        record = by_urn.get(record.parent)
    return None


def _where(src, key_name: str, index=None, *rest):
    """(file, YAML path, line) of config.<key>[index]... in `src`, with the key as the file writes it."""
    config = src.data.get("config") if isinstance(src.data, dict) else None
    config = config if isinstance(config, dict) else {}
    key = next((k for k in (f"{NAMESPACE}:{key_name}", key_name) if k in config), f"{NAMESPACE}:{key_name}")
    parts = [p for p in (index, *rest) if p is not None]
    path = "config." + key + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)
    return src.file, path, src.line(("config", key, *parts))


def _index(items, name: str, keyed) -> int | None:
    return next((i for i, item in enumerate(items or []) if isinstance(item, dict) and keyed(item) == name), None)


def _declared(files, cluster: str):
    """(file, its clusters list, index) of the first file that declares `cluster`, or None."""
    for src in files:
        config = src.data.get("config") if isinstance(src.data, dict) else None
        for key in (f"{NAMESPACE}:clusters", "clusters"):
            items = (config or {}).get(key) if isinstance(config, dict) else None
            i = _index(items, cluster, lambda c: c.get("name"))
            if i is not None:
                return src, items, i
    return None


def _cluster_entry(files, cluster: str, pool: str | None):
    if not (found := _declared(files, cluster)):
        return None
    src, items, i = found
    j = _index(items[i].get("nodePools"), pool, lambda p: p.get("name")) if pool else None
    return _where(src, "clusters", i, *(("nodePools", j) if j is not None else ()))


def _queue_entry(files, cluster: str, queue: str):
    """The gpuQuota of `queue` on `cluster`, in the file that declares the cluster."""
    if not (found := _declared(files, cluster)):
        return None
    src, items, i = found
    j = _index(items[i].get("queues"), queue, lambda q: q.get("namespace"))
    return _where(src, "clusters", i, *(("queues", j, "gpuQuota") if j is not None else ()))


def locate(run, path: Path | None, violations: list[dict]) -> list[dict]:
    """Each violation with the `file`, `path` (YAML path) and `line` of the stack-file entry it
    comes from; a stack-wide verdict points at the file's `config:`. Without a stack file (a
    program planned with --program) violations are returned as they are."""
    if path is None:
        return [dict(v) for v in violations]
    try:
        src = stack_source(Path(path))
        infra = [read_yaml(infra_file(name, Path(path).parent)) for name in run.result.spec.fleet]
    except InputError:      # the files were read once already; a change under our feet keeps the bare verdicts
        return [dict(v) for v in violations]
    spec = run.result.spec
    components = {f"{md.namespace}-{md.name}": i for i, md in enumerate(spec.deployments)}
    services = {f"{s.namespace}-{s.name}": i for i, s in enumerate(spec.services)}
    records = _records(run)
    out = []
    for v in violations:
        entry = _entry(records, v.get("resource"))
        where = None
        if entry and entry[0] == "deployments" and entry[1] in components:
            where = _where(src, "deployments", components[entry[1]])
        elif entry and entry[0] == "services" and entry[1] in services:
            where = _where(src, "services", services[entry[1]])
        elif entry and entry[0] == "dns":
            where = _where(src, "dns")
        elif v.get("policy") == "queue-quota" and quota_subject(v.get("message") or ""):
            where = _queue_entry([src, *infra], *quota_subject(v["message"]))
        elif entry and entry[0] == "clusters":
            where = _cluster_entry([src, *infra], entry[1], entry[2])
        if where is None:
            where = (src.file, "config", src.line(("config",)) or 1)
        file, yaml_path, line = where
        out.append({**v, "file": file, "path": yaml_path, "line": line})
    return out


"""What the infra stacks a stack names would export, planned offline from their own files (both
plan engines read StackReferences from this). An infra stack's file is Pulumi.<infra>.yaml beside
the stack file that names it, or in the project's stack folder."""
from __future__ import annotations

from pathlib import Path

from ..api import load_stack
from ..api.loader import NAMESPACE, catalog_of, display_path, read_yaml
from ..api.project import current
from ..errors import InputError, Problem, did_you_mean
from .fleet import inventory_of
from .records import OFFLINE_KUBECONFIG


def infra_file(name: str, beside: Path) -> Path | None:
    """An infra stack's file: Pulumi.<name>.yaml beside the stack file that names it, else in the
    project's stack folder (a copy of an apps stack still finds the project's infra stacks)."""
    for folder in (Path(beside), current().stacks):
        if (folder / f"Pulumi.{name}.yaml").exists():
            return folder / f"Pulumi.{name}.yaml"
    return None


def cluster_declaration(stack: str, cluster: str, beside: Path) -> tuple[str, str, int | None] | None:
    """(file, YAML path, line) of `cluster`'s entry in the file of infra stack `stack`, if it has one."""
    path = infra_file(stack, beside)
    if path is None:
        return None
    src = read_yaml(path)
    config = src.data.get("config") if isinstance(src.data, dict) else None
    for key in (f"{NAMESPACE}:clusters", "clusters"):
        items = config.get(key) if isinstance(config, dict) else None
        for j, item in enumerate(items if isinstance(items, list) else []):
            if isinstance(item, dict) and item.get("name") == cluster:
                return display_path(path), f"config.{key}[{j}].name", src.line(("config", key, j, "name"))
    return None


def fleet_references(spec, catalog, path: Path) -> dict[str, dict]:
    """Plan each infra stack of `modelplane:fleet` from its own file; name the fleet entry (file,
    line) whose stack file is missing."""
    folder = Path(path).parent
    missing = [(i, name) for i, name in enumerate(spec.fleet) if infra_file(name, folder) is None]
    if missing:
        src = read_yaml(Path(path))
        config = src.data.get("config") if isinstance(src.data, dict) else None
        key = next((k for k in (f"{NAMESPACE}:fleet", "fleet") if isinstance(config, dict) and k in config),
                   f"{NAMESPACE}:fleet")
        places = sorted({folder.resolve(), current().stacks.resolve()})
        known = sorted({p.name[len("Pulumi."):-len(".yaml")] for d in places for p in d.glob("Pulumi.*.yaml")})
        problems = []
        for i, name in missing:
            guess = did_you_mean(name, known)
            problems.append(Problem(display_path(Path(path)), f"config.{key}[{i}]",
                                    f"fleet names stack {name!r}, which has no Pulumi.{name}.yaml beside this file or "
                                    f"in the project's stacks ({', '.join(display_path(d) for d in places)})",
                                    f"did you mean {guess!r}?" if guess else
                                    f"put the infra stack's file there; stacks there: {', '.join(known) or '(none)'}",
                                    src.line(("config", key, i))))
        raise InputError(problems)
    return {name: infra_stack(name, infra_file(name, folder)) for name in spec.fleet}


def infra_references(names) -> dict[str, dict]:
    """What each infra stack would export, planned from its file in the project's stack folder."""
    return {name: infra_stack(name, current().stack_file(name)) for name in names}


def infra_stack(name: str, path: Path) -> dict:
    """What one infra stack would export, planned from its own file (kubeconfigs stand in)."""
    catalog = catalog_of((read_yaml(path).data or {}).get("config"))
    infra = load_stack(path, catalog)
    invs = [inventory_of(c, catalog) for c in sorted(infra.clusters, key=lambda c: c.name)]
    # Gateway addresses exist once the infra stack is up; offline they are named, not known.
    return {"inventory": invs, "kubeconfigs": {inv["name"]: OFFLINE_KUBECONFIG for inv in invs},
            "gateways": {inv["name"]: f"(gateway address exported by stack {name})" for inv in invs}}


def fleet_users(stack: str, beside: Path | None) -> list[tuple[str, Path]]:
    """The apps stacks whose `modelplane:fleet` names infra stack `stack`: their files beside
    `beside` (the infra stack's file) or in the project's stack folder, by name, the first found."""
    found: dict[str, Path] = {}
    for folder in ([Path(beside).parent] if beside else []) + [current().stacks]:
        for path in sorted(Path(folder).glob("Pulumi.*.yaml")):
            name = path.name[len("Pulumi."):-len(".yaml")]
            data = read_yaml(path).data if name not in found else None
            config = data.get("config") if isinstance(data, dict) else None
            fleet = next((config[k] for k in (f"{NAMESPACE}:fleet", "fleet") if isinstance(config, dict) and k in config), [])
            if isinstance(fleet, list) and stack in fleet:
                found[name] = path
    return sorted(found.items())


"""What the infra stacks a stack names would export, planned offline from their own files (both
plan engines read StackReferences from this)."""
from __future__ import annotations

from pathlib import Path

from .api import load_stack, stack_file
from .api.loader import catalog_of, display_path, read_yaml, stack_names
from .errors import InputError, Problem, did_you_mean
from .fleet import inventory_of
from .records import OFFLINE_KUBECONFIG, PROJECT


def fleet_references(spec, catalog, path: Path) -> dict[str, dict]:
    """Plan each infra stack of `modelplane:fleet` from its own file; name the reference if one is missing."""
    problems = []
    known = stack_names()
    for i, name in enumerate(spec.fleet):
        if not stack_file(name).exists():
            guess = did_you_mean(name, known)
            problems.append(Problem(display_path(path), f"config.{PROJECT}:fleet[{i}]",
                                    f"fleet names stack {name!r}, which has no stacks/Pulumi.{name}.yaml",
                                    f"did you mean {guess!r}?" if guess else f"stacks here: {', '.join(known)}"))
    if problems:
        raise InputError(problems)
    return infra_references(spec.fleet)


def infra_references(names) -> dict[str, dict]:
    """What each infra stack would export, planned from its own file (kubeconfigs stand in)."""
    refs = {}
    for name in names:
        catalog = catalog_of((read_yaml(stack_file(name)).data or {}).get("config"))
        infra = load_stack(stack_file(name), catalog)
        invs = [inventory_of(c, catalog) for c in sorted(infra.clusters, key=lambda c: c.name)]
        # Gateway addresses exist once the infra stack is up; offline they are named, not known.
        refs[name] = {"inventory": invs, "kubeconfigs": {inv["name"]: OFFLINE_KUBECONFIG for inv in invs},
                      "gateways": {inv["name"]: f"(gateway address exported by stack {name})" for inv in invs}}
    return refs



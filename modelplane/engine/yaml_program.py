"""A Pulumi YAML program's modelplane:index:Fleet resources, read for `plan --program` (the
provider then constructs each one as the engine would). Offline, a `${name}` in their properties
can name the program's config: a secret stands in as the offline kubeconfig, a plain value comes
from the stack's Pulumi.<stack>.yaml beside the program or the config's default. Pulumi YAML's
syntax: https://www.pulumi.com/docs/iac/languages-sdks/yaml/yaml-language-reference/ ."""
from __future__ import annotations

import re
from pathlib import Path

from ..api.loader import display_path, read_yaml
from ..errors import InputError, Problem
from .records import OFFLINE_KUBECONFIG

FLEET = "modelplane:index:Fleet"
_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_-]*)\}$")


def is_yaml(project: dict) -> bool:
    runtime = project.get("runtime")
    return (runtime.get("name") if isinstance(runtime, dict) else runtime) == "yaml"


def fleets(program_dir: Path, project: dict, stack: str) -> list[tuple[str, dict]]:
    """(resource name, properties with config references resolved) of every Fleet the program
    declares; InputError naming Pulumi.yaml's line for what cannot be planned offline."""
    path = Path(program_dir) / "Pulumi.yaml"
    src = read_yaml(path)
    shown = display_path(path)
    declared = project.get("config") or {}
    stack_file = Path(program_dir) / f"Pulumi.{stack}.yaml"
    given = ((read_yaml(stack_file).data or {}).get("config") or {}) if stack_file.exists() else {}
    name = project.get("name")

    def value_of(key: str, where: tuple):
        spec = declared.get(key) if isinstance(declared, dict) else None
        if spec is None:
            raise InputError([Problem(shown, ".".join(map(str, where)), f"${{{key}}} names no config value of the "
                                      "program", "plan offline only references to the program's `config:` values",
                                      src.line(where))])
        if isinstance(spec, dict) and spec.get("secret"):
            return OFFLINE_KUBECONFIG          # a secret's value is not read offline: a stand-in
        for k in (f"{name}:{key}", key):
            if k in given:
                return given[k]
        if isinstance(spec, dict) and "default" in spec:
            return spec["default"]
        raise InputError([Problem(shown, f"config.{key}", f"config {key!r} has no value for stack {stack!r}",
                                  f"set it in Pulumi.{stack}.yaml beside the program, or give it a default",
                                  src.line(("config", key)))])

    def resolve(value, where: tuple):
        if isinstance(value, dict):
            return {k: resolve(v, (*where, k)) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v, (*where, i)) for i, v in enumerate(value)]
        if isinstance(value, str) and "${" in value:
            match = _REFERENCE.match(value)
            if not match:
                raise InputError([Problem(shown, ".".join(map(str, where)), "an interpolation other than one "
                                          "${config} reference", "plan offline only whole ${name} references to "
                                          "the program's config", src.line(where))])
            return value_of(match[1], where)
        return value

    out = []
    for res_name, res in sorted((project.get("resources") or {}).items()):
        if isinstance(res, dict) and res.get("type") == FLEET:
            out.append((res_name, resolve(res.get("properties") or {}, ("resources", res_name, "properties"))))
    if not out:
        raise InputError([Problem(shown, "resources", f"the program declares no {FLEET} resource",
                                  f"add a resource of type {FLEET}", src.line(("resources",)) or 1)])
    return out

"""The package's layers (docs/architecture.md): no import circle between modelplane's modules, and
imports flow one way, from the CLI down to the pure core, never back up."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "modelplane"

# Each part of the package and its layer (docs/architecture.md): a module imports its own layer
# and those below it, never one above.
LAYERS = {
    # the commands: the CLI glue and the commands' own packages
    "cli": 5, "console": 5, "scaffold": 5, "startup": 5, "__main__": 5, "automation": 5, "prices": 5,
    # what a plan prints
    "output": 4,
    # the public Pulumi face: the Fleet component and its typed entries
    "sdk": 3,
    # the engine: builds, records and judges a plan (what it means, the pack's rules, sizing, Pulumi objects)
    "engine": 2, "analysis": 2, "policy": 2, "sizing": 2, "components": 2,
    # the pure core: the stack file's model, the scheduler, the renderers, upstream schemas
    "api": 1, "scheduler": 1, "render": 1, "manifests": 1,
    # leaves every layer may import: the package itself (its version), input errors, the user's cache
    "__init__": 0, "errors": 0, "usercache": 0,
}
# Imports that still run upward; the test fails on any other. Each is a debt, not a pattern: the
# core reads the fleet inventory from engine/fleet.py, the Pulumi engine runs a program's Fleet
# components for `plan --program`, and `size` reports through the commands' console.
KNOWN_UPWARD = {
    ("render.stack", "engine.fleet"), ("scheduler.explain", "engine.fleet"), ("engine.offline", "sdk"),
    ("sizing.command", "console"),
}


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)


def _imports() -> dict[str, set[str]]:
    """module (dotted, under modelplane) -> the modelplane modules it imports, anywhere in it."""
    modules = {_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in modules.items():
        here = mod.split(".") if path.name == "__init__.py" and mod != "__init__" else mod.split(".")[:-1]
        out = graph.setdefault(mod, set())
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):         # imports for type checkers only never run
            if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
                node.body = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[:len(here) - (node.level - 1)] + (node.module.split(".") if node.module else [])
                elif (node.module or "").split(".")[0] == "modelplane":
                    base = node.module.split(".")[1:]
                else:
                    continue
                for alias in node.names:
                    sub = ".".join(base + [alias.name])
                    target = sub if sub in modules else ".".join(base) or "__init__"
                    if target in modules and target != mod:
                        out.add(target)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("modelplane."):
                        target = alias.name.split(".", 1)[1]
                        if target in modules and target != mod:
                            out.add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if not state.get(nxt) and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if not state.get(node) and (found := visit(node)):
            return found
    return None


def test_no_import_circle_between_modules():
    # a circle through a function-level import counts too: it only hides the knot until run time
    assert _cycle(_imports()) is None


def test_every_part_of_the_package_has_a_layer():
    parts = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" or (p / "__init__.py").exists())}
    assert parts == set(LAYERS), "add the new module or package to LAYERS here and to docs/architecture.md"


def test_imports_flow_one_way():
    upward = set()
    for mod, targets in _imports().items():
        for target in targets:
            src, dst = mod.split(".")[0], target.split(".")[0]
            if LAYERS[dst] > LAYERS[src]:
                upward.add((mod, target))
    assert upward <= KNOWN_UPWARD, f"imports that run upward (top -> engine -> render/scheduler/api): {sorted(upward - KNOWN_UPWARD)}"
    assert KNOWN_UPWARD <= upward, f"paid back, take them out of KNOWN_UPWARD: {sorted(KNOWN_UPWARD - upward)}"


def test_the_root_holds_only_the_cli_glue_and_packages():
    modules = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert modules == ["__init__", "__main__", "cli", "console", "errors", "scaffold", "startup", "usercache"]

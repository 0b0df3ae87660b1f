"""The Pulumi program: stack config -> validated spec -> fleet -> schedule -> components.

Everything that decides which resources exist uses plain, known data (config, catalog, the
StackReference values awaited as plain data), so preview and update place identically.
"""
from __future__ import annotations

import json
from pathlib import Path

import pulumi
from pulumi.runtime import config as runtime_config

from ..api import Catalog, StackSpec, parse_stack_config, stack_file
from ..api.loader import Source, catalog_of, display_path, read_yaml
from .assemble import RUNS, Remote, assemble
from ..components.materialize import materialize
from ..render.graph import STACK_REFERENCE, key_of
from ..errors import InputError
from ..scheduler import Placement

PROJECT = "modelplane"


LAST = RUNS     # what the offline engine reads: the runs of this process, newest last


def config_values() -> dict:
    """The stack's config as a plain mapping; secret values are replaced by a {secure} marker."""
    values = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    secret = set(runtime_config.get_config_secret_keys_env()) | set(runtime_config._SECRET_KEYS.get())
    out = {}
    for key, value in sorted(values.items()):
        if key in secret:
            out[key] = {"secure": "<secret>"}
            continue
        if isinstance(value, str) and value[:1] in "[{tf":
            try:
                value = json.loads(value)
            except ValueError:
                pass
        out[key] = value
    return out


def load_spec(stack: str, catalog: Catalog, source=None) -> StackSpec:
    """Validate the config the engine gave us; the stack file (if present) only supplies line numbers."""
    path = source or stack_file(stack)
    src = read_yaml(path) if path.exists() else Source(display_path(path), None)
    return parse_stack_config(config_values(), src, catalog)


def reference_name(stack: str, organization: str | None = None) -> str:
    return f"{organization or pulumi.get_organization()}/{PROJECT}/{stack}"


async def _reference(name: str, output: str):
    ref = pulumi.StackReference(reference_name(name))
    details = await ref.get_output_details(output)
    return ref, (details.value if details.value is not None else details.secret_value)


async def run(source=None, exclude: tuple[str, ...] = ()) -> dict:
    """`source`: the stack file for error lines; `exclude`: clusters to plan without (what-if)."""
    stack = pulumi.get_stack()
    config = config_values()
    catalog = catalog_of(config)
    spec = load_spec(stack, catalog, source)
    remote, made = [], {}
    for infra in spec.fleet:
        ref, inventory = await _reference(infra, "inventory")
        key = key_of(STACK_REFERENCE, ref._name)
        made[key] = ref
        remote.append(Remote(infra, key, inventory or []))
    _, prev_doc = await _reference(stack, "placements")
    # modelplane:repack trades stickiness for packing: the previous placements are not retained.
    previous = [] if spec.repack else [Placement.from_json(p) for p in (prev_doc or [])]
    where = display_path(Path(source) if source else stack_file(stack))
    path = Path(source) if source else stack_file(stack)
    src = read_yaml(path) if path.exists() else Source(where, None)
    built = assemble(spec, catalog, where, remote, previous, exclude=exclude,
                     locate=lambda p: src.line(("config", *p)))
    return materialize(built.graph, made).value(built.outputs)


def main() -> None:
    """Entry point used by __main__.py under the Pulumi CLI."""
    async def program():
        try:
            return await run()
        except InputError as exc:
            raise pulumi.RunError(exc.render()) from None
    pulumi.run(program)

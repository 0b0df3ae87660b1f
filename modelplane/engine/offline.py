"""The offline engine: run modelplane.engine.program under Pulumi's mock runtime and record everything.

No cloud, no credentials, no `pulumi` binary. StackReferences resolve offline: the stack's own
`placements` come from `--previous`, and infra stacks named in `modelplane:fleet` are planned
from their own config files in the same run.
"""
from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pulumi
from pulumi.runtime import settings
from pulumi.runtime.mocks import MockMonitor

from . import program
from ..api import stack_file
from ..api.loader import YAML_LOADER, check_stack, display_path, read_yaml
from ..errors import InputError, Problem
from .records import _COMPUTED, OFFLINE_KUBECONFIG, ORGANIZATION, SECRET_OUTPUTS, OfflineRun, Record, _merge
from .references import fleet_references, infra_references

__all__ = ["OFFLINE_KUBECONFIG", "OfflineRun", "Record", "run", "run_program"]


class _Mocks(pulumi.runtime.Mocks):
    def __init__(self, references: dict[str, dict]):
        self.references = references
        self.inputs: dict[tuple[str, str], dict] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        if args.typ == "pulumi:pulumi:StackReference":
            stack = args.resource_id.rsplit("/", 1)[-1]
            if stack not in self.references and stack_file(stack).exists():
                # a program named this infra stack in code: plan it from its file now
                self.references.update(infra_references([stack]))
            return args.resource_id, {"outputs": self.references.get(stack, {}),
                                      "secretOutputNames": list(SECRET_OUTPUTS)}
        self.inputs[(args.typ, args.name)] = args.inputs
        # What the cloud fills in after apply (a Gateway's status, ...) stays unknown, as in a real preview.
        state = {k: v for k, v in args.inputs.items() if v is not None}
        return f"{args.name}-id", _merge(state, _COMPUTED.get(args.typ, {}))

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


class _Monitor(MockMonitor):
    def __init__(self, mocks: _Mocks):
        super().__init__(mocks)
        self.records: list[Record] = []
        self.outputs: dict[str, dict] = {}

    def RegisterResourceOutputs(self, request):
        from google.protobuf import json_format
        self.outputs[request.urn] = json_format.MessageToDict(request.outputs)
        return super().RegisterResourceOutputs(request)

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        self.records.append(Record(request.type, request.name, response.urn, request.parent,
                                   request.provider, request.custom, tuple(sorted(request.dependencies)),
                                   tuple(request.ignoreChanges), request.importId, bool(request.protect),
                                   bool(request.deleteBeforeReplace), tuple(request.replaceOnChanges),
                                   retain_on_delete=bool(request.retainOnDelete)))
        return response


def _config_for_engine(path: Path) -> tuple[dict[str, str], list[str]]:
    """Config as the Pulumi engine hands it to a program: strings, objects as JSON, secrets decrypted."""
    import yaml

    raw = (yaml.load(path.read_text(), Loader=YAML_LOADER) or {}).get("config") or {}
    config, secrets = {}, []
    for key, value in raw.items():
        full = key if ":" in key else f"{program.PROJECT}:{key}"
        if isinstance(value, dict) and set(value) == {"secure"}:
            config[full] = OFFLINE_KUBECONFIG   # ciphertext cannot be read offline; a stand-in value
            secrets.append(full)
        else:
            config[full] = value if isinstance(value, str) else json.dumps(value)
    return config, secrets


def _execute(stack: str, project: str, references: dict, config_path: Path | None, body) -> list[Record]:
    """Run `body` (a program) under mocks as a preview of `stack`; return the registered resources
    with their inputs and outputs."""
    os.environ.setdefault("PULUMI_ERROR_OUTPUT_STRING", "true")
    asyncio.set_event_loop(asyncio.new_event_loop())
    mocks = _Mocks(references)
    monitor = _Monitor(mocks)
    # Each run is its own stack: a root Stack resource of an earlier run in this process would
    # otherwise parent this run's resources (set_mocks only creates one when there is none).
    settings.ROOT.set(None)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=True, monitor=monitor,
                             organization=ORGANIZATION)
    config, secrets = _config_for_engine(config_path) if config_path and config_path.exists() else ({}, [])
    pulumi.runtime.set_all_config(config, secrets)
    program.LAST.clear()
    pulumi.runtime.test(body)()
    for record in monitor.records:
        record.inputs = mocks.inputs.get((record.type, record.name), {})
        record.outputs = monitor.outputs.get(record.urn, {})
    return monitor.records


def _construct(fleets) -> None:
    """Construct each Fleet through the component provider, as the engine does for a YAML program."""
    from pulumi.provider.experimental.component import ComponentInitError, ComponentProvider

    from ..sdk import Fleet

    provider = ComponentProvider([Fleet], "modelplane", None, "0.1.0")
    for name, props in fleets:
        try:
            provider.construct(name, "modelplane:index:Fleet", props, None)
        except ComponentInitError as exc:      # the provider wraps the component's own errors
            cause = exc.__cause__ or (exc.args[0] if exc.args else None)
            raise cause if isinstance(cause, InputError) else exc from None


def run_program(program_dir: Path, stack: str, previous: list[dict] | None = None) -> OfflineRun:
    """Execute your own Pulumi program that uses `modelplane.Fleet` under the same mocks: a Python
    program (Pulumi.yaml and __main__.py), or a YAML one whose modelplane:index:Fleet resources
    are constructed through the component provider; infra stacks it references are planned from
    the project's stacks."""
    import runpy

    from . import yaml_program

    program_dir = Path(program_dir)
    main = program_dir / "__main__.py"
    if not (program_dir / "Pulumi.yaml").exists():
        raise InputError([Problem(str(program_dir), "(program)", "not a Pulumi program directory (no Pulumi.yaml)",
                                  "point --program at a directory with Pulumi.yaml (and __main__.py for Python)")])
    project_doc = read_yaml(program_dir / "Pulumi.yaml").data
    name = project_doc.get("name") if isinstance(project_doc, dict) else None
    if not isinstance(name, str) or not name.strip():
        raise InputError([Problem(display_path(program_dir / "Pulumi.yaml"), "name", "a Pulumi project file needs a "
                                  "'name:' (text)", "start Pulumi.yaml with name: <project>", 1)])
    if yaml_program.is_yaml(project_doc):
        fleets = yaml_program.fleets(program_dir, project_doc, stack)
        body = lambda: _construct(fleets)      # noqa: E731
    elif main.exists():
        body = lambda: runpy.run_path(str(main), run_name="__main__")      # noqa: E731
    else:
        raise InputError([Problem(str(program_dir), "(program)", "not a Python or YAML Pulumi program: no "
                                  "__main__.py and Pulumi.yaml's runtime is not yaml",
                                  "plan a Python program (__main__.py) or a YAML one (runtime: yaml) that uses "
                                  "modelplane's Fleet; other languages: plan the same fleet as a stack file")])
    project = name
    records = _execute(stack, project, {stack: {"placements": previous or []}}, program_dir / f"Pulumi.{stack}.yaml",
                       body)
    if not program.LAST:
        raise InputError([Problem(str(main), "(program)", "the program built no modelplane.Fleet",
                                  "create a Fleet (from modelplane import Fleet) in the program")])
    return OfflineRun(stack, program.LAST[-1], records, ())


def run(stack: str, config_file: Path | None = None, previous: list[dict] | None = None,
        exclude: tuple[str, ...] = (), checked=None) -> OfflineRun:
    """Validate, then execute the program under mocks. Raises InputError on bad input.
    `checked`: what api.loader.check_stack already returned for this stack file."""
    path, catalog, spec = checked or check_stack(stack, config_file)   # precise errors before anything runs
    references = {stack: {"placements": previous or []}, **fleet_references(spec, catalog, path)}
    records = _execute(stack, program.PROJECT, references, path,
                       lambda: asyncio.ensure_future(program.run(path, exclude)))
    return OfflineRun(stack, program.LAST[-1], records, tuple(exclude))

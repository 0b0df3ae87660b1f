"""The multi-language package: real object and enum types for every entry, generated from the
models; the YAML and TypeScript examples use only what the schema declares; Python type checkers
see Fleet and its entries."""
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from modelplane.sdk import fleet_types, typegen
from modelplane.sdk.schema import _models

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tools" / "typecheck" / "node_modules" / ".bin"
NO_TOOLS = "needs the pinned type checkers: run `make typecheck-tools` (npm, tools/typecheck/package.json)"
TYPES = "#/types/modelplane:index:"


def _ref(prop: dict) -> str | None:
    ref = prop.get("$ref") or (prop.get("items") or {}).get("$ref") or (prop.get("additionalProperties") or {}).get("$ref")
    return ref[len(TYPES):] if ref and ref.startswith(TYPES) else ref


def _untyped() -> set[tuple[str, str]]:
    """Fields the models themselves leave free-form (`dict[str, Any]`: Helm values)."""
    from typing import Any, get_args

    out = set()
    for model in typegen.ENTRIES.values():
        for name, cls in _models(model).items():
            out |= {(name, info.alias or f) for f, info in cls.model_fields.items() if Any in get_args(info.annotation)}
    return out


def _reachable(schema: dict, names) -> set[str]:
    seen, todo, free = set(), list(names), _untyped()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for key, prop in schema["types"][f"modelplane:index:{name}"].get("properties", {}).items():
            ref = _ref(prop)
            assert ref != "pulumi.json#/Any" or (name, key) in free, f"{name}.{key} is untyped"
            if ref and ref != "pulumi.json#/Any":
                todo.append(ref)
    return seen


def test_the_generated_types_are_current():
    assert (ROOT / "modelplane" / "sdk" / "fleet_types.py").read_text() == typegen.source(), \
        "modelplane/sdk/fleet_types.py is stale: run `python -m modelplane.sdk.typegen`"


def test_every_entry_is_an_object_type_built_from_its_model(schema):
    inputs = schema["resources"]["modelplane:index:Fleet"]["inputProperties"]
    entries = {name: _ref(inputs[name]) for name in typegen.ENTRIES}
    assert entries == {name: model.__name__ for name, model in typegen.ENTRIES.items()}
    reached = _reachable(schema, entries.values())
    models = {}
    for model in typegen.ENTRIES.values():
        models.update(_models(model))
    assert {n for n in reached if schema["types"][f"modelplane:index:{n}"]["type"] == "object"} == set(models)
    for name, model in models.items():
        t = schema["types"][f"modelplane:index:{name}"]
        assert t["description"] == (inspect.cleandoc(model.__doc__) if model.__doc__ else name)
        aliases = {info.alias or f: info for f, info in model.model_fields.items()}
        assert set(t["properties"]) == set(aliases), name       # the stack file's keys, `class` included
        assert sorted(t.get("required", [])) == sorted(a for a, i in aliases.items() if i.is_required()), name


def test_closed_value_sets_are_enums_and_defaults_are_documented(schema):
    from typing import Literal, get_args, get_origin

    from modelplane.api import ModelDeployment
    from modelplane.api.cluster import Capacity

    priority = schema["types"]["modelplane:index:ModelDeployment"]["properties"]["priority"]
    enum = schema["types"][f"modelplane:index:{_ref(priority)}"]
    assert enum["type"] == "string"
    literal = ModelDeployment.model_fields["priority"].annotation
    assert get_origin(literal) is Literal and [e["value"] for e in enum["enum"]] == list(get_args(literal))
    assert "Default: \"standard\"" in priority["description"]
    capacity = schema["types"]["modelplane:index:Capacity"]["properties"]["type"]
    assert [e["name"] for e in schema["types"][f"modelplane:index:{_ref(capacity)}"]["enum"]] == [
        "OnDemand", "Spot", "Reservation", "FlexStart", "CapacityBlock"]
    assert Capacity.model_fields["type"].default == "on-demand" and 'Default: "on-demand"' in capacity["description"]
    topology = schema["types"]["modelplane:index:Topology"]["properties"]
    assert all("Default: 1." in topology[k]["description"] for k in ("tensor", "pipeline", "data", "dataLocal"))


def test_the_package_and_the_stack_file_schema_agree_on_every_key(schema):
    stack = json.loads((ROOT / "docs" / "stack.schema.json").read_text())["$defs"]
    for name in _reachable(schema, [m.__name__ for m in typegen.ENTRIES.values()]):
        t = schema["types"][f"modelplane:index:{name}"]
        if t["type"] == "object":
            assert set(t["properties"]) == set(stack[name]["properties"]), name


def check(schema: dict, type_name: str, value, path: str) -> list[str]:
    """What in `value` the package schema does not declare (keys, required keys, enum values, kinds)."""
    t = schema["types"][f"modelplane:index:{type_name}"]
    if "enum" in t:
        return [] if value in [e["value"] for e in t["enum"]] else [f"{path}: {value!r} is not one of its enum values"]
    if not isinstance(value, dict):
        return [f"{path}: not an object"]
    problems = [f"{path}.{k}: not declared" for k in value if k not in t["properties"]]
    problems += [f"{path}.{k}: required" for k in t.get("required", []) if k not in value]
    kinds = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict, "array": list}
    for key, v in value.items():
        prop = t["properties"].get(key)
        if prop is None:
            continue
        items = prop.get("items") if prop.get("type") == "array" else None
        if items is not None:
            problems += [f"{path}.{key}: not a list"] if not isinstance(v, list) else []
            for i, item in enumerate(v if isinstance(v, list) else []):
                problems += check(schema, _ref(items), item, f"{path}.{key}[{i}]") if _ref(items) else \
                    ([] if isinstance(item, kinds[items["type"]]) else [f"{path}.{key}[{i}]: not {items['type']}"])
        elif _ref(prop) and prop.get("type") != "object":
            problems += check(schema, _ref(prop), v, f"{path}.{key}")
        elif prop.get("type") and not isinstance(v, kinds[prop["type"]]):
            problems.append(f"{path}.{key}: not {prop['type']}")
    return problems


def test_the_yaml_example_is_valid_against_the_schema_types(schema):
    doc = yaml.safe_load((ROOT / "examples" / "yaml-fleet" / "Pulumi.yaml").read_text())
    props = doc["resources"]["fleet"]["properties"]
    problems = []
    for name, model in typegen.ENTRIES.items():
        entries = props.get(name, [] if name != "dns" else None)
        for i, entry in enumerate(entries if isinstance(entries, list) else [entries] if entries else []):
            problems += check(schema, model.__name__, entry, f"{name}[{i}]")
    assert problems == []
    # the checker is not vacuous
    bad = {"name": "x", "namespace": "y", "replicas": 1, "model": {"uri": "u", "tokenSecrit": "t"}, "priority": "urgent"}
    assert check(schema, "ModelDeployment", bad, "d") == ["d.model.tokenSecrit: not declared",
                                                          "d.priority: 'urgent' is not one of its enum values"]


def test_what_the_engine_delivers_comes_back_as_the_stack_files_settings(schema):
    """Other languages' inputs reach Fleet through the SDK's mapping (schema names to Python names,
    enum values to members); Fleet turns them back into the stack file's settings."""
    from pulumi.provider.experimental.component import ComponentProvider

    from modelplane.sdk import Fleet, _plain

    provider = ComponentProvider([Fleet], "modelplane", None, "0.1.0")
    raw = {"clusters": [{"name": "lab", "existing": {"kubeconfigSecret": "k", "cloud": "on-prem"},
                         "nodePools": [{"name": "h100", "class": "h100-8x", "maxNodes": 3,
                                        "capacity": {"type": "spot"}}]}],
           "deployments": [{"name": "m", "namespace": "ml", "replicas": 1, "model": {"uri": "hf://a/b"},
                            "priority": "critical"}]}
    mapped = provider.map_inputs(raw, provider._component_defs["Fleet"])
    pool = mapped["clusters"][0]["nodePools"][0]
    assert pool["class_"] == "h100-8x" and pool["capacity"]["type"] is fleet_types.CapacityType.Spot
    assert _plain(mapped) == raw


def _ts_inner(schema: dict, prop: dict, output: bool = False) -> str:
    ref = prop.get("$ref")
    if ref == "pulumi.json#/Any":
        return "any"
    if ref:
        name = ref[len(TYPES):]
        if "enum" in schema["types"][f"modelplane:index:{name}"]:
            return name
        return f"types.output.{name}" if output else f"types.input.{name}Args"
    if prop.get("type") == "array":
        return f"{_ts_type(schema, prop['items'], output)}[]"
    if prop.get("type") == "object":
        values = prop.get("additionalProperties", {"$ref": "pulumi.json#/Any"})
        return "{[key: string]: " + _ts_type(schema, values, output) + "}"
    return {"string": "string", "integer": "number", "number": "number", "boolean": "boolean"}[prop["type"]]


def _ts_type(schema: dict, prop: dict, output: bool = False) -> str:
    inner = _ts_inner(schema, prop, output)
    return inner if prop.get("plain") or output else f"pulumi.Input<{inner}>"


def declarations(schema: dict) -> str:
    """@pulumi/modelplane as `pulumi package add` generates it for TypeScript, reduced to its types:
    per object type an input interface (plain properties stay plain) and an output interface, and
    per enum a const object and the union of its values."""
    out = ['import * as pulumi from "@pulumi/pulumi";']
    inputs, outputs = [], []
    for token, t in sorted(schema["types"].items()):
        name = token.rsplit(":", 1)[1]
        if "enum" in t:
            members = "; ".join(f"readonly {e['name']}: {json.dumps(e['value'])}" for e in t["enum"])
            out += [f"export declare const {name}: {{{members}}};",
                    f"export type {name} = (typeof {name})[keyof typeof {name}];"]
            continue
        required = set(t.get("required", []))
        for target, suffix, as_output in ((inputs, "Args", False), (outputs, "", True)):
            fields = "\n".join(f"    {k}{'' if k in required else '?'}: {_ts_type(schema, p, as_output)};"
                               for k, p in sorted(t["properties"].items()))
            target.append(f"export interface {name}{suffix} {{\n{fields}\n}}")
    out.append("export declare namespace types {\nnamespace input {\n" + "\n".join(inputs) + "\n}\n"
               "namespace output {\n" + "\n".join(outputs) + "\n}\n}")
    fleet = schema["resources"]["modelplane:index:Fleet"]
    required = set(fleet.get("requiredInputs", []))
    args = "\n".join(f"    {k}{'' if k in required else '?'}: pulumi.Input<{_ts_inner(schema, p)}>;"
                     for k, p in sorted(fleet["inputProperties"].items()))
    outs = "\n".join(f"    readonly {k}: pulumi.Output<{_ts_inner(schema, p, True)}>;"
                     for k, p in sorted(fleet["properties"].items()))
    out += [f"export interface FleetArgs {{\n{args}\n}}", "export declare class Fleet {",
            "    constructor(name: string, args?: FleetArgs, opts?: pulumi.ComponentResourceOptions);", outs, "}"]
    return "\n".join(out) + "\n"


PULUMI_STUB = """
export interface Output<T> { apply<U>(f: (t: T) => U): Output<U>; }
export type Input<T> = T | Promise<T> | Output<T>;
export interface ComponentResourceOptions { parent?: unknown; }
export declare class Config { constructor(name?: string); require(key: string): string; requireSecret(key: string): Output<string>; }
"""


def _tsc(tmp_path: Path, program: str, schema: dict) -> subprocess.CompletedProcess:
    for module, text in (("pulumi", PULUMI_STUB), ("modelplane", declarations(schema))):
        (tmp_path / "node_modules" / "@pulumi" / module).mkdir(parents=True, exist_ok=True)
        (tmp_path / "node_modules" / "@pulumi" / module / "index.d.ts").write_text(text)
    (tmp_path / "index.ts").write_text(program)
    config = json.loads((ROOT / "examples" / "ts-fleet" / "tsconfig.json").read_text())
    config["compilerOptions"]["noEmit"] = True
    (tmp_path / "tsconfig.json").write_text(json.dumps(config))
    return subprocess.run([str(TOOLS / "tsc"), "-p", str(tmp_path)], capture_output=True, text=True)


@pytest.mark.skipif(not (TOOLS / "tsc").exists(), reason=NO_TOOLS)
def test_the_typescript_example_type_checks_against_the_schema(schema, tmp_path):
    example = (ROOT / "examples" / "ts-fleet" / "index.ts").read_text()
    result = _tsc(tmp_path, example, schema)
    assert result.returncode == 0, result.stdout + result.stderr
    # and the check bites: a misspelt key and a value outside an enum are errors
    wrong = example.replace('uri: "hf://Qwen/Qwen3-8B"', 'uri: "hf://Qwen/Qwen3-8B", tokenSecrit: "t"') \
                   .replace("replicas: 2,", 'replicas: 2, priority: "urgent",')
    result = _tsc(tmp_path, wrong, schema)
    assert result.returncode != 0 and "tokenSecrit" in result.stdout and '"urgent"' in result.stdout, result.stdout


def test_the_typescript_example_says_what_the_yaml_example_says(schema):
    """The two examples declare the same fleet (the YAML one is planned offline in test_sdk.py)."""
    text = (ROOT / "examples" / "ts-fleet" / "index.ts").read_text()
    doc = yaml.safe_load((ROOT / "examples" / "yaml-fleet" / "Pulumi.yaml").read_text())
    for entry in doc["resources"]["fleet"]["properties"]["deployments"]:
        assert f'name: "{entry["name"]}"' in text and f'uri: "{entry["model"]["uri"]}"' in text
        assert f'replicas: {entry["replicas"]},' in text


README_SNIPPET_MARK = "from modelplane import Fleet, FleetArgs"


def _pyright(tmp_path: Path, files: dict[str, str], python: str = sys.executable, env=None) -> subprocess.CompletedProcess:
    """pyright on `files` in a folder of their own, resolving imports as `python`'s environment does
    (no extraPaths: the package is found the way a user's checker finds it)."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "pyrightconfig.json").write_text(json.dumps({"pythonVersion": "3.11"}))
    return subprocess.run([str(TOOLS / "pyright"), "--pythonpath", python, *files], cwd=tmp_path,
                          capture_output=True, text=True, env=env)


@pytest.mark.skipif(not (TOOLS / "pyright").exists(), reason=NO_TOOLS)
def test_pyright_sees_fleet_and_checks_the_readme_and_the_python_examples(tmp_path):
    readme = (ROOT / "README.md").read_text()
    start = readme.index("```python\n", readme.index("## Use the components from your own program")) + len("```python\n")
    snippet = readme[start:readme.index("```", start)]
    assert README_SNIPPET_MARK in snippet
    wrong = snippet.replace('"tokenSecret"', '"tokenSecrit"')
    assert wrong != snippet
    typed = snippet + (
        "\nfrom modelplane import ModelDeployment\nfrom modelplane.api.deployment import ModelSource\n"
        "Fleet('typed', FleetArgs(deployments=[ModelDeployment(name='m', namespace='ml', replicas=1,"
        " model=ModelSource(uri='hf://a/b'))], clusters=[{'name': 'lab', 'existing': {'kubeconfigSecret': 'k',"
        " 'cloud': 'on-prem'}, 'nodePools': [{'name': 'h100', 'class_': 'h100-8x', 'maxNodes': 3}]}]))\n"
        "reveal_type(fleet.placements)\n")
    examples = {f"{d}.py": (ROOT / "examples" / d / "__main__.py").read_text() for d in ("prod-fleet", "two-clusters")}
    result = _pyright(tmp_path, {"readme.py": typed, "wrong.py": wrong, **examples})
    out = result.stdout
    assert 'Type of "fleet.placements" is "Output[list[Placement]]"' in out, out
    errors = [line for line in out.splitlines() if " - error" in line]
    assert errors and all("wrong.py" in line for line in errors), out
    # the README's annotated style: the error names the misspelt key
    assert '"tokenSecrit" is an undefined item in type "ModelSource"' in out, out


@pytest.mark.skipif(not (TOOLS / "pyright").exists(), reason=NO_TOOLS)
def test_pyright_resolves_the_package_as_make_installs_it(tmp_path):
    """`make plan` installs the checkout editable in the mode the Makefile names; in a fresh
    virtualenv installed that way (dependencies borrowed from this one by a .pth line, PYTHONPATH
    unset), pyright resolves modelplane and names the misspelt key of the README's annotated style."""
    import os
    import re
    import sysconfig

    mode = re.search(r"editable_mode=(\w+)", (ROOT / "Makefile").read_text()).group(1)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONWARNINGS"] = "ignore"
    from helpers import source_copy

    src = source_copy(tmp_path / "src")      # the checkout as make installs it, copied (no egg-info here)
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                           "--no-deps", "-e", str(src), "--config-settings", f"editable_mode={mode}"],
                          capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        if "No matching distribution" in done.stderr or "Could not find a version" in done.stderr:
            pytest.skip("an editable install needs setuptools from a package index, which is not reachable here")
        raise AssertionError(done.stderr)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True,
                               check=True).stdout.strip())
    (site / "zz-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp_path / "mine"
    work.mkdir()
    annotated = ("import modelplane as mp\n\n"
                 "llama: mp.fleet_types.ModelDeployment = {'name': 'llama-70b', 'namespace': 'chat', 'replicas': 3,\n"
                 "    'model': {'uri': 'hf://meta-llama/Llama-3.3-70B-Instruct', 'tokenSecrit': 'hfToken'}}\n")
    result = _pyright(work, {"mine.py": annotated}, str(venv / "bin" / "python"), env)
    assert "could not be resolved" not in result.stdout, result.stdout
    assert '"tokenSecrit" is an undefined item in type "ModelSource"' in result.stdout, result.stdout


def test_a_cluster_the_program_creates_joins_the_fleet_by_its_kubeconfig(tmp_path):
    """A gcp.container.Cluster made by the user's own program: its kubeconfig (an Output) is the
    existing cluster's secret; the plan comes from the entry's settings, the objects go to that cluster."""
    from modelplane.engine import offline

    (tmp_path / "Pulumi.yaml").write_text("name: mine\nruntime: python\n")
    (tmp_path / "__main__.py").write_text('''
import pulumi_gcp as gcp
from modelplane import Fleet, FleetArgs, kubeconfig_of

mine = gcp.container.Cluster("mine", name="mine", location="us-central1", initial_node_count=1)
Fleet("fleet", FleetArgs(
    clusters=[{"name": "mine", "existing": {"kubeconfigSecret": "mineKubeconfig", "cloud": "gcp",
                                            "region": "us-central1", "version": "1.34"},
               "nodePools": [{"name": "l4", "class_": "gke-l4-1x-g2", "minNodes": 2, "maxNodes": 2}],
               "queues": [{"namespace": "ml"}]}],
    deployments=[{"name": "qwen3-8b", "namespace": "ml", "model": {"uri": "hf://Qwen/Qwen3-8B"}, "replicas": 2,
                  "workers": {"count": 1, "topology": {"tensor": 1}}}],
    secrets={"mineKubeconfig": kubeconfig_of(mine)},
))
''')
    run = offline.run_program(tmp_path, "dev")
    assert sorted((p.deployment, p.cluster) for p in run.result.plan.placements) == [("ml/qwen3-8b", "mine")] * 2
    provider = next(r for r in run.records if r.type == "pulumi:providers:kubernetes")
    kubeconfig = provider.inputs["kubeconfig"]
    text = kubeconfig.get("value", "") if isinstance(kubeconfig, dict) else kubeconfig
    assert "https://203.0.113.10" in text and "gke-gcloud-auth-plugin" in text     # the mock's endpoint
    assert isinstance(kubeconfig, dict) and kubeconfig.get("4dabf18193072939515e22adb298388d")   # secret


def test_placements_and_unplaced_are_typed_as_the_scheduler_writes_them(schema):
    from types import MappingProxyType

    from modelplane.scheduler import Placement
    from modelplane.scheduler.model import Rejection, RolePlacement, Unplaced

    fleet = schema["resources"]["modelplane:index:Fleet"]
    assert _ref(fleet["properties"]["placements"]) == "Placement" == _ref(fleet["inputProperties"]["previous"])
    assert _ref(fleet["properties"]["unplaced"]) == "UnplacedReplica"
    assert _ref(fleet["properties"]["endpoints"]) == "ServiceEndpoint"
    placed = Placement("ml/a", 0, "c", MappingProxyType({"decode": RolePlacement("l4", 1, 1, 1)})).to_json()
    unplaced = Unplaced("ml/a", 1, (Rejection("c", "l4", "capacity", "0/4 free"),)).to_json()
    types_ = schema["types"]
    assert set(types_["modelplane:index:Placement"]["properties"]) == set(placed)
    assert set(types_["modelplane:index:RolePlacement"]["properties"]) == set(placed["roles"]["decode"])
    assert set(types_["modelplane:index:UnplacedReplica"]["properties"]) == set(unplaced)
    assert set(types_["modelplane:index:Rejection"]["properties"]) == set(unplaced["reasons"][0])


def test_the_provider_constructs_the_yaml_example_as_the_engine_delivers_it(tmp_path):
    """Through the SDK's own construct path: schema names, enum values as strings and every number
    as a float (how the engine sends them) plan exactly what the YAML example plans."""
    from modelplane.engine import offline

    doc = yaml.safe_load((ROOT / "examples" / "yaml-fleet" / "Pulumi.yaml").read_text())
    props = {**doc["resources"]["fleet"]["properties"], "secrets": {"labKubeconfig": "apiVersion: v1"}}

    def floats(v):
        if isinstance(v, bool) or not isinstance(v, (int, dict, list)):
            return v
        return float(v) if isinstance(v, int) else {k: floats(x) for k, x in v.items()} if isinstance(v, dict) \
            else [floats(x) for x in v]
    (tmp_path / "Pulumi.yaml").write_text("name: engine\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(f'''
from pulumi.provider.experimental.component import ComponentProvider
from modelplane.sdk import Fleet

provider = ComponentProvider([Fleet], "modelplane", None, "0.1.0")
provider.construct("fleet", "modelplane:index:Fleet", {floats(props)!r}, None)
''')
    run = offline.run_program(tmp_path, "dev")
    placed = sorted((p.deployment, p.cluster) for p in run.result.plan.placements)
    assert placed == [("ml/qwen3-32b", "lab"), ("ml/qwen3-8b", "lab"), ("ml/qwen3-8b", "lab")]
    assert [d.priority for d in run.result.spec.deployments] == ["standard", "critical"]


def test_the_docs_cite_nothing_outside_the_repository():
    """A user's clone has nothing beside it: docs name files of this repository or upstream URLs."""
    import re

    for path in sorted((ROOT / "docs").glob("*.md")):
        found = re.findall(r"`(?:\.\./)?shared/[^`]*`", path.read_text())
        assert not found, f"{path.name} cites {found}"

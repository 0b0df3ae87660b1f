"""`modelplane schema`: the stack file JSON Schema, published, and true to the loader."""
import json
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from modelplane.api.loader import NAMESPACE, StackSpec
from modelplane.sdk.schema import stack_schema

ROOT = Path(__file__).resolve().parents[1]
STACKS = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "bad").glob("*.yaml"))
# pydantic errors a JSON Schema can express (the rest are cross-field rules the loader checks)
STRUCTURAL = {"extra_forbidden", "missing", "literal_error", "string_pattern_mismatch", "int_type", "int_parsing",
              "string_type", "bool_parsing", "bool_type", "greater_than_equal", "less_than_equal", "greater_than",
              "too_short", "too_long", "list_type", "dict_type", "model_type", "float_parsing", "string_too_long"}


@pytest.fixture(scope="module")
def validator():
    return Draft202012Validator(stack_schema())


def test_the_published_schema_is_current():
    published = json.loads((ROOT / "docs" / "stack.schema.json").read_text())
    assert published == stack_schema(), "run: modelplane schema --out docs/stack.schema.json"
    Draft202012Validator.check_schema(published)


def test_the_schema_carries_descriptions_enums_and_defaults():
    s = stack_schema()
    md = s["$defs"]["ModelDeployment"]
    assert md["description"].startswith("A model served by replicas")
    assert md["properties"]["nodeSelector"]["description"].startswith("CEL over a class's capabilities")
    assert md["properties"]["priority"]["enum"] == ["low", "standard", "critical"]
    assert md["properties"]["backend"]["default"] == "kserve"
    assert s["$defs"]["Scaling"]["properties"]["mode"]["enum"] == ["GroupReplication", "InPlace"]


@pytest.mark.parametrize("path", STACKS, ids=[p.stem for p in STACKS])
def test_every_example_stack_passes_and_names_the_schema(path, validator):
    assert path.read_text().startswith("# yaml-language-server: $schema=../docs/stack.schema.json")
    errors = list(validator.iter_errors(yaml.safe_load(path.read_text())))
    assert errors == [], [e.message for e in errors]


def _pydantic_errors(doc):
    plain = {k.rpartition(":")[2]: v for k, v in (doc.get("config") or {}).items()
             if k.rpartition(":")[0] in ("", NAMESPACE) and not (isinstance(v, dict) and set(v) == {"secure"})}
    try:
        StackSpec.model_validate(plain)
    except ValidationError as exc:
        return exc.errors()
    return []


# Fixtures the models accept structurally and the loader refuses against the catalog, as the schema does.
CATALOG_CHECKED = {"pool-unknown-class"}


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_bad_fixtures_fail_the_schema_exactly_where_the_models_fail_structurally(path, validator):
    doc = yaml.safe_load(path.read_text())
    rejected = [e.message for e in validator.iter_errors(doc)]
    errors = _pydantic_errors(doc)
    if errors and all(e["type"] in STRUCTURAL for e in errors) or path.stem in CATALOG_CHECKED:
        assert rejected, f"{path.name}: the models reject it ({errors[0]['type']}), the schema does not"
    if not errors and path.stem not in CATALOG_CHECKED:
        assert rejected == [], f"{path.name}: the schema rejects what the models accept: {rejected}"


def test_pool_classes_are_the_catalogs(validator, tmp_path):
    from click.testing import CliRunner

    from modelplane.api import load_catalog
    from modelplane.cli import main

    enum = stack_schema()["$defs"]["NodePool"]["properties"]["class"]["enum"]
    assert enum == sorted(load_catalog().classes)
    doc = yaml.safe_load((ROOT / "tests" / "fixtures" / "bad" / "pool-unknown-class.yaml").read_text())
    [error] = [e for e in validator.iter_errors(doc) if e.validator == "enum"]
    assert error.message.startswith("'gke-l4-1x-g3' is not one of ['eks-")
    # a project's own classes join the enum
    own = tmp_path / "classes"
    own.mkdir()
    cls = yaml.safe_load((ROOT / "catalog" / "byo.yaml").read_text())["classes"][0]
    (own / "mine.yaml").write_text(yaml.safe_dump({"classes": [{**cls, "name": "my-own-class"}]}))
    result = CliRunner().invoke(main, ["schema", "--catalog-dir", str(own)])
    assert result.exit_code == 0, result.output
    assert "my-own-class" in json.loads(result.output)["$defs"]["NodePool"]["properties"]["class"]["enum"]


def test_a_typo_in_a_setting_and_a_wrong_enum_fail(validator):
    base = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())
    typo = {**base, "config": {**base["config"], "modelplane:deploymnets": []}}
    # an unknown modelplane: key must be a {secure: ...} secret, so a misspelt setting is refused
    assert any(list(e.absolute_path) == ["config", "modelplane:deploymnets"] for e in validator.iter_errors(typo))
    # and editors (errorMessage) say which settings exist instead of 'Expected "Secure"'
    secret = stack_schema()["$defs"]["Secure"]
    assert secret["errorMessage"].startswith("not a modelplane setting: the settings are modelplane:catalogDir, "
                                             "modelplane:clusters, modelplane:deployments, ")
    assert all(f"{NAMESPACE}:{k}" in secret["errorMessage"] for k in StackSpec.model_json_schema(by_alias=True)["properties"])
    bad = json.loads(json.dumps(base))
    bad["config"]["modelplane:deployments"][0]["priority"] = "urgent"
    assert any("'urgent' is not one of" in e.message for e in validator.iter_errors(bad))


def test_the_cli_prints_the_schema():
    from click.testing import CliRunner

    from modelplane.cli import main

    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0 and json.loads(result.output) == stack_schema()

"""The CLI accepts a policy's settings without jsonschema only when jsonschema would accept them
too; anything else goes to jsonschema, which words the refusal."""
import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from modelplane.policy.gate import POLICIES, PolicyConfigError, _check_properties, _surely_valid

SCHEMAS = [(name, key, schema) for name, p in sorted(POLICIES.items()) for key, schema in sorted(p.config.items())]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-5, 5, allow_nan=False),
                    st.text(max_size=3))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.text(max_size=3), inner, max_size=3)),
                      max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(value=VALUES, which=st.integers(0, len(SCHEMAS) - 1))
def test_accepted_without_jsonschema_only_what_jsonschema_accepts(value, which):
    schema = SCHEMAS[which][2]
    if _surely_valid(value, schema):
        jsonschema.validate(value, schema)


def test_the_shipped_settings_need_no_jsonschema():
    assert _surely_valid(64, {"type": "integer", "minimum": 0})
    assert _surely_valid({"ml": 12.5}, {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}})
    assert not _surely_valid(1.0, {"type": "integer", "minimum": 0})          # jsonschema decides (it accepts)
    assert not _surely_valid("x", {"type": "string", "pattern": "x"})          # a keyword it does not know


def test_a_wrong_setting_is_still_refused_with_jsonschema_words():
    with pytest.raises(PolicyConfigError) as caught:
        _check_properties("p.json", "gpu-budget", {"maxGpus": -1}, lambda path: 3)
    problem = caught.value.problems[0]
    assert (problem.path, problem.message, problem.line) == ("gpu-budget.maxGpus", "-1 is not a whole number >= 0", 3)

"""The plan document's text is json.dumps' own, byte for byte, however it is written (issue 48):
`to_json` and the streamed `write_json` (indented, the C encoder for flat containers) and the
digests' compact encoder (json's C encoder made once)."""
import json

import pytest
from hypothesis import given, settings, strategies as st

from helpers import cli
from modelplane.analysis.changes import _ENCODE, digests, floatless
from modelplane.output.report import Floatless, to_json, write_json

leaves = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True) | st.text(max_size=8)
keys = st.text(max_size=6)
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(keys, inner, max_size=4), max_leaves=30)
odd_keys = st.recursive(leaves, lambda inner: st.dictionaries(st.integers(0, 3) | keys, inner, max_size=3)
                        | st.lists(inner, max_size=3), max_leaves=12)


def _dumps(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


@settings(max_examples=120, deadline=None)
@given(st.dictionaries(keys, values, max_size=5) | values | odd_keys)
def test_the_document_text_is_json_dumps_own(value):
    pieces: list[str] = []
    write_json(value, pieces.append)
    assert to_json(value) == "".join(pieces) == _dumps(value)


@settings(max_examples=120, deadline=None)
@given(values)
def test_the_digest_text_is_json_dumps_own(value):
    assert _ENCODE(value) == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def test_a_plan_sized_document_is_written_in_pieces():
    doc = {"kind": "Plan", "resources": [{"name": f"r{i}", "fieldDigests": {"a": "x", "b": 1.5}, "dependsOn": ["p"]}
                                         for i in range(50)], "fill": {}, "nested": {"deep": [[1.0, {"k": [2]}]]}}
    pieces: list[str] = []
    write_json(doc, pieces.append)
    assert "".join(pieces) == _dumps(doc)
    assert len(pieces) >= 50 and max(map(len, pieces)) < 200      # one piece per resource, none the whole


# What orjson writes for the parts of a plan that hold no float (analysis/changes.py `floatless`).
floatless_leaves = st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.text(max_size=8)
floatless_values = st.recursive(floatless_leaves, lambda inner: st.lists(inner, max_size=4)
                                | st.dictionaries(keys, inner, max_size=4), max_leaves=30)


def test_floatless_text_is_json_own_for_every_code_point_and_integer_bound():
    compact, indented = floatless(), floatless(indent=True)
    if compact is None:
        pytest.skip("orjson is not installed (requirements.txt pins it); the json module writes every text")
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    for start in range(0, len(text), 4096):        # every code point, escaped or not, as json writes it
        chunk = text[start:start + 4096]
        assert compact(chunk) == json.dumps(chunk, ensure_ascii=False)
    for n in (0, -1, 2**53, -2**53, 2**63 - 1, -2**63):
        assert compact(n) == indented(n) == json.dumps(n)


@settings(max_examples=200, deadline=None)
@given(floatless_values)
def test_floatless_text_is_json_dumps_own(value):
    compact, indented = floatless(), floatless(indent=True)
    if compact is None:
        return
    assert compact(value) == _ENCODE(value)
    assert indented(value) == json.dumps(value, indent=2, ensure_ascii=False)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(keys, floatless_values, max_size=6))
def test_plain_digests_are_the_digests(inputs):
    same: dict = {}
    assert digests(inputs, plain=True) == digests(inputs) == digests(inputs, same, plain=True)
    assert digests(dict(inputs), same, plain=True) is digests(inputs, same, plain=True)   # met before: one answer


def test_a_plans_resources_hold_no_float_and_are_written_as_json_would():
    """The document's resources are a `Floatless` list: nothing in them may be a float, on any
    example stack; their text is json.dumps' own."""
    for stack in ("prod", "dev", "example-5p3d", "example-wide-ep"):
        doc = json.loads(cli("plan", stack, "--json").stdout)
        resources = Floatless(doc["resources"])
        stack_floats = [x for x in _leaves(doc["resources"]) if isinstance(x, float)]
        assert stack_floats == [], (stack, stack_floats[:3])
        pieces: list[str] = []
        write_json({"resources": resources}, pieces.append)
        assert "".join(pieces) == _dumps({"resources": doc["resources"]})


def _leaves(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value

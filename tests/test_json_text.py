"""The plan document's text is json.dumps' own, byte for byte, however it is written (issue 48):
`to_json` and the streamed `write_json` (indented, the C encoder for flat containers) and the
digests' compact encoder (json's C encoder made once)."""
import json

from hypothesis import given, settings, strategies as st

from modelplane.analysis.changes import _ENCODE
from modelplane.output.report import to_json, write_json

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

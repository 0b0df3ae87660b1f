"""The direct gate's props read as pulumi-policy's own proxies read them (policy/direct.py):
iterating `items()` and `values()` gives the same pairs and stops with the same unknown."""
from __future__ import annotations

import pytest
from pulumi_policy.proxy import UnknownValueError as PackUnknown, unknown_checking_proxy

from modelplane.policy.direct import UnknownValueError, lazy_props_of, props_of

UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"      # the engine's unknown string


def _read(props, how):
    out = []
    try:
        for x in how(props):
            out.append(x)
    except (UnknownValueError, PackUnknown) as exc:
        out.append(("unknown", exc.message if hasattr(exc, "message") else str(exc)))
    return out


READS = {"labels.items": lambda p: p["metadata"]["labels"].items(),
         "labels.values": lambda p: p["metadata"]["labels"].values(),
         "labels.keys": lambda p: p["metadata"]["labels"].keys(),
         "metadata.items": lambda p: p["metadata"].items()}


@pytest.mark.parametrize("read", sorted(READS))
@pytest.mark.parametrize("labels", [{"a": "1", "b": "2"}, {"a": "1", "team": UNKNOWN, "z": "3"}, {}])
def test_iterating_a_mapping_reads_as_the_pack_does(read, labels):
    how = READS[read]
    props = {"kind": "Deployment", "metadata": {"name": "x", "labels": labels}}
    pack = _read(unknown_checking_proxy({"kind": "Deployment", "metadata": {"name": "x", "labels": dict(labels)}}),
                 how)
    for convert in (props_of, lazy_props_of):
        assert _comparable(_read(convert(props), how)) == _comparable(pack)
    reached = bool(pack) and isinstance(pack[-1], tuple) and pack[-1][0] == "unknown"
    assert reached == (read in ("labels.items", "labels.values") and UNKNOWN in labels.values())


def _comparable(read: list) -> list:
    """What was read: pairs with a nested mapping by its keys, an unknown by its place."""
    out = []
    for x in read:
        if isinstance(x, tuple) and x[0] == "unknown":
            out.append("unknown")
        elif isinstance(x, tuple):
            out.append((x[0], sorted(x[1]) if hasattr(x[1], "keys") else x[1]))
        else:
            out.append(x)
    return out

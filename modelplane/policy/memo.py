"""Deserialize each resource once per analyzer request, not once per policy (runs inside the pack).

pulumi-policy's servicer (1.21) converts every resource's protobuf Struct to a proxied dict inside
its per-policy loop: one `AnalyzeStack` costs policies x resources conversions (17 x 1,093 = 18,581
for a 200-replica fleet, 83% of the call), one `Analyze` costs one per resource policy. The three
steps it calls — `json_format.MessageToDict`, `deserialize_properties`, `unknown_checking_proxy` —
are pure and their results read-only, so for the duration of one request the pack reuses them.
Verdicts do not change (tests/test_gate.py compares every example stack and fixture with and
without this). If the SDK's internals move, `install` leaves the servicer as it is.
"""
from __future__ import annotations

import functools
import threading

_local = threading.local()


def _cache() -> dict | None:
    return getattr(_local, "cache", None)


def _memo_message_to_dict(original):
    @functools.wraps(original)
    def message_to_dict(message, *args, **kwargs):
        cache = _cache()
        if cache is None or args or kwargs:
            return original(message, *args, **kwargs)
        key = ("m", type(message).__name__, message.SerializeToString(deterministic=True))
        if key not in cache:
            cache[key] = original(message)
        return cache[key]
    return message_to_dict


def _memo_by_identity(tag: str, original):
    @functools.wraps(original)
    def memoized(value, *args):
        cache = _cache()
        if cache is None:
            return original(value, *args)
        key = (tag, id(value), args)
        hit = cache.get(key)
        if hit is None:
            # Keep `value` alive with the result so its id is not reused within the request.
            hit = cache[key] = (original(value, *args), value)
        return hit[0]
    return memoized


def _per_request(method):
    @functools.wraps(method)
    def handler(self, request, context):
        _local.cache = {}
        try:
            return method(self, request, context)
        finally:
            _local.cache = None
    return handler


class _JsonFormat:
    """The servicer's `json_format` module with a memoized MessageToDict."""

    def __init__(self, module):
        self._module = module
        self.MessageToDict = _memo_message_to_dict(module.MessageToDict)

    def __getattr__(self, name):
        return getattr(self._module, name)


def install() -> bool:
    """Memoize the servicer's conversions per request; False if this SDK version does not fit."""
    try:
        from pulumi_policy import policy as sdk
    except ImportError:
        return False
    servicer = getattr(sdk, "_PolicyAnalyzerServicer", None)
    names = ("json_format", "deserialize_properties", "unknown_checking_proxy")
    if servicer is None or not all(hasattr(sdk, n) for n in names) or getattr(sdk, "_modelplane_memo", False):
        return False
    sdk.json_format = _JsonFormat(sdk.json_format)
    sdk.deserialize_properties = _memo_by_identity("d", sdk.deserialize_properties)
    sdk.unknown_checking_proxy = _memo_by_identity("p", sdk.unknown_checking_proxy)
    for name in ("Analyze", "AnalyzeStack"):
        setattr(servicer, name, _per_request(getattr(servicer, name)))
    sdk._modelplane_memo = True
    return True

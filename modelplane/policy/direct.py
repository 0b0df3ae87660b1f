"""The pack's verdicts in-process: no subprocess, no gRPC, no Pulumi SDK.

`evaluate(resources, config)` returns exactly what `gate.Analyzer.analyze` returns after
`configure(config)`: the same sorted `{"policy", "level", "message", "resource"?}` dicts. It does
to the data what the gRPC path does (pulumi-policy 1.21, protobuf 5.29 — read from their code):

- gate.py `_plain` then `Struct.update`: dict keys become strings, tuples lists, anything that is
  not JSON the unknown-string sentinel, every number (not bool) a float; NaN and infinities make
  the pack's `json_format.MessageToDict` fail, so here they are a PackError too.
- pulumi_policy/deserialize.py `deserialize_properties`: below the top level, a dict carrying the
  signature key is a secret (its `value`, unwrapped), an asset or an archive (stand-ins here, as
  `pulumi` is not imported), or an error; `proxy_secrets` is False, so no secret proxies.
- pulumi_policy/proxy.py `unknown_checking_proxy`: props are read-only-ish Mapping/Sequence
  proxies (not dict/list) that raise UnknownValueError when a sentinel is read; a policy that
  raises it gets one advisory diagnostic "can't run policy ... during preview: ..." instead.
- pulumi_policy/policy.py `_PolicyAnalyzerServicer`: disabled policies are skipped, remediate
  reports as mandatory; resource policies run on custom resources only (gate.py sends only those),
  stack policies get every resource (components and providers too) as a PolicyResource with its
  parent linked by URN; `get_config()` is the policy's properties after the Struct round trip
  (numbers floats, no schema defaults applied) or {} when it has none; a diagnostic's message is
  the description + "\\n" + the message, which gate.py takes apart again.

Props are converted once per resource and shared by every policy (the pack converts them per
policy, or once per request with memo.py); policies only read them. Props the direct engine
recorded are converted lazily, one level on its first read (`lazy_props_of`).

Most props need no conversion at all (`raw_views`). The direct engine's plain records (strings,
booleans, null, integers, dicts, lists; no unknown or secret) with text keys, and wired props
(a component's outputs, a resource's resolved inputs) holding no unknown, secret or odd type
are what the pack reads but for representation: its
numbers are doubles, its dicts and lists read-only proxies. The rules read props only by key,
index, iteration, truth and comparison, where the two answer alike (registry.py says so to
whoever writes one; tests/test_policy_direct.py compares both views on every example stack,
fixture and generated fleet). So each policy first reads those props as given; where it finds
something or fails, it runs again on the pack's view, whose verdicts and errors are the ones
returned, word for word (a number in a message is the pack's double).
"""
from __future__ import annotations

import functools
import math
from collections.abc import ItemsView, Mapping, Sequence, ValuesView

try:
    import orjson
except ImportError:     # a dependency; without it every plain record is read through the pack's view
    orjson = None

from ..engine.records import SECRET_SIG, SIG_KEY, UNKNOWN_SENTINELS, UNKNOWN_TEXT
from .gate import LEVELS, NAMES, PackError, Resource, resolve
from .registry import ADVISORY, DISABLED, MANDATORY, POLICIES
from .stackview import Resources

PACK_NAME, PACK_VERSION = "modelplane", "0.0.1"   # pulumi_policy's PolicyPack reports version 0.0.1

_UNKNOWNS = UNKNOWN_SENTINELS     # pulumi_policy/proxy.py: the sentinels and how an error names them

# pulumi_policy/deserialize.py: signatures of secrets, assets and archives.
ASSET_SIG = "c44067f5952c0a294b673a41bacd8c17"
ARCHIVE_SIG = "0def7320c3a5731c473e5ecbe6d01bc7"


class UnknownValueError(Exception):
    """pulumi_policy.proxy.UnknownValueError: a policy read a value not known during preview."""

    def __init__(self, unknown_type_sentinel: str, props: list[str]):
        super().__init__()
        self.unknown_type_sentinel = unknown_type_sentinel
        self.props = props
        self.message = f"{_UNKNOWNS[unknown_type_sentinel]} value at .{'.'.join(props)} can't be known during preview"


_ABSENT = object()


def _path(chain) -> list[str]:
    out = []
    while chain is not None:
        chain, key = chain
        out.append(key)
    return out[::-1]


def _unknown(chain, key, value):
    return UnknownValueError(value, _path((chain, str(key))))


class _Proxy:
    """What both proxies share: the target, the key chain, and a read that raises on an unknown.
    A lazy proxy holds the raw value (`_r`) and converts one level of it on its first read:
    policies read a few fields of a few resource types, so most values are never converted."""

    __slots__ = ("_t", "_c", "_r")

    def __init__(self, target, chain, raw=None):
        self._t, self._c, self._r = target, chain, raw

    def __getitem__(self, key):
        if key == "__target":
            return self._target()
        t = self._t
        v = (t if t is not None else self._load())[key]
        if v.__class__ is str and v in _UNKNOWNS:
            raise _unknown(self._c, key, v)
        return v

    def __len__(self):
        t = self._t
        return len(t if t is not None else self._load())

    def __bool__(self):         # truthiness needs no conversion: `props.get("spec") or {}` is common
        t = self._t
        return bool(t if t is not None else self._r)

    def _target(self):
        t = self._t
        return t if t is not None else self._load()


class DictProxy(_Proxy, Mapping):
    """pulumi_policy.proxy._DictProxy: a Mapping (not a dict) over the deserialized props; reading
    an unknown value raises UnknownValueError. Same behaviour, fewer Python frames per read."""

    __slots__ = ()

    def _load(self) -> dict:
        chain, t = self._c, {}
        for k, v in self._r.items():
            if k.__class__ is not str:
                k = str(k)              # gate._plain: keys become strings
            c = v.__class__             # the common leaves inline, as in _lazy
            if c is str or c is bool or c is float or v is None:
                t[k] = v
            elif c is int:
                t[k] = float(v)
            else:
                t[k] = _lazy(v, (chain, k))
        self._t, self._r = t, None
        return t

    def get(self, key, default=None):
        if key == "__target":
            return self._target()
        t = self._t
        v = (t if t is not None else self._load()).get(key, _ABSENT)    # policies ask for absent keys often
        if v is _ABSENT:
            return default
        if v.__class__ is str and v in _UNKNOWNS:
            raise _unknown(self._c, key, v)
        return v

    def __contains__(self, key):
        if key == "__target":
            return True
        t = self._t
        v = (t if t is not None else self._load()).get(key, _ABSENT)
        if v is _ABSENT:
            return False
        if v.__class__ is str and v in _UNKNOWNS:
            raise _unknown(self._c, key, v)
        return True

    def __setitem__(self, key, value):
        self._target()[key] = value

    def __iter__(self):
        return iter(self._target())

    def items(self):
        return _Items(self)

    def values(self):
        return _Values(self)


class _Items(ItemsView):
    """Mapping.items' view, iterated without a read through `__getitem__` per key: the same
    pairs in the same order, the same UnknownValueError at the same one."""

    __slots__ = ()

    def __iter__(self):
        return _checked(self._mapping)


class _Values(ValuesView):
    """Mapping.values' view, iterated as `_Items` is."""

    __slots__ = ()

    def __iter__(self):
        return (v for _, v in _checked(self._mapping))


def _checked(m: "DictProxy"):
    chain = m._c
    for k, v in m._target().items():
        if v.__class__ is str and v in _UNKNOWNS:
            raise _unknown(chain, k, v)
        yield k, v


class ListProxy(_Proxy, Sequence):
    """pulumi_policy.proxy._ListProxy: a Sequence (not a list) that raises on reading an unknown."""

    __slots__ = ()

    def _load(self) -> list:
        chain = self._c
        t = [_lazy(v, (chain, str(i))) for i, v in enumerate(self._r)]
        self._t, self._r = t, None
        return t

    def __iter__(self):      # Sequence.__iter__ reads self[i] until IndexError: the same values, in order
        chain = self._c
        for i, v in enumerate(self._target()):
            if v.__class__ is str and v in _UNKNOWNS:
                raise _unknown(chain, i, v)
            yield v


def _lazy(value, chain):
    """One raw value as `_wire` then `_proxied` would leave it, converting containers on first read.
    Only for values whose numbers are known finite (see `lazy_props_of`)."""
    c = value.__class__
    if c is str or c is bool or c is float or value is None:
        return value
    if c is int:
        return float(value)
    if c is dict:
        if SIG_KEY in value:
            return _proxied(_wire(value), chain)
        return DictProxy(None, chain, value)
    if c is list or c is tuple:
        return ListProxy(None, chain, value)
    return _proxied(_wire(value), chain)       # subclasses and other types: the exact two-pass way


class Asset:
    """Stand-in for the pulumi.FileAsset/StringAsset/RemoteAsset pulumi_policy deserializes."""

    def __init__(self, kind: str, value):
        self.kind, self.value = kind, value
        setattr(self, {"FileAsset": "path", "StringAsset": "text", "RemoteAsset": "uri"}.get(kind, "assets"), value)


class Archive(Asset):
    """Stand-in for pulumi.AssetArchive/FileArchive/RemoteArchive."""


def _number(value):
    f = float(value)
    if f != f or f in (math.inf, -math.inf):
        what = "NaN" if f != f else "Infinity"
        raise PackError(f"the policy pack failed (UNKNOWN): ValueError: Fail to serialize {what}"
                        " for Value.number_value, which would parse as string_value")
    return f


def _wire(value):
    """gate._plain + Struct.update + json_format.MessageToDict: what the pack's dict holds."""
    cls = value.__class__
    if cls is str or cls is bool or value is None:
        return value
    if cls is float or cls is int:
        return _number(value)
    if isinstance(value, dict):
        return {str(k): _wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_wire(v) for v in value]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (int, float)):
        return _number(value)
    return UNKNOWN_TEXT


def _special(d: dict, chain):
    """deserialize.py `_deserialize_property` on a dict with the signature key."""
    sig = d[SIG_KEY]
    if sig == SECRET_SIG:
        if "value" not in d:
            raise PackError("the policy pack failed (UNKNOWN): AssertionError: Invalid secret encountered when "
                            "unmarshaling resource property")
        return _proxied(d["value"], chain)
    if sig == ASSET_SIG:
        for key, kind in (("path", "FileAsset"), ("text", "StringAsset"), ("uri", "RemoteAsset")):
            if key in d:
                return Asset(kind, d[key])
        raise PackError("the policy pack failed (UNKNOWN): AssertionError: Invalid asset encountered when "
                        "unmarshaling resource property")
    if sig == ARCHIVE_SIG:
        if "assets" in d:
            assets = {}
            for k, a in d["assets"].items():
                a = _proxied(a, None)
                if not isinstance(a, Asset):
                    raise PackError("the policy pack failed (UNKNOWN): AssertionError: Expected an AssetArchive's "
                                    "assets to be unmarshaled Asset or Archive objects")
                assets[k] = a
            return Archive("AssetArchive", assets)
        for key, kind in (("path", "FileArchive"), ("uri", "RemoteArchive")):
            if key in d:
                return Archive(kind, d[key])
        raise PackError("the policy pack failed (UNKNOWN): AssertionError: Invalid archive encountered when "
                        "unmarshaling resource property")
    raise PackError(f"the policy pack failed (UNKNOWN): AssertionError: Unrecognized signature '{sig}' when "
                    "unmarshaling resource property")


def _proxied(value, chain):
    """deserialize_properties + unknown_checking_proxy on one wire value (already round-tripped)."""
    cls = value.__class__
    if cls is dict:
        if SIG_KEY in value:
            return _special(value, chain)
        return DictProxy({k: _proxied(v, (chain, k)) for k, v in value.items()}, chain)
    if cls is list:
        return ListProxy([_proxied(v, (chain, str(i))) for i, v in enumerate(value)], chain)
    return value


# While the direct gate runs the resource policies: a token of that reading, else None. What a
# rule keeps of props read as given (resource.py `pod_templates`) holds only within one reading.
READING: list = [None]


def raw_views(resources: list[Resource], plain: frozenset) -> list:
    """Per resource, its props as given where a policy may read them so (module docstring), else
    None: the inputs of the custom resources in `plain` (the direct engine's plain records; a
    component's props are its outputs) whose keys are all text, and props whose every value is
    already what the pack's conversion gives (checked here, each shared value once)."""
    seen: set[int] = set()
    return [r.props if (r.custom and r.urn in plain and _text_keyed(r.props)) or _as_wired(r.props, seen) else None
            for r in resources]


def _text_keyed(props: dict) -> bool:
    """Every key in these plain props is text (the pack's would all be): orjson refuses any other
    key, and checks at C speed what a walk here would take three times as long for. Without
    orjson, no: the pack's view is read."""
    if orjson is None:
        return False
    try:
        orjson.dumps(props)
    except TypeError:
        return False
    return True


def _as_wired(value, seen: set) -> bool:
    """JSON as `_wire` leaves it and `_proxied` reads it: exact strings (no sentinel), booleans,
    null, doubles (known finite by the caller), string-keyed dicts without the signature key, lists."""
    c = value.__class__
    if c is not dict and c is not list:
        return False
    if id(value) in seen:
        return True
    items = value
    if c is dict:
        if SIG_KEY in value:
            return False
        for k in value:
            if k.__class__ is not str:
                return False
        items = value.values()
    for v in items:
        c = v.__class__
        if c is str:
            if v in _UNKNOWNS:
                return False
        elif not (c is float or c is bool or v is None or _as_wired(v, seen)):
            return False
    seen.add(id(value))
    return True


def lazy_props_of(props: dict):
    """`props_of` converted on read, for props whose every number is finite (the direct engine
    checks each while recording, `OfflineRun.finite`): `props_of` raises the pack's error for a
    NaN or an infinity before any policy runs, which needs every value visited."""
    return DictProxy(None, None, props)


def props_of(props: dict):
    """One resource's props as a policy in the pack sees them."""
    # deserialize_properties: the top level is never a secret itself, only its values are looked at.
    fast = _convert(props, None, top=True)
    if fast is not None:
        return fast
    wire = _wire(props)
    return DictProxy({k: _proxied(v, (None, k)) for k, v in wire.items()}, None)


def _convert(value, chain, top=False):
    """_wire then _proxied in one pass for plain JSON-like data (exact str keys, no signature
    dicts): the common case. None where it does not apply; the callers take the two-pass way."""
    cls = value.__class__
    if cls is dict:
        if not top and SIG_KEY in value:
            return None
        out = {}
        for k, v in value.items():
            if k.__class__ is not str:
                return None
            c = v.__class__
            if c is str or c is bool or v is None:
                out[k] = v
            elif c is float:
                if v - v != 0.0:        # NaN or an infinity
                    _number(v)
                out[k] = v
            elif c is int:
                out[k] = float(v)
            else:
                v = _convert(v, (chain, k))
                if v is None:
                    return None
                out[k] = v
        return DictProxy(out, chain)
    if cls is list or cls is tuple:
        out = []
        for i, v in enumerate(value):
            c = v.__class__
            if c is str or c is bool or v is None:
                out.append(v)
            elif c is float:
                if v - v != 0.0:
                    _number(v)
                out.append(v)
            elif c is int:
                out.append(float(v))
            else:
                v = _convert(v, (chain, str(i)))
                if v is None:
                    return None
                out.append(v)
        return ListProxy(out, chain)
    return None


class Timeouts:
    """pulumi_policy.PolicyCustomTimeouts(0, 0, 0): what the servicer makes of no customTimeouts."""

    __slots__ = ()
    create = update = delete = 0


class Options:
    """pulumi_policy.PolicyResourceOptions as the servicer builds it from gate's requests (no options sent)."""

    __slots__ = ()
    protect = False
    ignore_changes: list = []
    delete_before_replace = None
    aliases: list = []
    custom_timeouts = Timeouts()
    additional_secret_outputs: list = []
    parent = None


_OPTIONS = Options()


class PolicyResource:
    """pulumi_policy.PolicyResource as a stack policy gets it."""

    __slots__ = ("resource_type", "props", "urn", "name", "opts", "provider", "parent", "dependencies",
                 "property_dependencies")

    def __init__(self, resource_type: str, props, urn: str, name: str, parent=None):
        self.resource_type, self.props, self.urn, self.name = resource_type, props, urn, name
        self.opts, self.provider, self.parent = _OPTIONS, None, parent
        self.dependencies, self.property_dependencies = [], {}


def _config_value(value):
    """Struct.update then MessageToDict on a policy's properties (the Configure call)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, dict):
        return {k: _config_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_config_value(v) for v in value]
    raise ValueError(f"Unexpected type: {type(value)}")


def configure(config: dict) -> dict[str, tuple[str, dict | None]]:
    """policy -> (level the servicer runs it at, its config dict or None), as after `Configure`."""
    out = {}
    for name, (level, props) in resolve(config).items():
        LEVELS[level]                    # gate.configure refuses what it cannot send
        out[name] = (level, _config_value(props) or None)
    return out


def _verdict(policy, level: str, message, resource) -> dict:
    """report_violation in the pack, then gate.analyze taking the diagnostic apart."""
    if message and not isinstance(message, str):
        raise PackError(f"the policy pack failed (UNKNOWN): TypeError: Expected message to be a string ({policy.name})")
    text = policy.description + (f"\n{message}" if message else "")
    text = text.split("\n", 1)[1] if "\n" in text else text
    return {"policy": policy.name, "level": NAMES.get(LEVELS[level], ADVISORY), "message": text.strip(),
            **({"resource": resource} if resource else {})}


def _cant_run(policy, exc: UnknownValueError, resource) -> dict:
    text = (f"can't run policy '{policy.name}' from policy pack '{PACK_NAME}@v{PACK_VERSION}' during preview: "
            f"{exc.message}")
    return _verdict_raw(policy.name, ADVISORY, text, resource)


def _verdict_raw(name: str, level: str, text: str, resource) -> dict:
    text = text.split("\n", 1)[1] if "\n" in text else text
    return {"policy": name, "level": level, "message": text.strip(), **({"resource": resource} if resource else {})}


def _failed(policy, exc: Exception) -> PackError:
    return PackError(f"the policy pack failed (UNKNOWN): policy {policy.name}: {type(exc).__name__}: {exc}")


def evaluate(resources: list[Resource], config: dict | None = None, finite: bool = False,
             plain: frozenset | None = None) -> list[dict]:
    """The pack's violations over `resources`, as `Analyzer.configure(config)` + `analyze(resources)` give them.
    `finite`: every number in the props is known finite, so they may be converted on read. `plain`:
    the URNs of the direct engine's plain records (`OfflineRun.plain`), whose props policies may
    read as given (module docstring); None reads every resource through the pack's view."""
    return in_order(evaluate_part(resources, config, finite, plain=plain))


def in_order(verdicts: list[dict]) -> list[dict]:
    """Verdicts in the order the analyzer returns them, however they were made."""
    return sorted(verdicts, key=lambda v: (v["policy"], v.get("resource", ""), v["message"]))


def evaluate_part(resources: list[Resource], config: dict | None = None, finite: bool = False,
                  per_resource: bool = True, take=None, plain: frozenset | None = None) -> list[dict]:
    """Some of `evaluate`'s verdicts, unsorted: the resource policies' if `per_resource`, and the
    stack policies whose turns `take()` hands out (their index among the running stack policies,
    None when none is left; every one when `take` is None). Two processes that share `take`
    make every verdict once between them (policy/background.py)."""
    settings = configure(config or {})
    running = []
    for name, policy in sorted(POLICIES.items()):
        level, cfg = settings[name]
        if level == DISABLED:
            continue
        running.append((policy, MANDATORY if level == "remediate" else level, cfg))
    stack = [policy for policy in running if policy[0].kind == "stack"]
    turns = iter(range(len(stack))) if take is None else iter(take, None)
    turn = next(turns, None)
    if not per_resource and turn is None:
        return []
    convert = lazy_props_of if finite else props_of
    props = [convert(r.props) for r in resources]
    # a NaN or an infinity fails the pack before any policy runs (props_of), so never read as given
    raws = raw_views(resources, plain) if finite and plain is not None else [None] * len(resources)
    out: list[dict] = []
    each = [(policy, level, cfg) for policy, level, cfg in running if policy.kind == "resource" and per_resource]
    if each:
        out += _resource_verdicts(resources, props, raws, each)
    if turn is None:
        return out
    given = _objects(resources, [p if raw is None else raw for p, raw in zip(props, raws)]) \
        if any(raw is not None for raw in raws) else None
    exact = functools.cache(lambda: _objects(resources, props))
    names = {r.urn: r.name for r in resources}
    while turn is not None:
        if turn < len(stack):
            out += _stack_turn(stack[turn], given, exact, names)
        turn = next(turns, None)
    return out


def _stack_turn(running: tuple, given: list | None, exact, names: dict) -> list[dict]:
    """One stack policy's verdicts: none where it finds nothing on the props read as given, else
    what it says on the pack's view (`exact()`, made once)."""
    policy, level, cfg = running
    if given is not None and _finds_nothing(policy, cfg, given):
        return []
    return _stack_verdicts(policy, level, cfg, exact(), names)


def _resource_verdicts(resources: list[Resource], props: list, raws: list, each: list) -> list[dict]:
    """Resource by resource, each one's policies together, as the pack gets them (one Analyze call
    per resource); the caller sorts the verdicts."""
    out: list[dict] = []
    # a resource type -> the rules that read it (Policy.types), called past the test they then pass
    reading: dict[str, list] = {}
    READING[0] = object()       # props read as given stay as they are until this ends
    try:
        for r, p, raw in zip(resources, props, raws):
            if not r.custom:
                continue
            rules = reading.get(r.type)
            if rules is None:
                rules = reading[r.type] = [(policy, level, cfg, getattr(policy.check, "__wrapped__", policy.check))
                                           for policy, level, cfg in each if policy.reads(r.type)]
            for policy, level, cfg, check in rules:
                if raw is not None:
                    try:    # a resource policy returns a list; anything else it returns asks the pack's view
                        if not check(r.type, raw, dict(cfg) if cfg else {}):
                            continue
                    except Exception:
                        pass    # the pack's view says what failed, in its words
                found = []
                try:
                    for message in check(r.type, p, dict(cfg) if cfg else {}):
                        found.append(_verdict(policy, level, message, r.name))
                except UnknownValueError as exc:
                    found.append(_cant_run(policy, exc, r.name))
                except PackError:
                    raise
                except Exception as exc:
                    raise _failed(policy, exc) from exc
                out += found
    finally:
        READING[0] = None
    return out


def _finds_nothing(policy, cfg, objects: list) -> bool:
    """A stack policy finds nothing on props read as given. A finding or an error is for the
    pack's view to say, in its own words."""
    try:
        return not list(policy.check(_copy(objects), dict(cfg) if cfg else {}))
    except Exception:
        return False


def _objects(resources: list[Resource], props: list) -> Resources:
    """Every resource as a stack policy gets it, its parent linked by URN; each policy gets a copy
    (`_copy`) that shares one index of them by type and kind (stackview.py)."""
    objects = [PolicyResource(r.type, p, r.urn, r.name) for r, p in zip(resources, props)]
    by_urn = {o.urn: o for o in objects}
    for r, o in zip(resources, objects):
        if r.parent in by_urn:
            o.parent = by_urn[r.parent]
    return Resources(objects, {})


def _copy(objects: Resources) -> Resources:
    return Resources(objects, objects._index)


def _stack_verdicts(policy, level, cfg, objects: list, names: dict) -> list[dict]:
    out = []
    try:
        for message, urn in policy.check(_copy(objects), dict(cfg) if cfg else {}):
            if urn is not None and not isinstance(urn, str):
                raise PackError(f"the policy pack failed (UNKNOWN): TypeError: Expected urn to be a string "
                                f"({policy.name})")
            urn = urn or ""
            out.append(_verdict(policy, level, message, names.get(urn, urn) or None))
    except UnknownValueError as exc:
        out.append(_cant_run(policy, exc, names.get("", "") or None))
    except PackError:
        raise
    except Exception as exc:
        raise _failed(policy, exc) from exc
    return out

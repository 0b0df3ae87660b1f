"""Start-up cost (issue #30): what each entry point imports, not how long it takes, so a heavy
import that creeps back onto the plan path fails here; and the caches that stand in for
cel-python's parser build and detect-secrets' import give the answers they stand in for."""
import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Loaded only on the paths that need them: ortools by the exact phase, jinja2 by --report,
# detect-secrets (with requests) by secret-shaped text, jsonschema by chart values overrides and
# policy settings, cel-python (lark, pendulum) by nodeSelector expressions, Pulumi and gRPC by the
# engine under mocks and the pack; hypothesis by tests only.
NEVER_AT_IMPORT = ("ortools", "jinja2", "detect_secrets", "requests", "jsonschema", "celpy", "lark", "pendulum",
                   "pulumi", "pulumi_kubernetes", "pulumi_gcp", "pulumi_aws", "grpc", "google.protobuf", "hypothesis")
# What the pure plan of the dev stack (load + check, schedule, render) needs of those: its
# nodeSelectors are CEL, and nothing in it is shaped like a credential.
DEV_PLAN_NEEDS = {"celpy", "lark", "pendulum"}


def _run(code: str, tmp_path: Path, env: dict | None = None) -> list:
    """`code` in a fresh interpreter with its own user cache; its last line, read as JSON. `env`:
    variables set (a value) or unset (None) for it."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for name, value in (env or {}).items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _loaded(code: str, tmp_path: Path) -> set[str]:
    """Which of NEVER_AT_IMPORT a fresh interpreter has loaded after running `code`."""
    return set(_run(f"{code}\nimport json, sys\nprint(json.dumps([m for m in {NEVER_AT_IMPORT!r} if m in sys.modules]))",
                    tmp_path))


@pytest.mark.parametrize("module", ["modelplane.cli", "modelplane.api", "modelplane.scheduler", "modelplane.render",
                                    "modelplane.engine.fleet", "modelplane.analysis.services", "modelplane.policy.resource",
                                    "modelplane.policy.routing", "modelplane.policy.serving", "modelplane.policy.stack",
                                    "modelplane.output.report", "modelplane.output.trace", "modelplane.analysis.changes", "modelplane.analysis.cost",
                                    "modelplane.output.tables"])
def test_import_loads_nothing_heavy(module, tmp_path):
    assert _loaded(f"import {module}", tmp_path) == set()


PURE_PLAN = """
from modelplane.api.loader import check_stack
from modelplane.engine.fleet import cluster_from_inventory, demand_from, inventory_of
from modelplane.render import render_replica
from modelplane.scheduler import schedule
from modelplane.analysis.services import served_names
path, catalog, spec = check_stack("dev")
invs = {c.name: inventory_of(c, catalog) for c in spec.clusters}
plan = schedule([demand_from(d, catalog) for d in spec.deployments], [cluster_from_inventory(i) for i in invs.values()], [])
names, by_key = served_names(spec), {d.key: d for d in spec.deployments}
for p in plan.placements:
    md = by_key[p.deployment]
    render_replica(md, p, invs[p.cluster], catalog.weights_gib(md), names[p.deployment])
"""


def test_the_dev_plan_loads_only_what_it_needs(tmp_path):
    first = _loaded(PURE_PLAN, tmp_path)      # builds the caches
    assert first - {"detect_secrets", "requests"} == DEV_PLAN_NEEDS
    # reads them: its selectors' outcomes are kept, so cel-python is not imported again
    assert _loaded(PURE_PLAN, tmp_path) == set()
    assert sorted(p.name.rsplit("-", 1)[0] for p in (tmp_path / "cache" / "modelplane").iterdir()) == \
        ["catalog", "cel-outcomes", "cel-parser", "secret-patterns"]


# The dev stack planned in a fresh interpreter, as the command does; what follows it prints a JSON line.
A_PLAN = """
import io, json, sys
import modelplane.cli as cli
from modelplane import startup
sys.stdout = io.StringIO()
try:
    cli.main(["plan", "dev", "--json"])
except SystemExit as exc:
    code = exc.code
sys.stdout = sys.__stdout__
"""

PLUGINS = A_PLAN + """
from pydantic.plugin._loader import get_plugins
print(json.dumps([code, "importlib.metadata" in sys.modules, hasattr(sys.modules["pydantic.plugin._loader"],
                  "PYDANTIC_ENTRY_POINT_GROUP"), list(get_plugins())]))
"""


def _code_file(tmp_path: Path) -> Path:
    found = list((tmp_path / "cache" / "modelplane").glob("compiled-code-*.marshal"))
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("switch, pydantics_own", [(None, False), ("", True), ("__all__", True)])
def test_a_plan_asks_pydantic_for_no_plugins_unless_the_user_set_its_switch(switch, pydantics_own, tmp_path):
    """startup.py `_without_pydantic_plugins`: unset, a plan (its caches filled) never imports
    importlib.metadata nor reads installed distributions; set to anything, pydantic's own loader answers."""
    switched = {"PYDANTIC_DISABLE_PLUGINS": switch}
    _run(PLUGINS, tmp_path, env=switched)    # fills the caches (detect-secrets' requests imports importlib.metadata)
    code, metadata, own, plugins = _run(PLUGINS, tmp_path, env=switched)
    assert (code, own, plugins) == (0, pydantics_own, [])
    if not pydantics_own:
        assert not metadata


def test_pydantic_still_asks_its_plugin_loader_by_the_name_the_command_answers_for():
    """If an upgrade of pydantic asks for plugins elsewhere, the command's answer would be skipped
    and the time back: re-measure and drop startup.py `_without_pydantic_plugins`, or move it."""
    import inspect

    from pydantic.plugin import _schema_validator

    assert "from ._loader import get_plugins" in inspect.getsource(_schema_validator.create_schema_validator)


DATACLASS_CODE = A_PLAN + """
compiled = startup.compiled_here()
startup.keep()
print(json.dumps([code, compiled]))
"""

# Dataclasses of every kind `dataclasses` writes methods for, and forward references: what their code is made of.
DATACLASSES = """
import json, typing
from dataclasses import dataclass, field

@dataclass(frozen=True, order=True)
class Frozen:
    a: int
    b: str = "x"
    c: tuple = ()

@dataclass
class Plain:
    a: int
    items: list = field(default_factory=list)
    hidden: str = field(default="", repr=False, compare=False)

@dataclass(kw_only=True, slots=True, unsafe_hash=True)
class Keywords:
    a: int = 0
    b: "list[str] | None" = None

def shape(code):     # what a code object is made of (marshal's bytes also depend on reference counts)
    return [code.co_code.hex(), [shape(c) if hasattr(c, "co_code") else repr(c) for c in code.co_consts],
            code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, code.co_flags, code.co_argcount,
            code.co_kwonlyargcount, code.co_filename, code.co_qualname, code.co_firstlineno]

out = {}
for cls in (Frozen, Plain, Keywords):
    for name, fn in sorted(vars(cls).items()):
        if hasattr(fn, "__code__"):
            out[f"{cls.__name__}.{name}"] = shape(fn.__code__)
for text in ("int", "list[str] | None", "dict[str, 'Frozen']", "*tuple[int, str]"):
    ref = typing.ForwardRef(text)
    out[text] = shape(ref.__forward_code__)
    if not text.startswith("*"):
        out[text].append(repr(typing._eval_type(ref, globals(), None)))
print(json.dumps([out, repr(Frozen(1)), Frozen(1) < Frozen(2), Plain(1) == Plain(1, [], "y"),
                  hash(Keywords(a=1)) == hash(Keywords(a=1)), Keywords(a=1) != Keywords(a=2)]))
"""


def test_dataclass_methods_are_compiled_once_per_machine(tmp_path):
    """startup.py `_code_kept`: the first plan compiles the methods of every dataclass it
    imports, and the forward references pydantic evaluates, and keeps them; the next compiles none."""
    code, first = _run(DATACLASS_CODE, tmp_path)
    assert code == 0 and first > 300
    kept = _code_file(tmp_path).read_bytes()
    assert _run(DATACLASS_CODE, tmp_path) == [0, 0]
    assert _code_file(tmp_path).read_bytes() == kept        # nothing new: not written again


def test_kept_dataclass_code_is_the_code_exec_makes(tmp_path):
    """Methods and forward references run from the kept code are what `dataclasses` and `typing`
    compile themselves (the same text, no __future__ flags inherited), and behave the same."""
    cached = "from modelplane import startup\nstartup.prepare()\n"
    counted = "\nprint(json.dumps(startup.compiled_here()))\nstartup.keep()\n"
    first = _run(cached + DATACLASSES + counted, tmp_path)
    second = _run(cached + DATACLASSES + counted, tmp_path)
    plain = _run(DATACLASSES, tmp_path)                  # dataclasses alone
    assert first > 0 and second == 0                # compiled and kept, then read back
    outcome = [_run(code, tmp_path) for code in (cached + DATACLASSES, DATACLASSES)]
    assert outcome[0] == outcome[1] == plain
    assert len(plain[0]) >= 16


PATTERNS = """
import json, re
from modelplane import startup
startup.prepare()
texts = [(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", 0), (r"(?P<key>\\w+)=(?P<value>[^,]*)", re.I), (r"(?<=@)sha256:[0-9a-f]{64}$", 0),
         (r"^\\s*# (?:latest|v\\d+)", re.M | re.X), (b"\\x00+(..)", re.S), (r"caf\\u00e9|\\d+", re.A), (r"(a)|b", re.U)]
patterns = [re._compiler.compile(text, flags) for text, flags in texts]
fresh = [re._compiler.compile.__wrapped__(text, flags) for text, flags in texts]
found = [[bool(p.search(s)) for s in ("ab-c", "Key=v", "x@sha256:" + "0" * 64, " # latest", b"\\x00\\x00ab", "caf\u00e9")
          if isinstance(s, bytes) == isinstance(p.pattern, bytes)] for p in patterns]
print(json.dumps([startup.compiled_here(), [p == f for p, f in zip(patterns, fresh)], [p.groupindex == f.groupindex
                  for p, f in zip(patterns, fresh)], found]))
startup.keep()
"""


def test_kept_patterns_are_the_patterns_re_makes(tmp_path):
    """startup.py `_patterns_kept`: the first run compiles its patterns and keeps them, the next
    compiles none, and each pattern made from what was kept equals (flags, text and engine code)
    the one `re` itself makes, and finds the same."""
    compiled, same, groups, found = _run(PATTERNS, tmp_path)
    assert compiled >= 7 and all(same) and all(groups)
    again = _run(PATTERNS, tmp_path)
    assert again == [0, same, groups, found]


def test_a_damaged_code_file_only_means_compiling_again(tmp_path):
    _run(DATACLASS_CODE, tmp_path)
    path = _code_file(tmp_path)
    for damage in (b"not marshal", marshal.dumps({"def f(): pass": 1}), marshal.dumps([1, 2]),
                   marshal.dumps({("a+", 0): (32, "not code", 0, {}, (None,))}),
                   marshal.dumps({("a+", 0): (32, [1, 2.5], 0, {}, (None,))})):
        path.write_bytes(damage)
        code, compiled = _run(DATACLASS_CODE, tmp_path)
        assert code == 0 and compiled > 300
        assert _run(DATACLASS_CODE, tmp_path) == [0, 0]     # written whole again



def test_the_command_keeps_its_caches_though_a_plan_leaves_at_once(tmp_path):
    """`plan` leaves with os._exit (cli.py `run`), after running the exit handlers that keep the
    caches: a second `modelplane plan` of the dev stack imports neither cel-python nor Lark."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for _ in range(2):
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "modelplane", "plan", "dev", "--json"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    kept = sorted(p.name for p in (tmp_path / "cache" / "modelplane").iterdir())
    assert [[n for n in kept if n.startswith(kind)] != [] for kind in
            ("catalog-", "cel-outcomes-", "cel-parser-", "compiled-code-", "secret-patterns-")] == [True] * 5, kept
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert not imported & {"celpy", "lark"}


CEL = """
import json
from modelplane.scheduler.cel import Matcher, environment
caps = {"gpu": {"memoryGiB": 80, "product": "H100", "features": ["fp8"], "count": 8},
        "interconnect": {"type": "nvswitch"}, "network": {"fabric": "roce", "bandwidthGbps": 400}}
out = []
for expr in ['gpu.memoryGiB >= 80 && "fp8" in gpu.features', 'gpu.product == "H100" || network.fabric == "efa"',
             'capabilities.gpu.count * 2 > 10', '!(gpu.count in [1, 2])', 'true && false', 'gpu.memoryGiB >=',
             '"a" +', 'gpu.count / 0 == 1', 'gpu.product', 'gpu.product > 1', 'gpu.vram >= 1', 'size(gpu.features)']:
    try:
        tree = repr(environment().compile(expr))
    except Exception as exc:
        tree = repr(exc)
    try:
        out.append([tree, Matcher().matches(expr, "c", caps)])
    except Exception as exc:
        out.append([tree, type(exc).__name__, str(exc)])
print(json.dumps(out))
"""


def test_cel_parser_from_the_cache_parses_as_built(tmp_path):
    """The parser loaded from the cache gives the same trees (rule names are Tokens, as cel-python's
    messages show them), values and errors as the one cel-python builds itself."""
    def run(cache):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache)}
        done = subprocess.run([sys.executable, "-c", CEL], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    built = run("/dev/null/none")              # no cache directory: cel-python builds it
    assert run(tmp_path) == built               # built, then kept
    assert len(list((tmp_path / "modelplane").glob("cel-parser-*.pickle"))) == 1
    assert run(tmp_path) == built               # loaded from the cache
    assert "cannot compare or combine string and int" in built    # the message that reads a rule's Token


def test_a_broken_cel_cache_is_built_again(tmp_path, monkeypatch):
    from celpy.celparser import CELParser

    from modelplane.scheduler import cel

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(CELParser, "CEL_PARSER", None)
    cel.environment.cache_clear()
    try:
        path = cel._cache_file()
        path.write_bytes(b"not a pickle")
        assert cel._load_parser(path) is None
        assert cel.environment().compile("gpu.count > 1")
        assert CELParser.CEL_PARSER is not None
        assert cel._load_parser(path) is not None       # kept over the broken file
    finally:
        cel.environment.cache_clear()


SAMPLES = ["AKIAIOSFODNN7EXAMPLE", "hf_" + "a1B2" * 9, "-----BEGIN RSA PRIVATE KEY-----\nMIIEow",
           "ghp_" + "x" * 36, "xoxb-123456789012-1234567890123-abcdefghijABCDEFGHIJabcd",
           "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "https://user:pass@example.com/x",
           '"type": "service_account"', "client-key-data: abc", "sk_live_" + "a" * 24,
           "--max-model-len=32768", "--kv-transfer-config={\"kv_connector\":\"NixlConnector\"}", "plain text here",
           "eyJnotajwt.eyJ.x", "AKIA-too-short"]


def test_secret_screen_holds_every_detector_pattern(tmp_path, monkeypatch):
    """Text no screen pattern finds is reported by no detector: the screen holds each detector's
    denylist, and a fresh screen and one read back from the cache agree on every sample."""
    from modelplane.api import secrets

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for fn in (secrets._screen, secrets.secret_kind):
        fn.cache_clear()
    try:
        fresh = secrets._screen()
        assert fresh is not None
        expected = {(p.pattern, p.flags) for d in secrets._detectors() for p in d.denylist}
        assert {(p.pattern, p.flags) for p in fresh} == expected
        secrets._screen.cache_clear()
        assert [(p.pattern, p.flags) for p in secrets._screen()] == [(p.pattern, p.flags) for p in fresh]
        for text in SAMPLES:
            full = next((d.secret_type for d in secrets._detectors() if any(True for _ in d.analyze_string(text))), None)
            assert secrets.secret_kind(text) == full, text
        assert secrets.secret_kind("AKIAIOSFODNN7EXAMPLE") == "AWS Access Key"
        assert secrets.secret_kind("--max-model-len=32768") is None
    finally:
        for fn in (secrets._screen, secrets.secret_kind):
            fn.cache_clear()


def test_secret_screen_without_a_cache_directory(monkeypatch):
    from modelplane.api import secrets

    monkeypatch.setenv("XDG_CACHE_HOME", "/dev/null/none")
    for fn in (secrets._screen, secrets.secret_kind):
        fn.cache_clear()
    try:
        assert secrets._screen() is None
        assert secrets.secret_kind("hf_" + "a1B2" * 9) == "Hugging Face Token"
        assert secrets.secret_kind("--max-model-len=32768") is None
    finally:
        for fn in (secrets._screen, secrets.secret_kind):
            fn.cache_clear()

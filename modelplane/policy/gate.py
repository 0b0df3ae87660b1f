"""Run the CrossGuard pack in `policies/` exactly as the Pulumi CLI does: as a subprocess speaking
the analyzer gRPC protocol (GetAnalyzerInfo, Configure, Analyze per resource, AnalyzeStack)."""
from __future__ import annotations

import json
import os
from collections import deque
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..api.loader import Source
from ..api.project import data_dir
from ..engine.records import UNKNOWN_TEXT
from ..api.errors import shown
from ..errors import InputError, Problem, did_you_mean
from .registry import ADVISORY, DISABLED, MANDATORY, POLICIES

PACK_DIR = data_dir("policies")
LEVELS = {ADVISORY: 0, MANDATORY: 1, DISABLED: 2, "remediate": 3}
NAMES = {v: k for k, v in LEVELS.items()}


# A whole fleet's AnalyzeStack request is one message: lift gRPC's 4 MiB default, as the CLI does.
_CHANNEL_OPTIONS = [("grpc.max_send_message_length", 1 << 30), ("grpc.max_receive_message_length", 1 << 30)]


# Analyze calls in flight at once: enough to keep the pack busy, few enough to bound memory.
_IN_FLIGHT = 64


class PackError(RuntimeError):
    """The policy pack did not start or failed mid-analysis (its stderr says why)."""


class PolicyConfigError(InputError):
    """A policy config file the CLI would refuse too (file, line, field and fix, like the loader's)."""

    def __str__(self) -> str:
        return "\n".join(f"{p.file}: {p.path + ': ' if p.path else ''}{p.message}" for p in self.problems)


@dataclass(frozen=True)
class Resource:
    """One resource as the analyzer sees it (the offline engine's record, flattened)."""

    type: str
    urn: str
    name: str
    props: dict
    parent: str = ""
    custom: bool = True


def read_config(path: Path | None) -> dict:
    """The CLI's policy config format: {"all": level, "<policy>": level | {"enforcementLevel": .., ...}}."""
    if path is None:
        return {}
    from ..api.yamlread import parse

    def refuse(field, message, fix, line=None):
        raise PolicyConfigError([Problem(str(path), field or "(file)", message, fix, line)])

    fix = 'write a JSON object such as {"gpu-budget": {"enforcementLevel": "mandatory", "maxGpus": 64}}'
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as exc:
        refuse("", f"cannot read policy config: {exc.strerror or exc}", "check the path given to --policy-config")
    except UnicodeDecodeError:
        refuse("", "cannot read policy config: not UTF-8 text", "save it as UTF-8 JSON")
    if not text.strip():
        refuse("", "the policy config is empty", fix)

    def constant(name):
        raise ValueError(f"{name} is not a number JSON allows")
    try:
        doc = json.loads(text, parse_constant=constant)
    except ValueError as exc:
        refuse("", f"cannot read policy config: {getattr(exc, 'msg', exc)}", "fix the JSON (quotes, commas: no "
               "trailing comma)", getattr(exc, "lineno", None))
    except RecursionError:
        refuse("", "cannot read policy config: nests too deeply", fix)
    try:
        node = parse(text, str(path))[0]       # JSON is YAML: its nodes give lines
    except InputError:
        node = None
    line = Source(str(path), doc, node).line
    if not isinstance(doc, dict):
        refuse("", "a policy config is a JSON object of policy names", fix, 1)
    for key, value in doc.items():
        if key != "all" and key not in POLICIES:
            guess = did_you_mean(key, POLICIES)
            refuse(key, f"{key!r} is not a policy of this pack", f"did you mean {guess!r}?" if guess else
                   f"policies: {', '.join(sorted(POLICIES))}", line((key,)))
        if not isinstance(value, (str, dict)):
            refuse(key, "expected an enforcement level or an object of settings",
                   'write "mandatory" or {"enforcementLevel": "mandatory", ...}', line((key,)))
        level = value if isinstance(value, str) else value.get("enforcementLevel")
        if level is not None and (not isinstance(level, str) or level not in LEVELS):
            guess = did_you_mean(str(level), LEVELS)
            refuse(key, f"enforcement level {shown(level)} is not one of {', '.join(LEVELS)}",
                   f"did you mean {guess!r}?" if guess else f"use one of {', '.join(LEVELS)}", line((key,)))
        if isinstance(value, dict) and key == "all":
            refuse(key, "'all' takes an enforcement level, not settings", "write \"all\": \"advisory\"", line((key,)))
        if isinstance(value, dict):
            _check_properties(path, key, value, line)
    return doc


def _schema_words(schema: dict) -> str:
    kind = {"integer": "a whole number", "number": "a number", "boolean": "true or false", "string": "text",
            "object": "an object", "array": "a list"}.get(schema.get("type"), "a value")
    if "minimum" in schema:
        kind += f" >= {schema['minimum']}"
    if schema.get("type") == "object" and isinstance(schema.get("additionalProperties"), dict):
        kind += f" whose values are each {_schema_words(schema['additionalProperties'])}"
    if "enum" in schema:
        kind = f"one of {', '.join(map(str, schema['enum']))}"
    return kind


_TYPES = {"integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
          "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
          "boolean": lambda v: isinstance(v, bool), "string": lambda v: isinstance(v, str),
          "object": lambda v: isinstance(v, dict)}


def _surely_valid(value, schema: dict) -> bool:
    """True only when `value` is valid under `schema` by the few keywords the pack's settings use
    (type, minimum, additionalProperties, default); anything else, or anything in doubt, is left
    to jsonschema, which every plan would otherwise import (~0.05 s) to accept the shipped config."""
    if not set(schema) <= {"type", "minimum", "additionalProperties", "default"}:
        return False
    fits = _TYPES.get(schema.get("type", ""))
    if fits is None or not fits(value):
        return False
    if "minimum" in schema and not (_TYPES["number"](value) and value >= schema["minimum"]):
        return False
    extra = schema.get("additionalProperties")
    if extra is not None:
        return isinstance(extra, dict) and all(_surely_valid(v, extra) for v in value.values())
    return True


def _check_properties(path, name: str, value: dict, line) -> None:
    """A policy's settings against the JSON schema the pack declares for it (the CLI refuses what
    `pulumi preview --policy-pack-config` would)."""
    known = POLICIES[name].config
    props = {k: v for k, v in value.items() if k != "enforcementLevel"}
    schema_text = "; ".join(f"{k}: {_schema_words(v)}" for k, v in sorted(known.items())) or \
        "none besides enforcementLevel"
    unknown = sorted(set(props) - set(known))
    if unknown:
        settings = ", ".join(sorted(known)) or "none besides enforcementLevel"
        guess = did_you_mean(unknown[0], known)
        raise PolicyConfigError([Problem(str(path), name, f"unknown setting {', '.join(map(repr, unknown))} "
                                         f"(settings: {settings})", f"did you mean {guess!r}? ({schema_text})"
                                         if guess else f"settings of {name}: {schema_text}",
                                         line((name, unknown[0])))])
    for key, schema in known.items():
        if key in props and not _surely_valid(props[key], schema):
            import jsonschema

            try:
                jsonschema.validate(props[key], schema)
            except jsonschema.ValidationError as exc:
                where = "".join(f".{p}" for p in exc.absolute_path)
                raise PolicyConfigError([Problem(str(path), f"{name}.{key}{where}", f"{shown(exc.instance)} is not "
                                                 f"{_schema_words(exc.schema)}", f"{key} is {_schema_words(schema)}",
                                                 line((name, key, *exc.absolute_path)))]) from None


def resolve(config: dict) -> dict[str, tuple[str, dict]]:
    """policy -> (level, properties). Every policy is listed: a policy config the analyzer gets
    without a level counts as advisory, which would quietly downgrade mandatory rules."""
    out = {}
    for name, p in POLICIES.items():
        entry = config.get(name)
        props = dict(entry) if isinstance(entry, dict) else {}
        level = props.pop("enforcementLevel", None) or (entry if isinstance(entry, str) else None) \
            or config.get("all") or p.level
        out[name] = (level, props)
    return out


class Analyzer:
    """The pack as a running analyzer plugin; use as a context manager."""

    def __init__(self, project: str = "modelplane", stack: str = "offline", pack_dir: Path = PACK_DIR):
        self.project, self.stack, self.pack_dir = project, stack, pack_dir
        self.proc = None

    def __enter__(self):
        """Start the pack now; connect on first use, so its start-up overlaps whatever runs between."""
        env = {**os.environ, "PULUMI_PROJECT": self.project, "PULUMI_STACK": self.stack, "PULUMI_DRY_RUN": "true",
               "PYTHONPATH": os.pathsep.join([str(self.pack_dir.parent), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen([sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:0", "."],
                                     cwd=self.pack_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env, start_new_session=True)   # a Ctrl-C reaches us, not the pack:
        # the pack stops its server on SIGINT, cancelling every call in flight; we end it in close()
        self.stub = None
        return self

    def _connected(self):
        if self.stub is None:
            import grpc
            from pulumi.runtime.proto import analyzer_pb2_grpc

            line = self.proc.stdout.readline().strip()
            if not line.isdigit():
                message = line or self.proc.stderr.read()[-2000:]
                self.close()
                raise PackError(f"the policy pack did not start: {message}")
            self.channel = grpc.insecure_channel(f"127.0.0.1:{line}", options=_CHANNEL_OPTIONS)
            grpc.channel_ready_future(self.channel).result(timeout=20)
            self.stub = analyzer_pb2_grpc.AnalyzerStub(self.channel)
        return self.stub

    def __exit__(self, *exc):
        self.close()

    def _stderr_tail(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        return (self.proc.stderr.read() or "").strip()[-2000:] or f"exit status {self.proc.returncode}"

    def close(self):
        if getattr(self, "channel", None):
            self.channel.close()
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        for stream in (self.proc.stdout, self.proc.stderr) if self.proc else ():
            stream.close()

    def info(self):
        from google.protobuf import empty_pb2
        return self._connected().GetAnalyzerInfo(empty_pb2.Empty())

    def configure(self, config: dict) -> None:
        from google.protobuf.struct_pb2 import Struct
        from pulumi.runtime.proto import analyzer_pb2 as pb

        policies = {}
        for name, (level, props) in resolve(config).items():
            s = Struct()
            s.update(props)
            policies[name] = pb.PolicyConfig(enforcementLevel=LEVELS[level], properties=s)
        self._connected().Configure(pb.ConfigureAnalyzerRequest(policyConfig=policies))

    def analyze(self, resources: list[Resource]) -> list[dict]:
        """Analyze each custom resource, then the stack; violations sorted for stable output."""
        import grpc
        from pulumi.runtime.proto import analyzer_pb2 as pb

        stub = self._connected()
        # Each resource's Struct is built once, in the stack request; Analyze requests copy it.
        stack = [pb.AnalyzerResource(type=r.type, urn=r.urn, name=r.name, properties=_struct(r.props),
                                     parent=r.parent) for r in resources]
        # The stack call first (it takes longest), then the resources with a bounded window in
        # flight: the pack (another process, another core) works while this side serialises the
        # next. (Sending them from the engine's threads while the program still runs was measured
        # slower: the two compete for this process's GIL.)
        try:
            stack_call = stub.AnalyzeStack.future(pb.AnalyzeStackRequest(resources=stack))
            diags, window = [], deque()
            for r, entry in zip(resources, stack, strict=True):
                if not r.custom:
                    continue
                window.append((r.name, stub.Analyze.future(pb.AnalyzeRequest(type=r.type, urn=r.urn, name=r.name,
                                                                              properties=entry.properties))))
                if len(window) >= _IN_FLIGHT:
                    name, call = window.popleft()
                    diags += [(d, name) for d in call.result().diagnostics]
            while window:
                name, call = window.popleft()
                diags += [(d, name) for d in call.result().diagnostics]
            by_urn = {r.urn: r.name for r in resources}
            diags += [(d, by_urn.get(d.urn, d.urn) or None) for d in stack_call.result().diagnostics]
        except grpc.RpcError as exc:
            raise PackError(f"the policy pack failed ({exc.code().name}): {self._stderr_tail()}") from None
        out = []
        for d, resource in diags:
            message = d.message.split("\n", 1)[1] if "\n" in d.message else d.message   # drop the description
            out.append({"policy": d.policyName, "level": NAMES.get(d.enforcementLevel, ADVISORY),
                        "message": message.strip(), **({"resource": resource} if resource else {})})
        return sorted(out, key=lambda v: (v["policy"], v.get("resource", ""), v["message"]))


def _struct(props):
    from google.protobuf.struct_pb2 import Struct

    s = Struct()
    s.update(_plain(props))
    return s


def _plain(value):
    """Protobuf Structs hold JSON: drop what is not (unknowns become the engine's unknown sentinel)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return UNKNOWN_TEXT

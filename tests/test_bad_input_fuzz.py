"""Mutated example stacks, previous plans and policy configs (type swaps, deletions, duplications,
unicode, huge numbers): `plan` exits 0 or 1, never with a traceback or internals, refuses with a
file named in every problem, and writes nothing when it refuses input."""
import copy
import json
import re
import tempfile
from pathlib import Path

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelplane.cli import main

ROOT = Path(__file__).resolve().parents[1]
# The stacks that plan in a few seconds (prod plans three infra stacks as well: the corpus covers it).
STACKS = ["dev", "lab", "example-inplace", "infra-gke-us-central1", "infra-eks-us-east-1"]
TEXTS = {s: (ROOT / "stacks" / f"Pulumi.{s}.yaml").read_text() for s in STACKS}
POLICIES = {p.name: p.read_text() for p in sorted((ROOT / "policies" / "config").glob("*.json"))}
PREVIOUS = {"stack": "dev", "placements": [
    {"deployment": "ml-team/gpt-oss-20b", "replica": 0, "cluster": "dev-gke",
     "roles": {"decode": {"pool": "l4", "nodes": 1, "gpusPerNode": 1, "workers": 1}}},
    {"deployment": "ml-team/llama-70b", "replica": 0, "cluster": "dev-gke",
     "roles": {"decode": {"pool": "h100", "nodes": 1, "gpusPerNode": 8, "workers": 1},
               "prefill": {"pool": "h100", "nodes": 2, "gpusPerNode": 4, "workers": 2}}}]}
VALUES = [None, True, False, "yes", "on", 0, -1, 1.5, 10 ** 20, -(10 ** 20), float("inf"), float("nan"), "",
          "ünïcødé-名前", "a" * 300, "\u202e\u0000x", [], {}, [1, "x"], {"secure": "v1:abc"}, "hf_" + "x1" * 17]
INTERNALS = re.compile(r"Traceback|<class|object has no attribute|pydantic|celpy|Token\(|NameContainer|"
                       r"errors\.pydantic\.dev")
SETTINGS = settings(max_examples=15, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _paths(node, at=()):
    yield at
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*at, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*at, i))


def _mutate(doc, data):
    """One structural mutation of a parsed document at a drawn path."""
    paths = [p for p in _paths(doc) if p]
    if not paths:
        return copy.deepcopy(data.draw(st.sampled_from(VALUES)))
    path = data.draw(st.sampled_from(paths))
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    leaf, value = path[-1], parent[path[-1]]
    op = data.draw(st.sampled_from(["delete", "replace", "duplicate", "wrap", "stringify"]))
    if op == "delete":
        del parent[leaf]
    elif op == "replace":
        parent[leaf] = copy.deepcopy(data.draw(st.sampled_from(VALUES)))
    elif op == "duplicate" and isinstance(value, list) and value:
        value.append(copy.deepcopy(value[0]))
    elif op == "wrap":
        parent[leaf] = [value]
    else:
        parent[leaf] = str(value)
    return doc


def _text_mutation(text, data):
    """A mutation YAML dumping cannot express: a repeated line, a stray character, a cut."""
    lines = text.splitlines(keepends=True)
    i = data.draw(st.integers(0, max(len(lines) - 1, 0)))
    op = data.draw(st.sampled_from(["repeat-line", "insert", "cut"]))
    if op == "repeat-line":
        return "".join(lines[:i + 1] + lines[i:])
    if op == "insert":
        ch = data.draw(st.sampled_from(["\t", "'", '"', ":", "&a", "*a", "{", "]", "\u00e9", "\x07", "- "]))
        at = data.draw(st.integers(0, len(text)))
        return text[:at] + ch + text[at:]
    return text[:data.draw(st.integers(0, len(text)))]


def _check(args, out: Path, files=()):
    result = CliRunner().invoke(main, ["plan", *map(str, args), "--out", str(out)])
    text = result.output
    assert result.exit_code in (0, 1, 2), text
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in text
    if "invalid input" in text:
        assert result.exit_code == 2 and not out.exists(), text
        assert not INTERNALS.search(text), text
        problems = [line for line in text.splitlines() if line.startswith("  ") and not line.startswith("    ")]
        assert problems and all(any(str(f) in line for f in files) or re.match(r"  \S+\.(yaml|json)\b", line)
                                for line in problems), text
    return result


@SETTINGS
@given(stack=st.sampled_from(STACKS), structural=st.booleans(), data=st.data())
def test_mutated_stack_files(stack, structural, data):
    text = TEXTS[stack]
    if structural:
        mutated = yaml.safe_dump(_mutate(yaml.safe_load(text), data), sort_keys=False, allow_unicode=True)
    else:
        mutated = _text_mutation(text, data)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"Pulumi.{stack}.yaml"
        path.write_text(mutated, encoding="utf-8", errors="surrogatepass")
        _check([stack, "--config-file", path], Path(tmp) / "out", [path])


@settings(SETTINGS, max_examples=8)
@given(data=st.data())
def test_mutated_previous_plans(data):
    doc = _mutate(json.loads(json.dumps(PREVIOUS)), data)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "previous.json"
        path.write_text(json.dumps(doc))
        _check(["dev", "--previous", path], Path(tmp) / "out", [path])


@settings(SETTINGS, max_examples=8)
@given(name=st.sampled_from(sorted(POLICIES)), data=st.data())
def test_mutated_policy_configs(name, data):
    doc = _mutate(json.loads(POLICIES[name]), data)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_text(json.dumps(doc))
        _check(["dev", "--policy-config", path], Path(tmp) / "out", [path])

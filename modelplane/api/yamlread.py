"""Read a YAML file as Pulumi's own reader would accept it, or raise InputError with its line.

PyYAML is laxer than Pulumi's Go reader: it keeps the last of two equal keys and expands aliases
without limit. Both are refused here, as are files that are not UTF-8 text.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from ..errors import InputError, Problem
from .errors import format_path

# libyaml when PyYAML has it (10x faster on a fleet's stack file); the same nodes and marks either way.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Nodes a document may hold once aliases are expanded: the prod fleet's files hold a few thousand,
# an alias bomb ("billion laughs") billions.
MAX_NODES = 200_000
SYNTAX_FIX = "fix the YAML syntax (indentation, quotes, colons)"


def _line_of(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def decode(raw: bytes, display: str) -> str:
    """UTF-8 text without NUL bytes, or a problem naming the line of the first bad byte."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError([Problem(display, "(file)", f"not UTF-8 text (byte 0x{raw[exc.start]:02x} on this line)",
                                  "save the file as UTF-8", line)]) from None
    if "\x00" in text:
        raise InputError([Problem(display, "(file)", "holds a NUL character", "remove it; save the file as UTF-8 text",
                                  _line_of(text, text.index("\x00")))])
    return text.removeprefix("\ufeff")


def _open_quote(text: str) -> int | None:
    """The line of a quoted string that runs over several lines before the parser gave up:
    usually a missing closing quote."""
    last = None
    try:
        for token in yaml.scan(text, Loader=YAML_LOADER):
            if isinstance(token, yaml.ScalarToken) and token.style in ("'", '"') \
                    and token.end_mark.line > token.start_mark.line:
                last = token.start_mark.line + 1
    except yaml.YAMLError:
        pass
    return last


def _syntax_problem(text: str, exc: yaml.YAMLError, display: str) -> Problem:
    if isinstance(exc, yaml.reader.ReaderError):
        return Problem(display, "(file)", f"not valid YAML: character #x{exc.character:04x} is not allowed",
                       "remove the control character", _line_of(text, exc.position))
    problem = getattr(exc, "problem", None) or "cannot be parsed"
    mark, context = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    if "quoted scalar" in (getattr(exc, "context", None) or "") and context is not None:
        return Problem(display, "(file)", "not valid YAML: this quoted string is never closed",
                       "add the closing quote", context.line + 1)
    opened = _open_quote(text)
    if opened is not None and (mark is None or opened <= mark.line + 1):
        return Problem(display, "(file)", f"not valid YAML: the quoted string that starts on this line runs on to "
                       f"line {mark.line + 1 if mark else '?'} ({problem})", "close the quote on the line it starts",
                       opened)
    return Problem(display, "(file)", f"not valid YAML: {problem}", SYNTAX_FIX, mark.line + 1 if mark else None)


def _check_nodes(node, display: str) -> None:
    """Refuse duplicate keys and documents that alias expansion makes huge."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(n, path) -> int:
        if id(n) in open_nodes:
            raise InputError([Problem(display, format_path(path), "an alias (*name) refers to a value that holds it",
                                      "write the values out", n.start_mark.line + 1)])
        if id(n) in sizes:
            return sizes[id(n)]
        open_nodes.add(id(n))
        total = 1
        if isinstance(n, yaml.MappingNode):
            seen: dict = {}
            for key, value in n.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen and key.tag != "tag:yaml.org,2002:merge":
                        raise InputError([Problem(display, format_path((*path, key.value)),
                                                  f"key '{key.value}' appears twice in one mapping (first on line "
                                                  f"{seen[key.value]})", "keep one of them; Pulumi refuses "
                                                  "duplicate keys", key.start_mark.line + 1)])
                    seen[key.value] = key.start_mark.line + 1
                total += size(key, path) + size(value, (*path, str(getattr(key, "value", "?"))))
        elif isinstance(n, yaml.SequenceNode):
            total += sum(size(v, (*path, i)) for i, v in enumerate(n.value))
        if total > MAX_NODES:
            raise InputError([Problem(display, "(file)", f"expands to more than {MAX_NODES:,} values through "
                                      "aliases (*name)", "write the values out instead of nesting aliases",
                                      n.start_mark.line + 1)])
        sizes[id(n)] = total
        open_nodes.discard(id(n))
        return total

    if node is not None:
        size(node, ())


def parse(text: str, display: str):
    """(root node, data) of one YAML document."""
    loader = YAML_LOADER(text)
    try:
        node = loader.get_single_node()
        _check_nodes(node, display)
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        raise InputError([_syntax_problem(text, exc, display)]) from None
    except RecursionError:
        raise InputError([Problem(display, "(file)", "nests too deeply (or an alias refers to itself)",
                                  "flatten the structure", None)]) from None
    finally:
        loader.dispose()
    return node, data


def read_bytes(path: Path, display: str) -> bytes:
    """A file's bytes; InputError if it cannot be read."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError([Problem(display, "(file)", f"cannot read: {exc.strerror or exc}", "check the path")]) from None


def read(path: Path, display: str, raw: bytes | None = None):
    """(root node, data) of a YAML file (`raw`: its bytes, already read); InputError if it cannot
    be read or parsed."""
    return parse(decode(read_bytes(path, display) if raw is None else raw, display), display)

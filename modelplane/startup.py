"""What the `modelplane` command does before its imports, so that it starts sooner: pydantic is
asked for no plugins, and the code `dataclasses` and `typing` compile from text, and the regular
expressions `re` compiles, are compiled once per machine.

Only the command does this (cli.py calls `prepare` first; `keep` runs at exit); importing
modelplane as a library changes nothing in the importing process. docs/performance.md has the
measurements.
"""
from __future__ import annotations

import builtins
import marshal
import os
import sys
import types

# Texts kept in the code file: a plan needs about 800; past this many (old code piling up) the
# file starts afresh with the texts this command compiled.
_KEEP = 4096
_STATE: dict = {"path": None, "kept": {}, "new": {}}
_EVAL = "\0eval "     # keys of expressions (typing.ForwardRef); no text compiled by exec starts so


def prepare() -> None:
    """Before pydantic or any dataclass is imported."""
    _without_pydantic_plugins()
    _code_kept()


def _without_pydantic_plugins() -> None:
    """pydantic asks `pydantic.plugin._loader.get_plugins()` before it makes its first validator;
    that module imports importlib.metadata (email, zipfile, csv, tempfile, ...) and the call reads
    the entry points of every installed distribution: about 50 ms of a plan. The models are the
    command's own, and a plugin installed for an application's models would only watch and slow
    them. So, unless the user set pydantic's own switch, the loader answers "no plugins", which
    is pydantic's answer to PYDANTIC_DISABLE_PLUGINS=__all__. Set the variable to anything, an
    empty string included, and pydantic loads plugins as usual. tests/test_startup.py checks that
    pydantic 2.13 still asks the loader by that name."""
    if "PYDANTIC_DISABLE_PLUGINS" in os.environ or "pydantic.plugin._loader" in sys.modules:
        return
    loader = types.ModuleType("pydantic.plugin._loader", "No pydantic plugins (modelplane.startup).")
    loader.get_plugins = lambda: ()
    sys.modules["pydantic.plugin._loader"] = loader


def _code_file():
    from importlib.util import MAGIC_NUMBER

    import _sre

    from .usercache import cache_dir

    folder = cache_dir()
    # bytecode is this interpreter's (magic number) at this optimisation level (-O drops asserts);
    # a pattern's code is its regular expression engine's (its MAGIC)
    name = f"compiled-code-{MAGIC_NUMBER.hex()}-{_sre.MAGIC}-O{sys.flags.optimize}.marshal"
    return folder / name if folder else None


def _read(path) -> dict:
    try:
        kept = marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    if kept.__class__ is not dict or not all(v.__class__ is types.CodeType if k.__class__ is str else _pattern(k, v)
                                           for k, v in kept.items()):
        return {}
    return kept


def _pattern(key, value) -> bool:
    """A kept pattern: (text, flags) -> what `_sre.compile` was given for it (`_patterns_kept`)."""
    return (key.__class__ is tuple and len(key) == 2 and key[0].__class__ in (str, bytes) and key[1].__class__ is int
            and value.__class__ is tuple and len(value) == 5 and value[0].__class__ is int
            and value[1].__class__ is list and all(c.__class__ is int for c in value[1])
            and value[2].__class__ is int and value[3].__class__ is dict and value[4].__class__ is tuple)


def _code_kept() -> None:
    """Code Python compiles from text on every run, kept instead (by the exact text, for this
    interpreter's bytecode at this -O level):

    - A dataclass's __init__, __repr__, __eq__ (and __setattr__, __delattr__ and __hash__ when
      frozen) are text that `dataclasses` compiles with exec() each time the class is made: about
      0.2 ms a method, 60-110 ms for the 95 dataclasses a plan imports (ours, pydantic's,
      annotated_types'). Python keeps no bytecode for them, as it does for modules.
    - An annotation written as text (`from __future__ import annotations`) that pydantic
      evaluates becomes a typing.ForwardRef, which compiles the text: ~1,100 a plan, ~20 ms.

    `dataclasses` finds an `exec`, and `typing` a `compile`, of this module's first: a text seen
    before runs from the kept code; any other is compiled as they compile it (filename
    "<string>", no __future__ flags inherited) and kept at exit. A missing or unreadable file
    means compiling again."""
    import atexit
    import dataclasses
    import typing

    if "exec" in vars(dataclasses) or "compile" in vars(typing):
        return                              # someone else's, or done already
    path = _code_file()
    kept = _read(path) if path is not None else {}
    new: dict = {}
    compile_, exec_ = builtins.compile, builtins.exec

    def _exec(source, globals=None, locals=None, /):
        if source.__class__ is not str:
            return exec_(source, globals, locals)
        code = kept.get(source)
        if code is None:
            code = new[source] = compile_(source, "<string>", "exec", dont_inherit=True)
        return exec_(code, globals, locals)

    def _compile(source, filename, mode, flags=0, dont_inherit=False, optimize=-1, **more):
        if source.__class__ is not str or filename != "<string>" or mode != "eval" or flags or optimize != -1 \
                or more:
            return compile_(source, filename, mode, flags, dont_inherit, optimize, **more)
        key = _EVAL + source                # an expression's text, apart from exec's
        code = kept.get(key)
        if code is None:
            code = new[key] = compile_(source, "<string>", "eval", dont_inherit=True)
        return code

    dataclasses.exec = _exec
    typing.compile = _compile
    _patterns_kept(kept, new)
    _STATE.update(path=path, kept=kept, new=new)
    atexit.register(keep)


def _patterns_kept(kept: dict, new: dict) -> None:
    """`re` parses a pattern's text and generates its engine code on every run (117 patterns a
    plan, 25-38 ms: pydantic's, ours, the stdlib's). `re._compiler.compile` ends by handing
    `_sre.compile` the text, flags, code and groups; for a text and flags seen before, the kept
    arguments go to `_sre.compile` directly. Any other pattern is compiled by `re` itself, which
    hands its arguments to a recorder of this module's, and they are kept at exit. Same Pattern
    (equal flags, text and code; tests/test_startup.py)."""
    import _sre
    import threading
    from re import DEBUG, _compiler

    if getattr(_compiler.compile, "__module__", None) == __name__:
        return
    compile_, engine, local = _compiler.compile, _sre.compile, threading.local()

    class _Recorder:
        """`_sre` for `re._compiler`: what it compiles, recorded on the way (per thread, so a
        pattern another thread compiles meanwhile is never kept under this one's text)."""

        def __getattr__(self, name):
            return getattr(_sre, name)

        @staticmethod
        def compile(pattern, flags, code, groups, groupindex, indexgroup):
            local.made = (int(flags), [int(c) for c in code], int(groups), dict(groupindex), tuple(indexgroup))
            return engine(pattern, flags, code, groups, groupindex, indexgroup)

    def _compile(p, flags=0):
        if p.__class__ not in (str, bytes) or flags & DEBUG:   # a parsed pattern, or one that prints itself
            return compile_(p, flags)
        key = (p, int(flags))
        args = kept.get(key) or new.get(key)
        if args is not None:
            return engine(p, *args)
        local.made = None
        pattern = compile_(p, flags)
        if local.made is not None:
            new[key] = local.made
        return pattern

    _compile.__module__, _compile.__wrapped__ = __name__, compile_
    _compiler._sre = _Recorder()
    _compiler.compile = _compile


def compiled_here() -> int:
    """How many texts this process compiled for dataclasses, typing and re (none once all are kept)."""
    return len(_STATE["new"])


def keep() -> None:
    """At the command's end: the texts it compiled join the kept ones (written whole, atomically;
    a failure to write is only a cache miss next time)."""
    path, kept, new = _STATE["path"], _STATE["kept"], _STATE["new"]
    if path is None or not new:
        return
    from .usercache import write_whole

    merged = {**kept, **new} if len(kept) + len(new) <= _KEEP else dict(new)
    try:
        data = marshal.dumps(merged)
    except ValueError:          # something marshal cannot write: nothing kept, compiled again next time
        return
    if not write_whole(path, data):
        return
    kept.clear()        # in place: the `exec` dataclasses calls reads these two
    kept.update(merged)
    new.clear()

"""What the `modelplane` command does before its imports, so that it starts sooner: pydantic is
asked for no plugins, and the code `dataclasses` and `typing` compile from text is compiled
once per machine.

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

    from .usercache import cache_dir

    folder = cache_dir()
    # bytecode is this interpreter's (magic number) at this optimisation level (-O drops asserts)
    return folder / f"compiled-code-{MAGIC_NUMBER.hex()}-O{sys.flags.optimize}.marshal" if folder else None


def _read(path) -> dict:
    try:
        kept = marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    if kept.__class__ is not dict or not all(k.__class__ is str and v.__class__ is types.CodeType
                                           for k, v in kept.items()):
        return {}
    return kept


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
    _STATE.update(path=path, kept=kept, new=new)
    atexit.register(keep)


def compiled_here() -> int:
    """How many texts this process compiled for dataclasses and typing (none once all are kept)."""
    return len(_STATE["new"])


def keep() -> None:
    """At the command's end: the texts it compiled join the kept ones (written whole, atomically;
    a failure to write is only a cache miss next time)."""
    path, kept, new = _STATE["path"], _STATE["kept"], _STATE["new"]
    if path is None or not new:
        return
    from .usercache import write_whole

    merged = {**kept, **new} if len(kept) + len(new) <= _KEEP else dict(new)
    if not write_whole(path, marshal.dumps(merged)):
        return
    kept.clear()        # in place: the `exec` dataclasses calls reads these two
    kept.update(merged)
    new.clear()

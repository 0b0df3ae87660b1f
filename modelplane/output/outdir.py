"""`plan --out DIR` and `--report FILE`: checked before the plan runs; a re-plan into the same
folder replaces only the files the previous plan wrote (listed in DIR/.modelplane-out)."""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import InputError, Problem

MARK = ".modelplane-out"


def _creatable(path: Path, option: str) -> None:
    """The first existing ancestor is a writable folder."""
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise InputError([Problem(str(path), option, f"cannot create it: {parent} is a file", "choose another path")])
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError([Problem(str(path), option, f"cannot create it: {parent} is not writable",
                                  "choose a folder you can write to")])


def check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise InputError([Problem(str(out), "--out", "is a file, not a folder", "name a new or empty folder")])
    if not out.exists():
        _creatable(out, "--out")
        return
    if not os.access(out, os.W_OK | os.X_OK):
        raise InputError([Problem(str(out), "--out", "the folder is not writable", "choose a folder you can write to")])
    if any(out.iterdir()) and not (out / MARK).is_file():
        raise InputError([Problem(str(out), "--out", f"the folder holds files but no {MARK} list of what a plan "
                                  "wrote there, so a plan cannot tell its own files from yours",
                                  "name a new or empty folder (or empty this one); a folder a plan wrote is "
                                  "replaced file by file")])


def check_report(path: Path) -> None:
    if path.is_dir():
        raise InputError([Problem(str(path), "--report", "is a folder", "name an HTML file, e.g. plan.html")])
    if not path.exists():
        _creatable(path, "--report")
    elif not os.access(path, os.W_OK):
        raise InputError([Problem(str(path), "--report", "the file is not writable", "choose another file")])


def _ours(out: Path) -> list[Path]:
    mark = out / MARK
    if not mark.is_file():
        return []
    root = out.resolve()
    listed = [out / line for line in mark.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    return [p for p in listed if root in p.resolve().parents and p.is_file()]


def write(run, out: Path) -> int:
    """Remove what the previous plan wrote here, write this plan's files, list them in MARK."""
    from .report import write_out

    for path in _ours(out):
        path.unlink()
        for parent in path.parents:
            if parent == out or any(parent.iterdir()):
                break
            parent.rmdir()
    out.mkdir(parents=True, exist_ok=True)
    before = {p for p in out.rglob("*") if p.is_file()}
    count = write_out(run, out)
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and p not in before)
    (out / MARK).write_text("".join(f"{p}\n" for p in written if p != MARK), encoding="utf-8")
    return count

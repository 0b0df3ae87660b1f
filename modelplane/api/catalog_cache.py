"""Catalogs kept across runs in the user's cache directory (usercache.py).

Reading and checking the catalog's YAML files costs a plan about 50 ms (16 files parsed with
their lines, then validated); the checked catalog unpickles in about 1 ms. A kept catalog is
named for everything it is made from: the files' paths and bytes (the key `loader._catalog_key`
reads), the project root its sources are shown against, this package's `api` code (size and
mtime of every module, so an edited model class is never read from an old pickle), and the
Python and pydantic versions. A catalog with problems is never kept: its errors are made again.
A missing, unreadable or foreign file only means loading the catalog again.
"""
from __future__ import annotations

import hashlib
import pickle
import sys
from contextlib import suppress
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_KEEP = 8           # catalogs kept: a few projects' and branches' worth, 40-100 KiB each


def path_for(key: tuple) -> Path | None:
    """Where the catalog for `key` is kept (None: no usable cache directory)."""
    from ..usercache import cache_dir

    folder = cache_dir()
    if folder is None:
        return None
    import pydantic

    digest = hashlib.sha256(f"{sys.version_info[:3]} {pydantic.VERSION} {pickle.HIGHEST_PROTOCOL}".encode())
    try:
        for f in sorted(_HERE.glob("*.py")):
            st = f.stat()
            digest.update(f"{f.name} {st.st_size} {st.st_mtime_ns}\n".encode())
    except OSError:
        return None
    directory, user, root, files = key
    digest.update(repr((directory, user, root)).encode())
    for path, raw in files:
        digest.update(f"\n{path} {len(raw)}\n".encode())
        digest.update(raw)
    return folder / f"catalog-{digest.hexdigest()[:24]}.pickle"


def kept(path: Path, kind: type):
    """The catalog (a `kind`) kept at `path` (`path_for`), or None."""
    try:
        with path.open("rb") as f:
            found = pickle.load(f)
    except Exception:  # noqa: BLE001  (absent, truncated, or made by other code: load it again)
        return None
    return found if type(found) is kind else None


def keep(path: Path, catalog) -> None:
    """Keep `catalog` at `path` (`path_for`): written whole (a temporary file renamed), or not at all."""
    from ..usercache import write_whole

    with suppress(pickle.PicklingError, TypeError, AttributeError):
        write_whole(path, pickle.dumps(catalog, protocol=pickle.HIGHEST_PROTOCOL))
    with suppress(OSError):
        # the newest few: an edited catalog or package leaves its old pickles behind
        old = sorted(path.parent.glob("catalog-*.pickle"), key=lambda p: p.stat().st_mtime_ns)[:-_KEEP]
        for stale in old:
            stale.unlink(missing_ok=True)

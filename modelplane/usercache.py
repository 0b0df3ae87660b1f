"""The user's cache directory for what is costly to build and safe to rebuild: a cache miss, an
unreadable file or a missing directory only means building it again."""
from __future__ import annotations

import os
import threading
from pathlib import Path


def cache_dir() -> Path | None:
    """$XDG_CACHE_HOME/modelplane (default ~/.cache/modelplane), made if missing; None if it cannot be."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "modelplane"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder


def write_whole(path: Path, data: bytes) -> bool:
    """`data` written to `path` whole or not at all (a temporary file beside it, renamed), so a run
    reading the file meanwhile sees the old bytes or the new; False if it could not be written."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
        return True
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        return False

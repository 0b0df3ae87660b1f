"""The user's cache directory for what is costly to build and safe to rebuild: a cache miss, an
unreadable file or a missing directory only means building it again."""
from __future__ import annotations

import os
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

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
os.environ.setdefault("PULUMI_ERROR_OUTPUT_STRING", "true")


@pytest.fixture(scope="session")
def schema_catalog():
    """The upstream schemas from ../shared, through the shared validator (not copied here)."""
    tools = SHARED / "tools"
    if not (tools / "validate_manifests.py").exists():
        pytest.fail(f"../shared/tools/validate_manifests.py not found at {tools}; CI runs with ../shared beside the repo")
    sys.path.insert(0, str(tools))
    from validate_manifests import Catalog
    return Catalog()


@pytest.fixture(scope="session")
def catalog():
    from modelplane.api import load_catalog
    return load_catalog()

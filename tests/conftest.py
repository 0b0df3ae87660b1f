import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
os.environ.setdefault("PULUMI_ERROR_OUTPUT_STRING", "true")
LOCAL_SCHEMAS = Path(__file__).parent / "schemas"   # kinds ../shared lacks; see tests/schemas/README.md


@pytest.fixture(scope="session")
def schema_catalog():
    """The upstream schemas from ../shared, through the shared validator (not copied here), plus
    tests/schemas for the few kinds ../shared lacks."""
    tools = SHARED / "tools"
    if not (tools / "validate_manifests.py").exists():
        pytest.fail(f"../shared/tools/validate_manifests.py not found at {tools}; CI runs with ../shared beside the repo")
    sys.path.insert(0, str(tools))
    from validate_manifests import SCHEMA_DIR, Catalog
    return Catalog([SCHEMA_DIR, LOCAL_SCHEMAS])


@pytest.fixture(scope="session")
def catalog():
    from modelplane.api import load_catalog
    return load_catalog()

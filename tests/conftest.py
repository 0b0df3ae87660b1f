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


# Offline runs of the example stacks, shared by the test modules (read-only: copy before editing).
def _run(stack):
    from modelplane import offline
    return offline.run(stack)


@pytest.fixture(scope="session")
def gke():
    return _run("infra-gke-us-central1")


@pytest.fixture(scope="session")
def eks():
    return _run("infra-eks-us-east-1")


@pytest.fixture(scope="session")
def prod():
    return _run("prod")


@pytest.fixture(scope="session")
def example():
    return _run("example-5p3d")


@pytest.fixture(scope="session")
def lab():
    return _run("lab")

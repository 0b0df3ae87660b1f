import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"   # optional: a cross-check validator some CI machines have beside the clone
os.environ.setdefault("PULUMI_ERROR_OUTPUT_STRING", "true")


@pytest.fixture(scope="session")
def schema_catalog():
    """The repository's upstream schemas (schemas/, see SOURCES.md) through modelplane.manifests:
    structure, unknown fields and every CRD's CEL rules."""
    from modelplane.manifests import Catalog
    return Catalog()


@pytest.fixture
def shared_validator():
    """../shared/tools/validate_manifests.py, an independent validator; the test skips without it."""
    tool = SHARED / "tools" / "validate_manifests.py"
    if not tool.exists():
        pytest.skip(f"optional cross-check: {tool} is not beside the clone")
    return tool


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

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PULUMI_ERROR_OUTPUT_STRING", "true")
# Plans in tests read the shipped sizing profiles and never start the estimator, whether or not the
# extra is installed (tests/test_sizing_estimator.py runs it on purpose).
os.environ["MODELPLANE_ESTIMATE"] = "never"

# tests/e2e builds and runs the real engine and control plane: only under `make e2e`.
collect_ignore = [] if os.environ.get("MODELPLANE_E2E") == "1" else ["e2e"]


@pytest.fixture(scope="session")
def schema_catalog():
    """The repository's upstream schemas (schemas/, see SOURCES.md) through modelplane.manifests:
    structure, unknown fields and every CRD's CEL rules."""
    from modelplane.manifests import Catalog
    return Catalog()


@pytest.fixture(scope="session")
def catalog():
    from modelplane.api import load_catalog
    return load_catalog()


# Offline runs of the example stacks, shared by the test modules (read-only: copy before editing).
def _run(stack):
    from helpers import planned
    return planned(stack)


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


@pytest.fixture(scope="session")
def schema():
    """The multi-language package schema the Pulumi SDK's analyzer infers from provider/__main__.py."""
    import importlib.util
    import json

    from pulumi.provider.experimental.component import ComponentProvider

    spec = importlib.util.spec_from_file_location("provider_main", ROOT / "provider" / "__main__.py")
    host = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(host)           # not __main__: defines COMPONENTS without serving
    return json.loads(ComponentProvider(host.COMPONENTS, "modelplane", None, "0.1.0").schema)


# How `make test` spreads the suite over its workers (pytest-xdist `--dist loadgroup
# --no-loadscope-reorder`): each file is one unit, as with loadfile, except that the modules planning
# the example stacks and the bad-config corpus with both engines and the pack share one unit, so
# tests/helpers.py `planned` computes each of those plans once. Units are handed out longest first:
# the estimator (minutes of AIConfigurator) starts at once on one worker while the other takes the
# shared unit, then the next longest (by `--durations` on 2 cores, 2026-11-27: pyright and tsc, the
# exact solver, the scheduler's properties, the wheel's virtualenv, each stack's schemas), so that no
# long file is left to run alone at the end; the short files fill in behind them.
SHARED = ("test_engines", "test_gate", "test_policy_direct", "test_policy_corpus")
FIRST = ("test_sizing_estimator", "plans", "test_package", "test_exact", "test_scheduler_properties", "test_project",
         "test_stacks")


@pytest.hookimpl(tryfirst=True)       # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    def unit(item):
        stem = Path(str(item.fspath)).stem
        return "plans" if stem in SHARED else stem

    for item in items:
        item.add_marker(pytest.mark.xdist_group(unit(item)))
    items.sort(key=lambda item: FIRST.index(unit(item)) if unit(item) in FIRST else len(FIRST))   # stable

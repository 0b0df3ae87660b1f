"""The catalog kept across runs (api/catalog_cache.py): the same catalog as one read from its
files, read again whenever a file, the project or the package's code changes, and never kept
when it has problems."""
import os
import time

import pytest

from modelplane.api import catalog_cache, loader
from modelplane.errors import InputError

CLASS = """classes:
  - name: {name}
    description: One L4 on g2-standard-4.
    capabilities:
      gpu: {{vendor: nvidia, product: L4, architecture: Ada, memoryGiB: 24, count: 1, features: [fp8]}}
      interconnect: {{type: pcie}}
      network: {{fabric: tcp, bandwidthGbps: 10}}
    device:
      driver: gpu.nvidia.com
      attributes: {{productName: NVIDIA L4, architecture: Ada Lovelace}}
      matchAttributes: [architecture]
      memoryMiB: 22888
    provisioning:
      gke:
        machineType: g2-standard-4
        accelerator: {{type: nvidia-l4, count: 1}}
"""


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """A cache directory of the test's own, and no catalog loaded in this process yet."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(loader, "_CATALOGS", {})
    return tmp_path / "cache" / "modelplane"


def _loads(monkeypatch) -> list:
    """Calls of the YAML-reading load from now on."""
    calls, real = [], loader._load_catalog
    monkeypatch.setattr(loader, "_load_catalog", lambda *a: calls.append(a) or real(*a))
    return calls


def _fresh(monkeypatch):
    monkeypatch.setattr(loader, "_CATALOGS", {})     # as a new process: nothing loaded in memory


def test_a_kept_catalog_is_the_catalog_its_files_make(cache, monkeypatch):
    first = loader.load_catalog()
    assert len(list(cache.glob("catalog-*.pickle"))) == 1
    _fresh(monkeypatch)
    calls = _loads(monkeypatch)
    again = loader.load_catalog()
    assert calls == []                      # unpickled: no YAML read, nothing validated
    assert again == first
    assert again.classes["gke-l4-1x-g2"] == first.classes["gke-l4-1x-g2"]
    assert again.prices == first.prices and again.profile_dirs == first.profile_dirs


def test_an_edited_user_file_is_read_again(cache, monkeypatch, tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text(CLASS.format(name="my-l4"))
    assert "my-l4" in loader.load_catalog(extra=mine).classes
    mine.write_text(CLASS.format(name="my-other-l4"))
    _fresh(monkeypatch)
    calls = _loads(monkeypatch)
    classes = loader.load_catalog(extra=mine).classes
    assert len(calls) == 1 and "my-other-l4" in classes and "my-l4" not in classes


def test_edited_package_code_is_a_different_catalog(cache, monkeypatch, tmp_path):
    """A model class changed since the pickle was made must not be read from it."""
    loader.load_catalog()
    code = tmp_path / "api"
    code.mkdir()
    (code / "catalog.py").write_text("# changed\n")
    monkeypatch.setattr(catalog_cache, "_HERE", code)
    _fresh(monkeypatch)
    calls = _loads(monkeypatch)
    loader.load_catalog()
    assert len(calls) == 1 and len(list(cache.glob("catalog-*.pickle"))) == 2


def test_a_broken_kept_file_means_reading_the_catalog_again(cache, monkeypatch):
    first = loader.load_catalog()
    for kept in cache.glob("catalog-*.pickle"):
        kept.write_bytes(b"\x80\x05not a pickle")
    _fresh(monkeypatch)
    calls = _loads(monkeypatch)
    assert loader.load_catalog() == first and len(calls) == 1


def test_a_catalog_with_problems_is_never_kept(cache, monkeypatch, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(CLASS.format(name="my-l4").replace("count: 1,", "count: many,"))
    for _ in range(2):
        _fresh(monkeypatch)
        with pytest.raises(InputError) as exc:
            loader.load_catalog(extra=bad)
        assert any(p.file.endswith("bad.yaml") and "count" in p.path for p in exc.value.problems)
    assert not list(cache.glob("catalog-*.pickle"))


def test_no_cache_directory_only_means_loading(monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "/dev/null/none")
    monkeypatch.setattr(loader, "_CATALOGS", {})
    calls = _loads(monkeypatch)
    assert "gke-l4-1x-g2" in loader.load_catalog().classes and len(calls) == 1


def test_old_catalogs_are_pruned(cache, monkeypatch, tmp_path):
    mine = tmp_path / "mine.yaml"
    for i in range(catalog_cache._KEEP + 3):
        mine.write_text(CLASS.format(name=f"my-l4-{i}"))
        _fresh(monkeypatch)
        loader.load_catalog(extra=mine)
        newest = max(cache.glob("catalog-*.pickle"), key=lambda p: p.stat().st_mtime_ns)
        os.utime(newest, ns=(time.time_ns() + i * 10**9,) * 2)     # distinct mtimes, in the order made
    kept = list(cache.glob("catalog-*.pickle"))
    assert len(kept) == catalog_cache._KEEP
    _fresh(monkeypatch)
    calls = _loads(monkeypatch)
    assert f"my-l4-{catalog_cache._KEEP + 2}" in loader.load_catalog(extra=mine).classes and calls == []

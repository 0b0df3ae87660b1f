"""CEL outcomes are shared by every Matcher of a process, keyed by the values an expression names:
the sharing must never give one class another's answer or error."""
import json

import pytest

from modelplane.scheduler import cel
from modelplane.scheduler.cel import CelError, Matcher


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    """No outcome from an earlier test or run: this process's and the kept ones start empty."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(cel, "_OUTCOMES", {})
    monkeypatch.setattr(cel, "_store", {})
    cel._identifiers.cache_clear()


def _caps(memory, fabric="none"):
    return {"gpu": {"product": "H100", "memoryGiB": memory, "count": 8}, "network": {"fabric": fabric}}


def test_classes_with_the_same_values_share_one_evaluation(monkeypatch):
    calls = []
    real = cel._outcome
    monkeypatch.setattr(cel, "_outcome", lambda *a: calls.append(a[0]) or real(*a))
    expr = "gpu.memoryGiB >= 80 && gpu.count == 8 && 1 == 1"
    first, second = Matcher(), Matcher()      # the loader's and the scheduler's
    assert first.matches(expr, "a", _caps(80, "efa")) is True
    assert second.matches(expr, "b", _caps(80, "tcpx")) is True     # network is not read: shared
    assert second.matches(expr, "c", _caps(40)) is False
    assert calls == [expr, expr]


def test_a_value_of_another_type_is_evaluated_again():
    expr = "gpu.memoryGiB == 80 && 2 == 2"
    assert Matcher().matches(expr, "int", _caps(80)) is True
    with pytest.raises(CelError, match="'==' cannot compare or combine number and int"):
        Matcher().matches(expr, "float", _caps(80.0))      # cel-python has no double == int overload


def test_a_shared_error_names_the_class_it_is_raised_for():
    expr = "gpu.missingField > 1 && 3 == 3"
    with pytest.raises(CelError, match="^on class 'first': no field 'missingField'"):
        Matcher().matches(expr, "first", _caps(80))
    with pytest.raises(CelError, match="^on class 'second': no field 'missingField'"):
        Matcher().matches(expr, "second", _caps(80))


def test_a_variable_absent_from_one_class_is_an_error_there_only():
    expr = "network.fabric == 'efa' || 4 == 5"
    assert Matcher().matches(expr, "efa", _caps(80, "efa")) is True
    with pytest.raises(CelError, match="^on class 'bare': unknown name 'network'"):
        Matcher().matches(expr, "bare", {"gpu": {"memoryGiB": 80}})


def test_a_kept_file_not_of_outcomes_is_ignored():
    expr = "gpu.memoryGiB >= 80 && 5 == 5"
    values = cel._read_values(expr, {"gpu": _caps(40)["gpu"]})
    path = cel._kept_file()
    path.write_text(json.dumps({"names": {}, "outcomes": [[expr, cel.NODE_VARIABLES, values, "yes"]]}))
    cel._store.clear()
    assert Matcher().matches(expr, "small", _caps(40)) is False


def test_outcomes_kept_by_one_run_answer_the_next(monkeypatch):
    expr = "gpu.memoryGiB >= 80 && 6 == 6"
    assert Matcher().matches(expr, "big", _caps(80)) is True
    cel._save()
    cel._store.clear()
    monkeypatch.setattr(cel, "_OUTCOMES", {})
    monkeypatch.setattr(cel, "_outcome", lambda *a: pytest.fail("evaluated again"))
    assert Matcher().matches(expr, "big-too", _caps(80, "efa")) is True

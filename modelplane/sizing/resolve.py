"""Sized deployments through a plan: their candidates as scheduler Options before it runs, the
chosen configuration as a concrete ModelDeployment after it (so rendering, cost and policies see
an ordinary deployment), and the `sizing` section of the plan document."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..api.deployment import ModelDeployment, Prefill, Workers
from ..errors import InputError, Problem
from ..scheduler import Demand, Matcher
from ..scheduler.model import Options

if TYPE_CHECKING:       # imported where a deployment is sized (`size_all`): most plans size none
    from .candidates import Candidate, Sizing


def profile_folders(catalog) -> list:
    from ..usercache import cache_dir

    cache = cache_dir()
    return [*catalog.profile_dirs, *([cache / "profiles"] if cache else [])]


def fleet_classes(md: ModelDeployment, catalog, inventories: dict, matcher: Matcher) -> tuple[dict, list[str]]:
    """The classes of the fleet's pools this deployment may use (cluster selector, decode node
    selector) that name an estimator system: class -> (system, GPUs per node); and the others."""
    from ..scheduler.cel import cluster_place
    from ..scheduler.filter import selector_problem

    sel = md.cluster_selector
    out, without = {}, set()
    for inv in inventories.values():
        where = cluster_place(inv["name"], inv.get("labels", {}), inv.get("region", ""), inv.get("cloud", ""))
        if selector_problem(sel.match_labels, sel.cel or "", where, matcher):
            continue
        for pool in inv.get("pools", []):
            cls = catalog.classes.get(pool["class"])
            if cls is None or not matcher.matches(md.node_selector.cel, cls.name, pool["capabilities"]):
                continue
            if cls.sizing is None:
                without.add(cls.name)
            else:
                out[cls.name] = (cls.sizing.system, int(pool["gpusPerNode"]))
    return out, [f"{c}: no estimator system (catalog `sizing.system`); never a candidate" for c in sorted(without)]


def size_all(spec, catalog, inventories: dict, where: str, estimate=None) -> dict[str, Sizing]:
    """Candidates of every sized deployment. A missing profile is estimated when the extra is
    installed (`estimate`, cached in the user cache), else the plan is refused with the command
    that writes it."""
    if not any(md.sized for md in spec.deployments):
        return {}           # no profile read, and the profiles' code not even imported
    from .candidates import candidates_for
    from .estimator import EstimatorError, missing as estimator_missing
    from .profiles import Profiles

    matcher = Matcher()
    profiles = Profiles(profile_folders(catalog))
    out, problems = {}, []
    for i, md in enumerate(spec.deployments):
        if not md.sized:
            continue
        classes, notes = fleet_classes(md, catalog, inventories, matcher)
        sizing = candidates_for(md, classes, profiles)
        if sizing.missing and estimate is None and may_estimate() and estimator_missing() is None:
            from .estimator import estimate as run_estimator
            estimate = run_estimator
        if sizing.missing and estimate is not None:
            try:
                _estimate_into_cache(md, sizing.missing, estimate)
            except EstimatorError as exc:
                problems.append(Problem(where, f"modelplane:deployments[{i}].traffic", str(exc),
                                        _size_fix(md, sizing.missing)))
                continue
            profiles = Profiles(profile_folders(catalog))
            sizing = candidates_for(md, classes, profiles)
        if sizing.missing:
            names = ", ".join(f"{c} ({s})" for c, s in sizing.missing)
            t = md.traffic
            why = "plan does not estimate (MODELPLANE_ESTIMATE=never)" if not may_estimate() else \
                "the estimator is not installed"
            problems.append(Problem(where, f"modelplane:deployments[{i}].traffic",
                                    f"{md.key}: no sizing profile of {md.model.uri} for {t.input_tokens} input / "
                                    f"{t.output_tokens} output tokens on {names}, and {why}",
                                    _size_fix(md, sizing.missing)))
            continue
        sizing.notes = notes + sizing.notes
        out[md.key] = sizing
    if problems:
        raise InputError(problems)
    return out


def may_estimate() -> bool:
    """Whether `plan` may run the estimator for a missing profile: not when MODELPLANE_ESTIMATE=never
    (CI and tests, where a plan must stay quick and read only the profiles it is given)."""
    import os

    return os.environ.get("MODELPLANE_ESTIMATE", "").lower() != "never"


def _size_fix(md: ModelDeployment, missing) -> str:
    t = md.traffic
    classes = ",".join(sorted({c for c, _ in missing}))
    return (f"run: modelplane size {md.model.uri} --classes {classes} --isl {t.input_tokens} --osl {t.output_tokens} "
            "in your project (it writes catalog/profiles/), or pip install 'modelplane[sizing]' to let plan "
            "estimate it")


def _estimate_into_cache(md: ModelDeployment, missing, estimate) -> None:
    from datetime import date

    from ..usercache import cache_dir
    from .command import write_profile
    from .estimator import EstimatorError, estimator_model

    cache = cache_dir()
    if cache is None:
        raise EstimatorError("no user cache directory to keep the estimate in")
    t = md.traffic
    runs = [estimate(estimator_model(md.model.uri), system, t.input_tokens, t.output_tokens)
            for system in sorted({s for _, s in missing})]
    write_profile(md.model.uri, runs, cache / "profiles", date.today())


def demand_of(md: ModelDeployment, c: Candidate, catalog) -> Demand:
    """A candidate as the scheduler sees it: the deployment resolved to the candidate's shape (so
    every Filter rule reads it as it reads any deployment: memory per rank, fabrics, NVLink
    domain), its roles kept to the candidate's class."""
    from dataclasses import replace

    from ..engine.fleet import demand_from

    d = demand_from(resolved(md, c), catalog)
    return replace(d, roles=tuple(replace(r, classes=frozenset({c.cls})) for r in d.roles), spot=md.spot_refusal)


def options_of(sizings: dict[str, Sizing], catalog) -> list[Options]:
    return [Options(key, tuple(demand_of(s.md, c, catalog) for c in s.candidates))
            for key, s in sorted(sizings.items()) if s.candidates]


def resolved(md: ModelDeployment, c: Candidate) -> ModelDeployment:
    """The deployment as the chosen candidate runs it: replicas, decode workers and prefill set."""
    if c is None:
        return md.model_copy(update={"replicas": 0})
    # slo and traffic stay with the plan's sizing rows: the resolved spec is an ordinary deployment
    # (the policy pack validates it as one).
    # Spot stays refused as for the SLO-sized deployment it was (unless it said allowSpot).
    update = {"replicas": c.replicas, "workers": Workers(count=c.decode.workers, topology=c.decode.topology),
              "slo": None, "traffic": None, "allow_spot": md.allow_spot if md.allow_spot is not None else not md.spot_refusal}
    if c.prefill is None:
        update["prefill"] = None
    else:
        mine = md.prefill or Prefill(node_selector=md.node_selector, engine=md.engine)
        update["prefill"] = mine.model_copy(update={"workers": Workers(count=c.prefill.workers, topology=c.prefill.topology)})
    return md.model_copy(update=update)


def chosen(sizings: dict[str, Sizing], plan) -> dict[str, Candidate | None]:
    return {key: (s.candidates[plan.chosen[key]] if key in plan.chosen else None) for key, s in sizings.items()}


__all__ = ["chosen", "options_of", "resolved", "size_all"]


def apply(spec, sizings: dict[str, Sizing], plan):
    """The spec with every sized deployment resolved to its chosen configuration, and per sized
    deployment (its Sizing, the chosen Candidate or None). A deployment no candidate fits at all
    is reported unplaced (reason `slo`) with one target replica."""
    from ..scheduler.model import SLO, Rejection, Unplaced

    picks = chosen(sizings, plan)
    if not picks:
        return spec, {}
    for key, s in sorted(sizings.items()):
        if s.candidates:
            continue
        detail = "; ".join(s.notes) or "no class of the fleet it may use names an estimator system"
        plan.unplaced.append(Unplaced(key, 0, (Rejection("-", None, SLO, detail),)))
        plan.desired[key] = 1
        plan.progress.append({"deployment": key, "target": 1, "placed": 0, "percent": 0.0,
                              "replicas": {"target": 1, "placed": 0},
                              "stuck": {"replica": 0, "role": None, "reason": SLO, "detail": detail}})
    plan.unplaced.sort(key=lambda u: (u.deployment, u.replica))
    plan.progress.sort(key=lambda row: row["deployment"])
    deployments = []
    for md in spec.deployments:
        if md.key in picks:
            c = picks[md.key]
            md = resolved(md, c) if c is not None else md.model_copy(update={"replicas": 1, "slo": None,
                                                                                 "traffic": None})
        deployments.append(md)
    return spec.model_copy(update={"deployments": deployments}), {k: (sizings[k], picks[k]) for k in sorted(picks)}


def gate_row(s: Sizing, c: Candidate | None, placed: int) -> dict:
    """What the `slo` policy reads from a sized deployment's component: its objective and traffic,
    the prediction of the chosen configuration and the traffic its placed replicas serve."""
    from .report import choice, predicted, slo_json

    t = s.md.traffic
    return {"slo": slo_json(s.md.slo),
            "traffic": {"requestsPerSecond": t.requests_per_second, "inputTokens": t.input_tokens,
                        "outputTokens": t.output_tokens},
            "choice": choice(c) if c else None, "predicted": predicted(c, t.output_tokens) if c else None,
            "served": {"replicas": placed, "requestsPerSecond": round(placed * c.point[2], 4) if c else 0.0},
            "notes": list(s.notes)}

"""Environment runs: several stacks in dependency order, bounded parallelism, honest results.

An environment is an apps stack plus the infra stacks its `modelplane:fleet` names. Infra stacks
go first (in parallel, at most `parallel` at a time), then the apps stacks that read them; destroy
runs the same graph backwards. A stack whose prerequisite failed is skipped, never run against a
half-applied fleet; stacks that do not depend on the failure still finish.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from ..api import load_stack, stack_file
from ..errors import InputError, Problem
from .driver import StackLocked

OPERATIONS = ("preview", "up", "refresh", "destroy")
OK, FAILED, SKIPPED, LOCKED, PENDING, RUNNING = "ok", "failed", "skipped", "locked", "pending", "running"


@dataclass(frozen=True)
class Step:
    stack: str
    needs: tuple[str, ...] = ()      # stacks whose outputs this one reads (StackReferences)


@dataclass
class Outcome:
    stack: str
    status: str = PENDING
    changes: dict = field(default_factory=dict)
    message: str = ""
    seconds: float = 0.0
    done: int = 0                    # resources finished so far (live progress)
    total: int | None = None         # resources the offline plan records for the stack
    current: str = ""                # the operation in flight, e.g. "create gke-usc1-h200"


def steps_for(names: list[str]) -> list[Step]:
    """Steps for the named stacks of the project. A name that is an apps stack brings in its
    fleet's infra stacks."""
    from ..api.loader import catalog_of, display_path, read_yaml
    pending, seen, out = list(names), set(), []
    while pending:
        name = pending.pop(0)
        if name in seen:
            continue
        seen.add(name)
        path = stack_file(name)
        if not path.exists():
            raise InputError([Problem(display_path(path), "(file)", f"no stack named {name!r}",
                                      f"create the stack file or check the name with `ls {display_path(path.parent)}`")])
        spec = load_stack(path, catalog_of((read_yaml(path).data or {}).get("config")))
        out.append(Step(name, tuple(spec.fleet)))
        pending += [f for f in spec.fleet if f not in seen]
    return sorted(out, key=lambda s: s.stack)


def expected_resources(steps: list[Step]) -> dict[str, int]:
    """Plan every stack offline first: invalid input stops the run before any stack is touched,
    and the number of recorded resources is the progress total."""
    from ..engine import direct

    totals, problems = {}, []
    for s in steps:
        try:
            totals[s.stack] = len(direct.run(s.stack).records)
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)
    return totals


def order(steps: list[Step], operation: str) -> dict[str, set[str]]:
    """stack -> stacks that must succeed first. Destroy reverses the edges (apps before infra)."""
    names = {s.stack for s in steps}
    before = {s.stack: {n for n in s.needs if n in names} for s in steps}
    if operation == "destroy":
        rev = {n: set() for n in names}
        for stack, needs in before.items():
            for n in needs:
                rev[n].add(stack)
        before = rev
    _check_acyclic(before)
    return before


def _check_acyclic(before: dict[str, set[str]]) -> None:
    state: dict[str, int] = {}

    def visit(n, path):
        if state.get(n) == 1:
            raise InputError([Problem(f"stacks/Pulumi.{n}.yaml", "config.modelplane:fleet",
                                      f"stacks reference each other in a cycle: {' -> '.join([*path, n])}",
                                      "an infra stack must not list apps stacks in its fleet")])
        if state.get(n) == 2:
            return
        state[n] = 1
        for m in sorted(before[n]):
            visit(m, [*path, n])
        state[n] = 2

    for n in sorted(before):
        visit(n, [])


def run(steps: list[Step], operation: str, runner, parallel: int = 4, on_change=None,
        totals: dict[str, int] | None = None) -> dict[str, Outcome]:
    """Run `runner(operation, stack, outcome)` per stack in dependency order.

    `runner` returns the change summary, raises StackLocked for a locked stack and any other
    exception for a failure. `on_change(outcomes)` is called whenever a stack's state changes."""
    if operation not in OPERATIONS:
        raise ValueError(f"unknown operation {operation!r}")
    before = order(steps, operation)
    outcomes = {s: Outcome(s, total=(totals or {}).get(s)) for s in sorted(before)}
    lock = threading.Lock()

    def notify():
        if on_change:
            with lock:
                on_change(outcomes)

    def one(stack):
        out = outcomes[stack]
        out.status, start = RUNNING, time.monotonic()
        notify()
        try:
            out.changes = dict(runner(operation, stack, out) or {})
            out.status = OK
        except StackLocked as exc:
            out.status, out.message = LOCKED, str(exc)
        except Exception as exc:   # noqa: BLE001 - any failure of one stack is reported, not raised
            out.status, out.message = FAILED, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        out.seconds, out.current = time.monotonic() - start, ""
        notify()

    running = {}
    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        while True:
            for stack, out in outcomes.items():
                if out.status != PENDING or stack in running:
                    continue
                bad = sorted(n for n in before[stack] if outcomes[n].status in (FAILED, SKIPPED, LOCKED))
                if bad:
                    out.status = SKIPPED
                    out.message = f"not run: {', '.join(bad)} did not succeed"
                    notify()
                elif all(outcomes[n].status == OK for n in before[stack]) and len(running) < max(1, parallel):
                    running[stack] = pool.submit(one, stack)
            if not running:
                if all(o.status != PENDING for o in outcomes.values()):
                    break
                continue   # skips just made; loop again to settle the rest
            done, _ = wait(running.values(), return_when=FIRST_COMPLETED)
            for stack in [s for s, f in running.items() if f in done]:
                running.pop(stack).result()
    return outcomes


def succeeded(outcomes: dict[str, Outcome]) -> bool:
    return all(o.status == OK for o in outcomes.values())

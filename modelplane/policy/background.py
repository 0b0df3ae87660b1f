"""The pack's rules on the machine's second core while the plan's document is built and written.

The gate reads the recorded resources and nothing the document builds, and the document needs
the verdicts only at its end (`policy` is its last key), so `plan` forks after the program: the
child runs the resource policies, then the stack policies one turn at a time, and sends its
verdicts back pickled; the parent builds and writes the rest of the document, then takes the
stack policies' turns the child has not taken. Each policy runs once, in one of the two; the
verdicts are sorted as the analyzer sorts them. Same verdicts, same bytes
(tests/test_gate_background.py); on a large plan about half the time after the program
(docs/performance.md).

Where forking is not sound or not worth it the rules run in-process, as before: not Linux
(macOS's system libraries are not fork-safe), `MODELPLANE_JOBS=1`, one usable core, a plan
under `FORK_FROM` resources (below it the fork costs what it saves), or props holding a NaN or an
infinity (the pack fails on them: that error comes before any output). A child that fails for any
reason (killed, out of memory, a bug in a rule) leaves the parent to run the rules itself, so an
error surfaces as it always did, exit 3; only `--json` has by then written the document's other
keys (cli.py `_pack_failed`).
"""
from __future__ import annotations

import os
import pickle
import signal
import sys

# Recorded resources from which a fork pays on a 2-core machine (docs/performance.md, sixth pass):
# at 1,878 and 4,975 it did (20 x 500: 1.54-1.59 s forked against 1.80-1.89 s, medians of 5 whole
# commands, interleaved); at 849 forked and not were within the noise. An earlier measurement
# (1.63 s forked, 1.56 s not, at 4,975) set 10,000; it did not repeat.
FORK_FROM = 2_000


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _forks(run) -> bool:
    if os.environ.get("MODELPLANE_JOBS", "").strip() == "1" or not sys.platform.startswith("linux"):
        return False
    if not getattr(run, "finite", True):
        return False        # a NaN or an infinity: the pack fails on it, and says so before anything is written
    return len(run.records) >= FORK_FROM and _cores() > 1


class Verdicts:
    """The gate's violations once asked for (`result()`, cached): from the child, with the stack
    policies it left to this process, or from here alone."""

    def __init__(self, run, config: dict, pid: int = 0, read: int = -1, turns: int = -1,
                 done: list[dict] | None = None):
        self._run, self._config, self._pid, self._read, self._turns, self._done = run, config, pid, read, turns, done

    def result(self) -> list[dict]:
        if self._done is None:
            self._done = _collect(self)
        return self._done

    def abandon(self) -> None:
        """The plan stops (an error, Ctrl-C): the child is stopped and reaped, no verdicts made."""
        if self._done is None and self._pid:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.close(self._read)
            os.close(self._turns)
            os.waitpid(self._pid, 0)
            self._done = []


def _part(run, config: dict, per_resource: bool, turns: int) -> list[dict]:
    """This process's share of the verdicts: the stack policies it takes a turn for (one byte off
    the shared pipe each; at its end, none is left), and the resource policies in the child."""
    from . import resources_of
    from .direct import evaluate_part

    def take():
        got = os.read(turns, 1)
        return got[0] if got else None

    return evaluate_part(resources_of(run), config, run.finite, per_resource, take, run.plain)


def evaluate_later(run, config: dict) -> Verdicts:
    """`policy.evaluate(run, config)` begun now, on the other core where that pays. The child
    runs the resource policies, then takes the stack policies' turns one by one; this process,
    once its document is written, takes the turns left (docs/performance.md)."""
    from . import evaluate
    from .registry import POLICIES

    if not _forks(run):
        return Verdicts(run, config, done=evaluate(run, config))
    read, write = os.pipe()
    turns, deal = os.pipe()
    os.write(deal, bytes(range(sum(p.kind == "stack" for p in POLICIES.values()))))
    os.close(deal)          # read to its end, the pipe says no turn is left
    try:
        pid = os.fork()
    except OSError:
        for fd in (read, write, turns):
            os.close(fd)
        return Verdicts(run, config, done=evaluate(run, config))
    if pid == 0:                                    # the child: verdicts out, then gone
        code = 1
        try:
            os.close(read)
            with os.fdopen(write, "wb") as out:
                pickle.dump(_part(run, config, True, turns), out, protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        finally:
            os._exit(code)      # no atexit, no flushing the parent's buffered output twice
    os.close(write)
    return Verdicts(run, config, pid, read, turns)


def _collect(v: Verdicts) -> list[dict]:
    from . import evaluate
    from .direct import in_order

    try:
        mine = _part(v._run, v._config, False, v._turns)
    except BaseException:           # a rule broke here: the child goes too, the error on
        v.abandon()
        raise
    os.close(v._turns)
    with os.fdopen(v._read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(v._pid, 0)
    if os.waitstatus_to_exitcode(status) == 0 and data:
        return in_order(pickle.loads(data) + mine)
    return evaluate(v._run, v._config)     # the child failed: every rule here, their error as ever

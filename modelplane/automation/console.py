"""`modelplane preview|up|refresh|destroy`: live progress per stack and the final summary."""
from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table

from ..console import EXIT_FAILED, EXIT_INPUT
from ..errors import InputError
from . import environment
from .driver import DriverError, MissingCli, preflight, stack_runner

STYLE = {"ok": "green", "failed": "red", "locked": "yellow", "skipped": "yellow", "running": "cyan", "pending": "dim"}


def _changes(changes: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(changes.items()) if k != "same" and v) or "no changes"


def progress_table(operation: str, outcomes: dict) -> Table:
    table = Table(title=f"{operation}", title_justify="left")
    for col in ("stack", "status", "resources done", "current"):
        table.add_column(col)
    for name, o in outcomes.items():
        done = f"{o.done}/{o.total}" if o.total is not None else str(o.done)
        table.add_row(name, f"[{STYLE[o.status]}]{o.status}[/]", done, o.current or o.message)
    return table


def summary_table(operation: str, outcomes: dict) -> Table:
    table = Table(title=f"{operation} summary", title_justify="left")
    for col in ("stack", "result", "changes", "time", "detail"):
        table.add_column(col)
    for name, o in outcomes.items():
        applied = _changes(o.changes) if o.status == "ok" else "nothing applied" if o.status in ("skipped", "locked") \
            else "partial: see `pulumi stack history`" if operation in ("up", "destroy") else "-"
        table.add_row(name, f"[{STYLE[o.status]}]{o.status}[/]", applied, f"{o.seconds:.0f}s", o.message)
    return table


def run_command(operation: str, names: list[str], backend: str | None = None, parallel: int = 4,
                policy_config: Path | None = None, command=None, console: Console | None = None,
                errors: Console | None = None) -> int:
    """Plan the order, run it, print progress and the summary; return the exit status (console.py:
    0 every stack succeeded, 1 one failed or the policy pack refused it, 2 invalid input or usage,
    3 no working pulumi CLI)."""
    console = console or Console()
    errors = errors or console
    try:
        steps = environment.steps_for(names)
        environment.order(steps, operation)
        preflight(command)
        totals = environment.expected_resources(steps) if operation != "destroy" else None
    except InputError as exc:
        errors.print(exc.render(), markup=False)
        return EXIT_INPUT
    except MissingCli as exc:       # no (working) pulumi binary: modelplane cannot run it
        errors.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_FAILED
    except DriverError as exc:      # a setting the run needs (the passphrase): usage
        errors.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_INPUT
    runner = stack_runner(backend, command, policy_config=policy_config)
    with Live(console=console, auto_refresh=console.is_terminal, transient=True) as live:
        outcomes = environment.run(steps, operation, runner, parallel,
                                   on_change=lambda o: live.update(progress_table(operation, o)), totals=totals)
    console.print(summary_table(operation, outcomes))
    return 0 if environment.succeeded(outcomes) else 1

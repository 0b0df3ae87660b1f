"""What every `modelplane` command shares: its two consoles, its exit statuses, how it refuses
input, and the --project / --catalog options. The command modules (cli.py, prices/command.py,
sizing/command.py) import it; none of them imports another."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from .errors import InputError


class _Console:
    """A rich Console made on first use: `plan --json` prints nothing through one, and importing
    rich's console is a tenth of the command's imports."""

    def __init__(self, stderr: bool):
        self._stderr, self._made = stderr, None

    def rich(self):
        """The Console itself, for what rich takes as one (Live, Progress: `with console:`)."""
        made = self._made
        if made is None:
            from rich.console import Console

            made = self._made = Console(stderr=True, highlight=False, soft_wrap=True) if self._stderr else \
                Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
        return made

    def __getattr__(self, name):
        if name.startswith("_"):    # its own fields, and what copy/pickle probe on a bare instance
            raise AttributeError(name)
        return getattr(self.rich(), name)

    def __enter__(self):        # special methods are looked up on the type, never through __getattr__
        return self.rich().__enter__()

    def __exit__(self, *exc):
        return self.rich().__exit__(*exc)


out = _Console(stderr=False)
err = _Console(stderr=True)

# Exit status of every command (README "Exit status"): 0 clean; 1 a mandatory policy violation (or
# a --trace share that breaks); 2 invalid input or usage, nothing planned or written; 3 modelplane
# itself could not finish (the policy pack did not start).
EXIT_VIOLATION, EXIT_INPUT, EXIT_FAILED = 1, 2, 3
FORMATS = ("text", "json", "markdown", "sarif")


def fail(message: str, code: int = 2) -> None:
    """Print the error and exit (2: invalid input or usage, unless `code` says otherwise)."""
    err.print(f"[red]error:[/red] {message}", markup=True)
    sys.exit(code)


def refuse(exc: InputError) -> None:
    err.print(exc.render(), markup=False)
    sys.exit(EXIT_INPUT)


def project_options(fn):
    """--project DIR and --catalog DIR: the project a command reads (default: the one holding the
    current folder) and more class folders; the choice holds for that command only."""
    import functools
    from contextlib import ExitStack

    @click.option("--catalog", "catalogs", multiple=True, type=click.Path(path_type=Path, exists=True),
                  help="More InferenceClasses, models and prices (a folder of YAML files or one file); they join "
                       "the package's and the project's catalog/, and replace a built-in class of the same name.")
    @click.option("--project", "project_dir", type=click.Path(path_type=Path, file_okay=False, exists=True),
                  help="The project folder (holding Pulumi.yaml). Default: found from the current folder upward.")
    @functools.wraps(fn)
    def wrapper(*args, project_dir=None, catalogs=(), **kwargs):
        from .api.project import chosen

        with ExitStack() as scope:
            try:
                scope.enter_context(chosen(project_dir, catalogs))
            except InputError as exc:
                refuse(exc)
            return fn(*args, **kwargs)
    return wrapper

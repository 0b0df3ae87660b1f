"""Input problems that name the file, the YAML path, what is wrong and how to fix it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    file: str
    path: str
    message: str
    fix: str
    line: int | None = None
    rule: str | None = None     # the policy this input breaks, when a named rule found it

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        rule = f" [{self.rule}]" if self.rule else ""
        return f"{where}: {self.path}: {self.message}{rule}\n    fix: {self.fix}"


class InputError(Exception):
    """One or more problems in the user's input; nothing is planned while any remain."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems), key=lambda p: (p.file, p.line or 0, p.path, p.message))
        super().__init__(self.render())

    def render(self) -> str:
        n = len(self.problems)
        head = f"invalid input ({n} problem{'s' if n != 1 else ''}):"
        return "\n".join([head, *(f"  {p}" for p in self.problems)])


def did_you_mean(word: str, choices) -> str | None:
    """The closest choice to a misspelled word, if any is close enough."""
    import difflib

    found = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    if not found:
        lowered = {c.lower(): c for c in choices}
        return lowered.get(word.lower())
    return found[0]

"""Where a plan's inputs come from: the user's project, and the data the package carries.

The project is the folder holding `Pulumi.yaml`, found from the current directory upward as the
Pulumi CLI finds it (or named with `--project DIR`); its stack files live in its `stackConfigDir`.
The package's catalog, policy configs and schemas are the repository's top-level folders; an
installed package carries them under modelplane/_data/ (setup.py copies them into the wheel).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, Problem

PACKAGE = Path(__file__).resolve().parents[1]
PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml")     # the names the Pulumi CLI looks for


def data_dir(name: str) -> Path:
    """A folder of the package's data (catalog, policies, schemas): inside the installed package,
    else the repository's own top-level folder (a checkout or an editable install)."""
    inside = PACKAGE / "_data" / name
    return inside if inside.is_dir() else PACKAGE.parent / name


@dataclass(frozen=True)
class Project:
    root: Path                      # the folder holding Pulumi.yaml (the current folder when none was found)
    stacks: Path                    # where its Pulumi.<stack>.yaml files are (stackConfigDir)
    name: str | None = None         # Pulumi.yaml's `name`; None: no Pulumi.yaml was found
    catalogs: tuple[Path, ...] = ()     # --catalog DIR: more classes, models and prices

    def stack_file(self, stack: str) -> Path:
        return self.stacks / f"Pulumi.{stack}.yaml"

    def stack_names(self) -> list[str]:
        return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in self.stacks.glob("Pulumi.*.yaml"))

    def user_catalogs(self) -> list[Path]:
        """The project's own catalog/ (unless it is the package's, as in this repository), then
        every --catalog folder: their classes, models and prices join the package's and win."""
        own = self.root / "catalog"
        mine = [own] if own.is_dir() and own.resolve() != data_dir("catalog").resolve() else []
        return mine + list(self.catalogs)

    @property
    def prices_file(self) -> Path:
        """Where `prices refresh` writes: the project's catalog/prices.yaml (read before the package's)."""
        return self.root / "catalog" / "prices.yaml"

    def policy_config(self, production: bool) -> Path:
        """The policy config a stack gets by default: the project's policies/config/ file, else the package's."""
        name = "production.json" if production else "dev.json"
        own = self.root / "policies" / "config" / name
        return own if own.is_file() else data_dir("policies") / "config" / name

    def display(self, path: Path) -> str:
        """A path as problems show it: relative to the project when inside it."""
        try:
            return str(Path(path).resolve().relative_to(self.root.resolve()))
        except ValueError:
            return str(path)


def _read(file: Path, catalogs) -> Project:
    from .yamlread import read

    shown = str(file)
    _, doc = read(file, shown)
    if not isinstance(doc, dict) or not isinstance(doc.get("name"), str) or not doc["name"].strip():
        raise InputError([Problem(shown, "name", "a Pulumi project file needs a 'name:' (text)",
                                  "start Pulumi.yaml with name: <project>", 1)])
    stacks = doc.get("stackConfigDir", ".")
    if not isinstance(stacks, str) or not stacks.strip():
        raise InputError([Problem(shown, "stackConfigDir", "stackConfigDir is the folder of the stack files, as "
                                  "text", "write e.g. stackConfigDir: stacks (relative to Pulumi.yaml)", None)])
    # Pulumi reads stackConfigDir relative to the folder of Pulumi.yaml.
    return Project(file.parent, file.parent / stacks, doc["name"], tuple(catalogs))


def find(start: Path | None = None, catalogs=()) -> Project:
    """The project holding `start` (default: the current folder) or one of its parents."""
    start = Path(start or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        for name in PROJECT_FILES:
            if (folder / name).is_file():
                return _read(folder / name, catalogs)
    # No Pulumi.yaml: stack files in ./stacks or here; `plan` says how to start a project.
    return Project(start, start / "stacks" if (start / "stacks").is_dir() else start, None, tuple(catalogs))


def at(root: Path, catalogs=()) -> Project:
    """The project of `--project DIR`: DIR holds its Pulumi.yaml."""
    root = Path(root)
    for name in PROJECT_FILES:
        if (root / name).is_file():
            return _read(root / name, catalogs)
    raise InputError([Problem(str(root), "--project", "no Pulumi.yaml in this folder",
                              "point --project at the folder holding your Pulumi.yaml, or run `modelplane init` "
                              "there")])


_chosen: list[Project] = []      # set by the CLI's --project / --catalog for the command's run


def current() -> Project:
    """The project this run plans: the CLI's choice, else the one holding the current folder."""
    return _chosen[-1] if _chosen else find()


@contextmanager
def chosen(root: Path | None = None, catalogs=()):
    """Plan against this project (--project DIR, else the current folder's) with these --catalog folders."""
    catalogs = tuple(Path(c) for c in catalogs)
    for c in catalogs:
        if not c.exists():
            raise InputError([Problem(str(c), "--catalog", f"no such file or directory: {c}",
                                      "point --catalog at a folder of class YAML files or at one file")])
    _chosen.append(at(root, catalogs) if root is not None else find(catalogs=catalogs))
    try:
        yield _chosen[-1]
    finally:
        _chosen.pop()

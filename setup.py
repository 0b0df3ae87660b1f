"""The build step pyproject.toml cannot declare: the wheel carries the repository's top-level data
folders (catalog/, policies/, schemas/) inside the package as modelplane/_data/<folder>, so an
installed modelplane has its classes, policy configs and schemas (modelplane/api/project.py)."""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA = ("catalog", "policies", "schemas")


class BuildWithData(build_py):
    def run(self):
        super().run()
        if self.editable_mode:      # an editable install reads the folders where they are
            return
        for name in DATA:
            shutil.copytree(Path(__file__).parent / name, Path(self.build_lib, "modelplane", "_data", name),
                            dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildWithData})

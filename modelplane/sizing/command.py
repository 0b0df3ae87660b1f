"""`modelplane size MODEL`: run the estimator for a model on the catalog's GPU systems and write
its profile under the catalog (docs/sizing.md)."""
from __future__ import annotations

import sys
import time
from datetime import date
from pathlib import Path

import click

from ..console import err, out, project_options
from ..console import fail as _fail   # exit 2: invalid input; 3: the API or estimator gave nothing
from ..errors import InputError


def model_uri(model: str) -> str:
    """A model as the stack names it: hf://org/name (an org/name alone is taken as Hugging Face's)."""
    return model if "://" in model else f"hf://{model}"


def systems_of(catalog, classes: list[str] | None) -> dict[str, list[str]]:
    """Estimator system -> the classes it stands for (the named classes, or every class with one)."""
    from ..errors import did_you_mean

    names = classes or sorted(n for n, c in catalog.classes.items() if c.sizing)
    out: dict[str, list[str]] = {}
    for name in names:
        cls = catalog.classes.get(name)
        if cls is None:
            guess = did_you_mean(name, catalog.classes)
            _fail(f"--classes: no class {name!r} in the catalog" + (f"; did you mean {guess!r}?" if guess else ""))
        if cls.sizing is None:
            _fail(f"--classes: class {name!r} names no estimator system (its `sizing.system` in the catalog); "
                  "the estimator has no data for it")
        out.setdefault(cls.sizing.system, []).append(name)
    return dict(sorted(out.items()))


def write_profile(uri: str, estimates: list[dict], folder: Path, today: date) -> Path:
    from .profiles import dump, file_name, merge, read

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(uri)
    doc = read(path) if path.is_file() else None
    for est in estimates:
        doc = merge(doc, est, uri, today)
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(dump(doc))
    tmp.replace(path)
    return path


@click.command()
@project_options
@click.argument("model")
@click.option("--classes", help="Comma-separated InferenceClasses to profile (default: every class with an "
              "estimator system); classes of one system are profiled once.")
@click.option("--isl", type=click.IntRange(1, 1_000_000), required=True, help="Input tokens per request (the traffic's inputTokens).")
@click.option("--osl", type=click.IntRange(1, 1_000_000), required=True, help="Output tokens per request (the traffic's outputTokens).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False),
              show_default="your project's catalog/profiles/",
              help="Write the profile into this folder instead (plan reads the profiles/ folder of each catalog).")
@click.option("--estimator-model", help="The model's name for the estimator when it differs from the URI's "
              "Hugging Face id (e.g. an architecture-identical model it ships a config for).")
def size(model, classes, isl, osl, out_dir, estimator_model):
    """Estimate MODEL (hf://org/name) with NVIDIA AIConfigurator on the catalog's GPU systems and write
    its sizing profile, which `plan` reads for deployments that give an `slo` and `traffic`."""
    from ..api.loader import catalog_of
    from ..api.project import current
    from .estimator import EstimatorError, estimate, estimator_model as default_name, missing

    try:
        catalog = catalog_of({})
    except InputError as exc:
        err.print(exc.render(), markup=False)
        sys.exit(2)
    uri = model_uri(model)
    wanted = systems_of(catalog, [c.strip() for c in classes.split(",") if c.strip()] if classes else None)
    reason = missing()
    if reason:
        _fail(reason, 3)
    folder = out_dir or current().root / "catalog" / "profiles"
    name = estimator_model or default_name(uri)
    path = None
    for system, names in wanted.items():
        start = time.monotonic()
        try:
            est = estimate(name, system, isl, osl)
        except EstimatorError as exc:
            err.print(f"skipped {system} ({', '.join(names)}): {exc}", markup=False)
            continue
        path = write_profile(uri, [est], folder, date.today())     # each system as it is done
        err.print(f"{system} ({', '.join(names)}): {len(est['shapes'])} shapes, {est['backend']} "
                  f"{est['databaseVersion']}, {time.monotonic() - start:.0f} s", markup=False)
    if path is None:
        _fail(f"the estimator profiled {uri} on none of {', '.join(wanted)}", 3)
    out.print(f"wrote {path}", markup=False)

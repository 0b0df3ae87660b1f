"""`modelplane prices`: the prices in use with their age, and `prices refresh` from the price APIs."""
from __future__ import annotations

import sys
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import click
import yaml

if TYPE_CHECKING:
    from rich.table import Table

from ..console import err, out, project_options
from ..console import fail as _fail   # exit 2: invalid input; 3: the API or estimator gave nothing
from ..errors import InputError


def price_rows(stack: str | None, today: date, max_age: int) -> list[dict]:
    """The prices a stack's pools use (or, with no stack, every catalog price), with their age."""
    from ..analysis.cost import age, pool_price

    rows = []
    if stack:
        from ..engine import direct

        run = direct.run(stack)
        for cluster, inv in sorted(run.result.inventories.items()):
            for pool in inv.get("pools", []):
                price = pool.get("price")
                rows.append({"where": f"{cluster}/{pool['name']}", "class": pool["class"], "region": inv.get("region"),
                             "capacityType": pool.get("capacityType"), **(price or {}),
                             **(age(price, today, max_age) if price else {})})
        return rows
    from ..api.loader import catalog_of

    catalog = catalog_of({})      # the package's prices, then the project's (which win)
    for (cls, region, ctype), _ in sorted(catalog.prices.items()):
        price = pool_price(catalog.prices, cls, region, ctype)
        rows.append({"where": "-", "class": cls, "region": region, "capacityType": ctype, **price,
                     **age(price, today, max_age)})
    return rows


def price_table(rows: list[dict], title: str, max_age: int) -> Table:
    from rich.table import Table     # here: `plan` registers this command but never draws a table

    from ..analysis.cost import money

    table = Table(title=title, title_justify="left")
    pools = any(r["where"] != "-" for r in rows)
    for col in ("pool",) * pools + ("class", "region", "capacity", "$/node-hour", "basis", "as of", "age", "source"):
        # the source is a URL a reader copies: folded onto more lines, never cut with an ellipsis
        table.add_column(col, justify="right" if col in ("$/node-hour", "age") else "left",
                         overflow="fold" if col == "source" else "ellipsis")
    for r in rows:
        where = (r["where"],) * pools
        if "hourly" not in r:
            table.add_row(*where, r["class"], r["region"] or "-", r["capacityType"] or "-", "[yellow]unpriced[/yellow]",
                          "-", "-", "-", "set capacity.hourly or add a row to catalog/prices.yaml")
            continue
        # an upper bound says so first: the full basis wraps in narrow terminals
        basis = "[yellow]upper bound[/yellow] (on-demand)" if r.get("upperBound") else r["basis"]
        basis += "; unconfirmed" if r.get("unconfirmed") else ""
        days = f"{r['ageDays']} d" if "ageDays" in r else "-"
        if r.get("stale"):
            days = f"[yellow]{days} (> {max_age} d)[/yellow]"
        table.add_row(*where, r["class"], r["region"] or "-", r["capacityType"] or "-", money(r["hourly"]), basis,
                      r.get("asOf", "-"), days, r["source"])
    return table


@click.group(invoke_without_command=True)
@project_options
@click.option("--stack", help="The prices this stack's pools use (default: every row of the catalog's price file).")
@click.option("--max-age", default=None, type=click.IntRange(1, 3650), metavar="DAYS",
              help="Flag prices older than this many days (default: the plan's threshold).")
@click.pass_context
def prices(ctx, stack, max_age):
    """The node prices in use, where they come from and how old they are."""
    if ctx.invoked_subcommand:
        return
    from ..analysis.cost import STALE_DAYS

    max_age = max_age or STALE_DAYS
    try:
        rows = price_rows(stack, date.today(), max_age)
    except InputError as exc:
        err.print(exc.render(), markup=False)
        sys.exit(2)
    out.print(price_table(rows, f"prices ({stack or 'catalog'}, USD per node-hour)", max_age))
    stale = [r for r in rows if r.get("stale")]
    if stale:
        where = sorted({r["region"] for r in stale if r.get("region") and r["region"] != "*"})
        command = "modelplane prices refresh" + (f" --regions {','.join(where)}" if where else "")
        out.print(f"{len(stale)} price(s) older than {max_age} days: run `{command}` (needs cloud credentials)",
                  markup=False)


@prices.command()
@project_options
@click.option("--cloud", "clouds", multiple=True, type=click.Choice(["gcp", "aws"]),
              help="Refresh this cloud's prices (default: both).")
@click.option("--regions", metavar="REGION,...", help="Regions to price (default: the regions the price file has for "
              "each cloud). GCE regions for gcp, EC2 regions for aws.")
@click.option("--out", "out_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              show_default="your project's catalog/prices.yaml",
              help="The price file to merge the refreshed rows into (read before the package's prices).")
def refresh(clouds, regions, out_file):
    """Read node prices from the clouds' own price APIs and write them, with source and date,
    into the price file: Cloud Billing Catalog (Compute Engine SKUs) for gcp; the Price List
    Query API, Spot price history and Capacity Block offerings for aws. Needs the optional
    extra modelplane[prices] and credentials as each SDK finds them."""
    from ..api.loader import catalog_of
    from ..api.project import current
    from . import fetch, pricefile

    clouds = list(clouds) or ["gcp", "aws"]
    out_file = out_file or current().prices_file
    try:
        catalog = catalog_of({})
    except InputError as exc:
        err.print(exc.render(), markup=False)
        sys.exit(2)
    wanted = {}
    for cloud in clouds:
        if regions:
            wanted[cloud] = sorted({r.strip() for r in regions.split(",") if r.strip()})
        else:
            names = fetch.classes_of(catalog, cloud)
            wanted[cloud] = sorted({r for (c, r, _) in catalog.prices if c in names and r != "*"})
    try:
        rows, missing = fetch.refresh(catalog, clouds, wanted, date.today().isoformat())
    except fetch.PriceSourceError as exc:
        _fail(f"{exc}; nothing written", 3)
    for line in missing:
        err.print(f"  not priced: {line}", markup=False)
    if not rows:
        _fail(f"the price APIs returned no rate for any class in {wanted}; nothing written", 3)
    try:
        pricefile.write(out_file, rows)
    except OSError as exc:
        _fail(f"--out {out_file}: {exc.strerror or exc}; nothing written")
    except yaml.YAMLError as exc:
        _fail(f"{out_file}: not a price file ({exc.problem if hasattr(exc, 'problem') else exc}); fix or remove it; "
              "nothing written")
    err.print(f"wrote {len(rows)} price(s) to {out_file}", markup=False)

"""The catalog's price file: merge refreshed rows into it and write it back deterministically."""
from __future__ import annotations

from datetime import date
from pathlib import Path

import yaml

# A new project price file says what it is: modelplane reads it before the package's own prices.
HEADER = ("# Node prices of this project (USD per node-hour), written by `modelplane prices refresh`; they\n"
          "# replace the package's prices of the same class, region and capacity type.")
FIELDS = ("class", "region", "capacityType", "hourly", "source", "asOf", "unconfirmed")


def _key(row: dict) -> tuple[str, str, str]:
    return row["class"], row["region"], row["capacityType"]


def read_rows(path: Path) -> tuple[str, list[dict]]:
    """The file's leading comment block (kept as written: it says where prices come from) and its
    rows with YAML anchors resolved and dates as ISO strings."""
    text = path.read_text()
    header = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    rows = []
    for row in (yaml.safe_load(text) or {}).get("prices") or []:
        rows.append({k: (v.isoformat() if isinstance(v, date) else v) for k, v in row.items() if k in FIELDS})
    return "\n".join(header), rows


def merge(old: list[dict], new: list[dict]) -> list[dict]:
    """Refreshed rows replace the rows of the same class, region and capacity type; every other
    row is kept as it was (its asOf then shows its age)."""
    out = {_key(r): r for r in old}
    out.update({_key(r): r for r in new})
    return [out[k] for k in sorted(out)]


def _scalar(key: str, value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)) or key == "asOf":
        return str(value)
    # a string as YAML writes it inside a flow collection (so a comma or colon gets it quoted)
    return yaml.safe_dump([value], default_flow_style=True, width=1 << 16).strip()[1:-1]


def render(header: str, rows: list[dict]) -> str:
    """One flow mapping per row, sorted, fields in a fixed order: the same rows give the same bytes."""
    lines = [header, "prices:"] if header else ["prices:"]
    for row in sorted(rows, key=_key):
        fields = [f"{k}: {_scalar(k, row[k])}" for k in FIELDS if k in row and row[k] is not False]
        lines.append("  - {" + ", ".join(fields) + "}")
    return "\n".join(lines) + "\n"


def write(path: Path, rows: list[dict]) -> None:
    """Merge `rows` into the file at `path` (created if absent) and write it."""
    header, old = read_rows(path) if path.exists() else (HEADER, [])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(header, merge(old, rows)))

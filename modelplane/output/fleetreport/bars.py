"""Capacity bars as inline SVG: one bar per pool, one segment per deployment.

Emitted by hand rather than through a plotting library: a bar is a handful of <rect>s, and
hand-written SVG keeps the page self-contained, small and byte-identical for the same plan.
Every segment carries data-* attributes (cluster, pool, deployment, kind, nodes) so tests read
the picture the way a person reads it.
"""
from __future__ import annotations

from hashlib import sha256

from markupsafe import Markup, escape

# Distinct on white and for the common colour-vision deficiencies (Okabe-Ito, then Tol's muted).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#332288", "#117733",
           "#882255", "#44AA99", "#999933", "#AA4499")
IDLE, FREE = "#6b6b6b", "#e6e6e6"
WIDTH, HEIGHT = 360, 18


# Clusters in the traffic bars: dark earth tones, none of them grey, so a cluster reads neither
# as a deployment (the bright palette above) nor as idle nodes or free space.
CLUSTER_PALETTE = ("#8c510a", "#7f3b08", "#5a3d2b", "#01665e", "#2d004b", "#b2182b", "#4d9221", "#6b4f1d")


def colours(names, palette=PALETTE) -> dict[str, str]:
    """Name -> colour, by name order, so the same fleet is drawn the same way."""
    return {d: palette[i % len(palette)] for i, d in enumerate(sorted(set(names)))}


def stable_colours(names, palette=CLUSTER_PALETTE) -> dict[str, str]:
    """Name -> colour from a hash of the name, so a cluster keeps its colour in every report
    whichever other clusters it shows (a what-if without one cluster too). Two names on one
    colour: the later in name order takes the next free colour (all are taken past the
    palette's size, then colours repeat)."""
    out, taken = {}, set()
    for name in sorted(set(names)):
        i = int(sha256(name.encode()).hexdigest(), 16) % len(palette)
        for step in range(len(palette)):
            if palette[(i + step) % len(palette)] not in taken:
                i = (i + step) % len(palette)
                break
        out[name] = palette[i]
        taken.add(palette[i])
        if len(taken) == len(palette):
            taken.clear()
    return out


def _rect(x: float, w: float, fill: str, attrs: dict, title: str, pattern: bool = False) -> str:
    data = " ".join(f'data-{k}="{escape(v)}"' for k, v in attrs.items())
    fill_attr = f'url(#env-{escape(fill[1:])})' if pattern else fill
    return (f'<rect x="{x:.2f}" y="0" width="{w:.2f}" height="{HEIGHT}" fill="{fill_attr}" {data}>'
            f"<title>{escape(title)}</title></rect>")


def pool_bar(cluster: str, pool: dict, segments: list[tuple[str, int, int]], idle: int, palette: dict) -> Markup:
    """`segments`: (deployment, nodes at minimum, nodes reserved up to the autoscaling maximum)."""
    total = max(int(pool["maxNodes"]), 1)
    unit = WIDTH / total
    parts, x = [], 0.0
    patterns = set()
    base = {"cluster": cluster, "pool": pool["name"]}
    for deployment, lo, hi in segments:
        colour = palette[deployment]
        if lo:
            parts.append(_rect(x, lo * unit, colour, {**base, "deployment": deployment, "kind": "used", "nodes": lo},
                               f"{deployment}: {lo} node{'s' if lo != 1 else ''} at minimum"))
            x += lo * unit
        if hi > lo:
            patterns.add(colour)
            parts.append(_rect(x, (hi - lo) * unit, colour, {**base, "deployment": deployment, "kind": "envelope",
                                                            "nodes": hi - lo},
                               f"{deployment}: {hi - lo} more node{'s' if hi - lo != 1 else ''} up to its maximum", True))
            x += (hi - lo) * unit
    if idle:
        parts.append(_rect(x, idle * unit, IDLE, {**base, "kind": "idle", "nodes": idle},
                           f"{idle} idle node{'s' if idle != 1 else ''} kept up by minNodes"))
        x += idle * unit
    free = total - sum(hi for _, _, hi in segments) - idle
    if free > 0:
        parts.append(_rect(x, free * unit, FREE, {**base, "kind": "free", "nodes": free},
                           f"{free} free node{'s' if free != 1 else ''}"))
    defs = "".join(
        f'<pattern id="env-{c[1:]}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        f'<rect width="6" height="6" fill="{c}" fill-opacity="0.25"/><rect width="2" height="6" fill="{c}"/></pattern>'
        for c in sorted(patterns))
    ticks = "".join(f'<line x1="{i * unit:.2f}" y1="0" x2="{i * unit:.2f}" y2="{HEIGHT}" stroke="#fff" stroke-width="1"/>'
                    for i in range(1, total) if total <= 64)
    label = f"{cluster}/{pool['name']}: {sum(hi for _, _, hi in segments)} of {total} nodes placed"
    return Markup(f'<svg class="bar" role="img" aria-label="{escape(label)}" width="{WIDTH}" height="{HEIGHT}" '
                  f'viewBox="0 0 {WIDTH} {HEIGHT}" xmlns="http://www.w3.org/2000/svg">'
                  f'{"<defs>" + defs + "</defs>" if defs else ""}{"".join(parts)}{ticks}</svg>')


def share_bar(service: str, clusters: dict[str, int], palette: dict) -> Markup:
    """A service's request share per cluster (per mille) as one stacked bar."""
    parts, x = [], 0.0
    for cluster, units in sorted(clusters.items()):
        w = WIDTH * units / 1000
        parts.append(_rect(x, w, palette[cluster], {"service": service, "cluster": cluster, "share": units},
                           f"{cluster}: {units / 10:.1f}% of requests"))
        x += w
    if x < WIDTH - 0.01:
        parts.append(_rect(x, WIDTH - x, FREE, {"service": service, "cluster": "-", "share": round(1000 - x / WIDTH * 1000)},
                           "not served by a cluster of this plan"))
    return Markup(f'<svg class="bar" role="img" aria-label="{escape(service)} traffic by cluster" width="{WIDTH}" '
                  f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" xmlns="http://www.w3.org/2000/svg">'
                  f'{"".join(parts)}</svg>')


def progress_bar(deployment: str, placed: int, target: int, colour: str) -> Markup:
    """A rollout: GPU workers placed out of the target, in the deployment's colour, the rest free."""
    w = WIDTH * placed / target if target else WIDTH
    parts = [_rect(0, w, colour, {"deployment": deployment, "kind": "placed", "workers": placed},
                   f"{placed} of {target} GPU workers placed")]
    if target > placed:
        parts.append(_rect(w, WIDTH - w, FREE, {"deployment": deployment, "kind": "missing", "workers": target - placed},
                           f"{target - placed} GPU workers not placed"))
    return Markup(f'<svg class="bar" role="img" aria-label="{escape(deployment)} rollout" width="{WIDTH}" '
                  f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" xmlns="http://www.w3.org/2000/svg">'
                  f'{"".join(parts)}</svg>')


FRONT_W, FRONT_H, PAD = 360, 200, 34


def frontier_chart(row: dict) -> Markup:
    """A sized deployment's frontier: tokens/s per user (x) against tokens/s per GPU (y) of the
    chosen class, each point a configuration the estimator computed; the chosen point is ringed."""
    points = row["frontier"]
    if not points:
        return Markup("")
    xs = [p["tokensPerSecondPerUser"] for p in points]
    ys = [p["tokensPerSecondPerGpu"] for p in points]
    x_max, y_max = max(xs) * 1.05 or 1.0, max(ys) * 1.1 or 1.0

    def at(p):
        return (PAD + (FRONT_W - PAD - 8) * p["tokensPerSecondPerUser"] / x_max,
                FRONT_H - PAD + 8 - (FRONT_H - PAD) * p["tokensPerSecondPerGpu"] / y_max)

    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in (at(p) for p in points if not p["chosen"]))
    parts = [f'<svg class="frontier" width="{FRONT_W}" height="{FRONT_H}" viewBox="0 0 {FRONT_W} {FRONT_H}" '
             f'role="img" data-deployment="{escape(row["deployment"])}">',
             f'<line x1="{PAD}" y1="{FRONT_H - PAD + 8}" x2="{FRONT_W - 8}" y2="{FRONT_H - PAD + 8}" stroke="#999"/>',
             f'<line x1="{PAD}" y1="8" x2="{PAD}" y2="{FRONT_H - PAD + 8}" stroke="#999"/>',
             f'<text x="{FRONT_W - 8}" y="{FRONT_H - 6}" text-anchor="end" font-size="10">tokens/s per user '
             f'(max {x_max / 1.05:.0f})</text>',
             f'<text x="4" y="12" font-size="10">tokens/s per GPU (max {y_max / 1.1:.0f})</text>',
             f'<polyline points="{line}" fill="none" stroke="#0072B2" stroke-width="1.5"/>']
    for p in points:
        x, y = at(p)
        cost = f", ${p['perMillionTokens']:,.2f}/M tokens" if p["perMillionTokens"] is not None else ""
        title = f"{p['shape']}: {p['tokensPerSecondPerUser']:g} tok/s/user, {p['tokensPerSecondPerGpu']:g} tok/s/GPU{cost}"
        if p["chosen"]:
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="none" stroke="#D55E00" stroke-width="2.5" '
                         f'data-chosen="true"><title>chosen: {escape(title)}</title></circle>')
        else:
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="#0072B2"><title>{escape(title)}</title></circle>')
    parts.append("</svg>")
    return Markup("".join(parts))

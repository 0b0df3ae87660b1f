"""A DNS drain: a resource between a service's DNS record and its routes on a cluster whose delete
waits out the record's TTL, so resolvers stop answering the cluster before its routes go (pure).

Pulumi deletes what a plan no longer declares in reverse dependency order, each round once the
one before it finished (pulumi/pulumi@v3.259.0 pkg/resource/deploy/step_generator.go L2721-2794
`ScheduleDeletes`; deployment_executor.go L486-557). With record -> drain -> routes, a cluster
leaving a service loses its record, then the drain's delete sleeps TTL + MARGIN_S, then its
routes and replicas go. Its create returns at once: a first `up` is not slowed.

The drain is a Pulumi Python dynamic resource: a custom resource of package `pulumi-python`
whose `__provider` input is the base64 pickle Pulumi's dynamic provider host loads and calls
(pulumi/pulumi@v3.259.0 sdk/python/lib/pulumi/dynamic/dynamic.py L354-377 sets it and the type
token; dynamic/__main__.py L45-79 get_provider: `dill.loads` of its base64; L142-147 Delete
calls `delete(id, props)` with the state's properties). The pickle here names the provider class by reference (no code is
pickled), so both plan engines record the same text and the host imports the class that is
installed when the delete runs (modelplane.components.drain).
"""
from __future__ import annotations

import base64

DRAIN_TYPE = "pulumi-python:dynamic/modelplane:DnsDrain"
PROVIDER_KEY = "__provider"
PROVIDER_CLASS = ("modelplane.components.drain", "DnsDrainProvider")
# Beyond the TTL: the clocks of resolvers that cached the answer just before the delete returned.
MARGIN_S = 5


def provider_text() -> str:
    """`__provider`: a pickle (protocol 0 opcodes, which any protocol loads) that calls the provider
    class with no arguments: GLOBAL module/name, an empty tuple, REDUCE, STOP."""
    module, name = PROVIDER_CLASS
    return base64.b64encode(f"c{module}\n{name}\n)R.".encode()).decode()


def drain_name(record_name: str, cluster: str | None = None) -> str:
    """A record's drain (Route 53: one record per cluster); a Cloud DNS record set over clusters
    gets one per cluster."""
    return f"{record_name}-{cluster}-drain" if cluster else f"{record_name}-drain"


def drain_inputs(hostname: str, cluster: str, ttl: int) -> dict:
    """What the drain records: the name and cluster it drains, the TTL the record was served
    with, and the seconds its delete waits."""
    return {"hostname": hostname, "cluster": cluster, "ttl": ttl, "seconds": ttl + MARGIN_S,
            PROVIDER_KEY: provider_text()}

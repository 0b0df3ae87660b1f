"""The public Pulumi face: the `Fleet` component (`from modelplane.sdk import Fleet, FleetArgs`,
hosted for every language by provider/), the typed entries it takes (fleet_types, written by
typegen), the stack file's JSON Schema (schema) and kubeconfigs of the clusters it builds.

Names of the component load on first use, so `modelplane.sdk.schema` imports without Pulumi.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # what type checkers see; at run time `__getattr__` loads them on first use
    from . import fleet_types, kubeconfigs, schema, typegen
    from .component import (Fleet, FleetArgs, Placement, RolePlacement, Rejection, ServiceEndpoint,
                            UnplacedReplica, _plain)

_SUBMODULES = {"component", "fleet_types", "kubeconfigs", "schema", "typegen"}


def __getattr__(name: str):
    from importlib import import_module

    if name in _SUBMODULES:
        return import_module(f"{__name__}.{name}")
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(import_module(f"{__name__}.component"), name)

"""modelplane: LLM inference on GPU fleets across clouds and regions, as a Pulumi program and as
components for your own program:

    from modelplane import Fleet, FleetArgs, ModelDeployment

Names load on first use, so the pure core (api, scheduler, render) imports without Pulumi.
"""

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:   # what type checkers see; at run time the names load lazily (below)
    from .api import InferenceCluster, ModelDeployment, load_catalog
    from .api.service import ModelService, Provider
    from .sdk import fleet_types
    from .sdk.kubeconfigs import kubeconfig_of
    from .sdk import Fleet, FleetArgs

_PUBLIC = {
    "Fleet": ("sdk", "Fleet"), "FleetArgs": ("sdk", "FleetArgs"),
    "InferenceCluster": ("api", "InferenceCluster"), "ModelDeployment": ("api", "ModelDeployment"),
    "ModelService": ("api.service", "ModelService"), "Provider": ("api.service", "Provider"),
    "load_catalog": ("api", "load_catalog"), "kubeconfig_of": ("sdk.kubeconfigs", "kubeconfig_of"),
    "fleet_types": ("sdk.fleet_types", None),
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'modelplane' has no attribute {name!r}")
    from importlib import import_module

    module, attr = _PUBLIC[name]
    loaded = import_module(f"{__name__}.{module}")
    return loaded if attr is None else getattr(loaded, attr)

"""The API: pydantic models for classes, clusters, deployments and services, and their loaders."""
from .catalog import InferenceClass
from .cluster import GPU_TAINT, POOL_LABEL, InferenceCluster
from .deployment import ModelDeployment, Topology
from .service import ModelService, Provider
from .loader import Catalog, StackSpec, load_catalog, load_stack, parse_stack_config, stack_file

__all__ = ["GPU_TAINT", "POOL_LABEL", "Catalog", "InferenceClass", "InferenceCluster", "ModelDeployment",
           "ModelService", "Provider", "StackSpec", "Topology", "load_catalog", "load_stack", "parse_stack_config", "stack_file"]

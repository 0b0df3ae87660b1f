"""Pulumi components: thin wiring of rendered dicts to resources (parent, provider, dependencies)."""
from .cluster import InferenceCluster
from .deployment import ModelDeployment, ModelNamespace, Target
from .routing import ModelService, ServiceDns

__all__ = ["InferenceCluster", "ModelDeployment", "ModelNamespace", "ModelService", "ServiceDns", "Target"]

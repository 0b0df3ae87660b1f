"""Pulumi components: thin wiring of rendered dicts to resources (parent, provider, dependencies)."""
from .cluster import InferenceCluster
from .deployment import ModelDeployment, ModelNamespace, Target

__all__ = ["InferenceCluster", "ModelDeployment", "ModelNamespace", "Target"]

"""Pure renderers: plain dicts in, plain Kubernetes objects out (no Pulumi)."""
from .replica import RenderError, render_replica
from .substrate import model_identity, namespace, priority_classes, queues

__all__ = ["RenderError", "model_identity", "namespace", "priority_classes", "queues", "render_replica"]

"""Pure renderers: plain dicts in, plain Kubernetes objects out (no Pulumi)."""
from .replica import RenderError, render_replica
from .substrate import namespace, priority_class, queues

__all__ = ["RenderError", "namespace", "priority_class", "queues", "render_replica"]

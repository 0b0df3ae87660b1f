"""The Pulumi side: a resource graph (render/graph.py) turned into resources, nothing more."""
from .materialize import Materializer, materialize

__all__ = ["Materializer", "materialize"]

"""The Pulumi side: a resource graph (render/graph.py) turned into resources (materialize.py),
and the DNS drain's provider (drain.py), which Pulumi's dynamic provider host imports on its own:
nothing is imported here, so that host loads no typed provider SDK."""

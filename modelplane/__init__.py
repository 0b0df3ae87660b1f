"""modelplane: LLM inference on GPU fleets across clouds and regions, as a Pulumi program."""

__version__ = "0.1.0"

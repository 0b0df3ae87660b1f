"""Automation API driver for users who have the Pulumi CLI."""
from .driver import MissingCli, operate

__all__ = ["MissingCli", "operate"]

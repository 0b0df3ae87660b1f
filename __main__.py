"""Pulumi entry point: all logic lives in modelplane.program."""
import modelplane.program

modelplane.program.main()

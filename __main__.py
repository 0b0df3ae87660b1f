"""Pulumi entry point: all logic lives in modelplane.engine.program."""
import modelplane.engine.program

modelplane.engine.program.main()

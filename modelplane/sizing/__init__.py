"""Sizing from a latency objective: profiles of what NVIDIA AIConfigurator estimates per model and
GPU system (profiles.py), how `modelplane size` runs it (estimator.py, aic.py), and the
candidate configurations a deployment's SLO and traffic allow on each class (candidates.py).
The scheduler chooses among the candidates (scheduler/core.py, counts.py). docs/sizing.md."""

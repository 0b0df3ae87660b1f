"""What a plan means: cost, changes against a previous plan, disruptions, services,
what forces a replace, where a resource comes from, and the gate's outcome.

Imports nothing itself: `import modelplane.analysis.X` loads only X."""

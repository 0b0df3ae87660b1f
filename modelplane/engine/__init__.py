"""The engine: the stack's resource graph (assemble, fleet), recorded without the SDK (direct)
or through it (offline, program, yaml_program), as records (records, references).

Imports nothing itself: `import modelplane.engine.X` loads only X."""

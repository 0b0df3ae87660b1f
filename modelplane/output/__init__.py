"""What a plan prints: tables, the PR comment, SARIF, the JSON document and --out files,
traces and the HTML fleet report.

Imports nothing itself: `import modelplane.output.X` loads only X."""

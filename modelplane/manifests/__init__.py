"""Rendered Kubernetes objects checked against the upstream schemas in `schemas/` (see its
SOURCES.md): structure with jsonschema (CRDs and Kubernetes' own OpenAPI v3), then every CRD's
CEL rules (`x-kubernetes-validations`) with cel-python, as the API server checks a create."""
from .catalog import SCHEMA_DIR, Catalog, manifest_files, read_documents

__all__ = ["SCHEMA_DIR", "Catalog", "manifest_files", "read_documents"]

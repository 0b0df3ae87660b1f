//go:build tools

// Package tools pins KServe's LLMInferenceService controller manager (cmd/llmisvc) for tools/e2e/build.py.
package tools

import (
	_ "github.com/kserve/kserve/cmd/llmisvc"
)

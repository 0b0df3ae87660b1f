//go:build tools

// Package tools pins the Envoy AI Gateway controller (cmd/controller) for tools/e2e/build.py.
package tools

import (
	_ "github.com/envoyproxy/ai-gateway/cmd/controller"
)

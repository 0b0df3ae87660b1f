//go:build tools

// Package tools pins the Envoy Gateway control plane (cmd/envoy-gateway) for tools/e2e/build.py.
package tools

import (
	_ "github.com/envoyproxy/gateway/cmd/envoy-gateway"
)

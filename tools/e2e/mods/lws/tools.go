//go:build tools

// Package tools pins the LeaderWorkerSet controller manager (cmd) for tools/e2e/build.py.
package tools

import (
	_ "sigs.k8s.io/lws/cmd"
)

// The Kubernetes provider plugin, built from the provider module in the Go module cache.
//
// Upstream's own main embeds a schema that `go generate` writes with the release version; the
// module as published carries only schema.json, so tools/e2e/build.py writes the same two embed
// files (version set) into a scratch copy of this folder before building.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var schema []byte

//go:embed terraform-mapping-embed.json
var mapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, schema, mapping)
}

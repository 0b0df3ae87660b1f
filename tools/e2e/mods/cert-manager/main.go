// Command cert-manager-controller runs cert-manager v1.21.1's own control loops for certificates
// signed by a CA issuer, on the loopback control plane.
//
// The proxy serves cert-manager's root module but not its controller binary (a nested module,
// cmd/controller: tools/e2e/operators.md), so this main is ours: it builds the controllers' shared
// context with the root module's public ContextFactory (pkg/controller/context.go) and runs the
// loops that register themselves there (pkg/controller/register.go), as cmd/controller/app does
// (controller.go Run: construct each enabled loop, run it, then start the informer factories).
// Only what a Certificate from a CA issuer needs is linked: no ACME, Vault, Venafi or shims.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cert-manager/cert-manager/pkg/controller"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	namespace := flag.String("cluster-resource-namespace", "cert-manager", "where ClusterIssuers' Secrets live")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		os.Exit(1)
	}
}

func run(root context.Context, kubeconfig, clusterNamespace string) error {
	factory, err := controller.NewContextFactory(root, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   50,
		KubernetesAPIBurst: 100,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: clusterNamespace},
		CertificateOptions: controller.CertificateOptions{
			// cert-manager's defaults (internal/apis/config/controller/v1alpha1/defaults.go)
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return err
	}
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	names := make([]string, 0, len(controller.Known()))
	for name := range controller.Known() {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintln(os.Stderr, "cert-manager-controller: running", names)
	g, ctx := errgroup.WithContext(root)
	for _, name := range names {
		loop, err := controller.Known()[name](factory)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		g.Go(func() error { return loop.Run(2, ctx) })
	}
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	return g.Wait()
}

// Command xds-dump asks Envoy Gateway's xDS server for one proxy's configuration as that proxy
// would (ADS over mutual TLS; the node's cluster is the proxy's --service-cluster, Envoy Gateway
// v1.8.1 internal/infrastructure/common/proxy_args.go L69, and keys the snapshot,
// internal/xds/cache/snapshotcache.go L159-167) and prints the Listeners, RouteConfigurations and
// Clusters it is given as one JSON object. What it prints is what Envoy would run: Envoy Gateway's
// translation after AI Gateway's extension server has modified it.
//
// Types this program does not link are printed with their "@type" only.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	_ "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/priority/previous_priorities/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
)

const (
	listenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	routeType    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	clusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
)

// lenient resolves what this program links and reads anything else as an empty message, so an
// extension's config we do not need never stops the dump.
type lenient struct{}

func (lenient) FindMessageByName(n protoreflect.FullName) (protoreflect.MessageType, error) {
	return protoregistry.GlobalTypes.FindMessageByName(n)
}

func (lenient) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if t, err := protoregistry.GlobalTypes.FindMessageByURL(url); err == nil {
		return t, nil
	}
	return (&emptypb.Empty{}).ProtoReflect().Type(), nil
}

func (lenient) FindExtensionByName(n protoreflect.FullName) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByName(n)
}

func (lenient) FindExtensionByNumber(m protoreflect.FullName, f protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByNumber(m, f)
}

type ads struct {
	stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	node   *corev3.Node
}

// fetch sends one request and ACKs the response of its type (others, pushed meanwhile, are skipped).
func (a *ads) fetch(typeURL string, names []string) ([]*anypb.Any, error) {
	req := &discoveryv3.DiscoveryRequest{Node: a.node, TypeUrl: typeURL, ResourceNames: names}
	if err := a.stream.Send(req); err != nil {
		return nil, err
	}
	for {
		resp, err := a.stream.Recv()
		if err != nil {
			return nil, err
		}
		if resp.TypeUrl != typeURL {
			continue
		}
		ack := &discoveryv3.DiscoveryRequest{Node: a.node, TypeUrl: typeURL, ResourceNames: names,
			VersionInfo: resp.VersionInfo, ResponseNonce: resp.Nonce}
		return resp.Resources, a.stream.Send(ack)
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18000", "Envoy Gateway's xDS server")
	caFile := flag.String("ca", "", "CA that signed the server's certificate")
	certFile := flag.String("cert", "", "client certificate (signed by the CA Envoy Gateway trusts)")
	keyFile := flag.String("key", "", "client key")
	cluster := flag.String("cluster", "", "the proxy's --service-cluster (its infra IR key)")
	node := flag.String("node", "xds-dump", "node id")
	timeout := flag.Duration("timeout", 30*time.Second, "give up after")
	flag.Parse()
	if err := run(*addr, *caFile, *certFile, *keyFile, *cluster, *node, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "xds-dump:", err)
		os.Exit(1)
	}
}

func run(addr, caFile, certFile, keyFile, cluster, node string, timeout time.Duration) error {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("%s: no certificate", caFile)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	creds := credentials.NewTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		return err
	}
	a := &ads{stream: stream, node: &corev3.Node{Id: node, Cluster: cluster}}

	clusters, err := a.fetch(clusterType, nil)
	if err != nil {
		return fmt.Errorf("clusters: %w", err)
	}
	listeners, err := a.fetch(listenerType, nil)
	if err != nil {
		return fmt.Errorf("listeners: %w", err)
	}
	routeNames, err := rdsNames(listeners)
	if err != nil {
		return err
	}
	var routes []*anypb.Any
	if len(routeNames) > 0 {
		if routes, err = a.fetch(routeType, routeNames); err != nil {
			return fmt.Errorf("routes: %w", err)
		}
	}
	out := map[string][]json.RawMessage{}
	for key, items := range map[string][]*anypb.Any{"listeners": listeners, "routes": routes, "clusters": clusters} {
		out[key] = []json.RawMessage{}
		for _, item := range items {
			msg, err := anypb.UnmarshalNew(item, proto.UnmarshalOptions{Resolver: lenient{}})
			if err != nil {
				return err
			}
			text, err := protojson.MarshalOptions{Resolver: lenient{}}.Marshal(msg)
			if err != nil {
				return err
			}
			out[key] = append(out[key], text)
		}
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// rdsNames: the route configurations the listeners' HTTP connection managers load over RDS.
func rdsNames(listeners []*anypb.Any) ([]string, error) {
	seen := map[string]bool{}
	for _, item := range listeners {
		var l listenerv3.Listener
		if err := item.UnmarshalTo(&l); err != nil {
			return nil, err
		}
		for _, chain := range append(l.FilterChains, l.DefaultFilterChain) {
			if chain == nil {
				continue
			}
			for _, f := range chain.Filters {
				var hcm hcmv3.HttpConnectionManager
				if f.GetTypedConfig() == nil || f.GetTypedConfig().UnmarshalTo(&hcm) != nil {
					continue
				}
				if rds := hcm.GetRds(); rds != nil {
					seen[rds.RouteConfigName] = true
				}
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

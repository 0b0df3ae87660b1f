"""A stand-in for the AWS provider plugin (`pulumi-resource-aws`) in the end-to-end tests.

pulumi-aws is not built here (tools/e2e/build.py builds the engine and the Kubernetes provider),
and no AWS account is reached. The gateway scenario's Route 53 records and health checks only
need to be created, updated and deleted in the engine's order, so this plugin accepts every
resource as declared: its inputs are its outputs, a create gets an id, a delete forgets it. Each
call is appended to $MODELPLANE_E2E_AWS_LOG (one JSON line: operation, URN, monotonic time).

It speaks the engine's ResourceProvider gRPC protocol (pulumi/pulumi@v3.259.0
proto/pulumi/provider.proto) as Pulumi's own Python dynamic provider host does (sdk/python/lib/
pulumi/dynamic/__main__.py main: a gRPC server on a free port, the port on stdout). The engine
starts it from $PATH (sdk/go/common/workspace/plugins.go L2192-2252: a plugin on $PATH is used
before the plugin cache).
"""
from __future__ import annotations

import json
import os
import sys
import time
import uuid
from concurrent import futures
from threading import Event, Lock

import grpc
from google.protobuf import empty_pb2, json_format
from pulumi.runtime import proto
from pulumi.runtime.proto import ResourceProviderServicer, provider_pb2_grpc

_LOCK = Lock()


def _log(op: str, urn: str) -> None:
    path = os.environ.get("MODELPLANE_E2E_AWS_LOG")
    if path:
        with _LOCK, open(path, "a") as f:
            f.write(json.dumps({"op": op, "urn": urn, "t": time.monotonic(), "wall": time.time()}) + "\n")


class StandInAws(ResourceProviderServicer):
    def GetPluginInfo(self, request, context):
        return proto.PluginInfo(version="7.0.0")

    def CheckConfig(self, request, context):
        return proto.CheckResponse(inputs=request.news)

    def DiffConfig(self, request, context):
        return proto.DiffResponse(changes=proto.DiffResponse.DIFF_NONE)

    def Configure(self, request, context):
        return proto.ConfigureResponse(acceptSecrets=True, supportsPreview=True, acceptResources=True)

    def Check(self, request, context):
        return proto.CheckResponse(inputs=request.news)

    def Diff(self, request, context):
        olds, news = json_format.MessageToDict(request.olds), json_format.MessageToDict(request.news)
        changed = sorted(k for k in set(olds) | set(news) if olds.get(k) != news.get(k))
        return proto.DiffResponse(changes=proto.DiffResponse.DIFF_SOME if changed else proto.DiffResponse.DIFF_NONE,
                                  diffs=changed)

    def Create(self, request, context):
        if request.preview:
            return proto.CreateResponse(id="", properties=request.properties)
        _log("create", request.urn)
        return proto.CreateResponse(id=f"{request.urn.rsplit('::', 1)[-1]}-{uuid.uuid4().hex[:8]}",
                                    properties=request.properties)

    def Update(self, request, context):
        if not request.preview:
            _log("update", request.urn)
        return proto.UpdateResponse(properties=request.news)

    def Delete(self, request, context):
        _log("delete", request.urn)
        return empty_pb2.Empty()

    def Read(self, request, context):
        return proto.ReadResponse(id=request.id, properties=request.properties, inputs=request.inputs)

    def Cancel(self, request, context):
        return empty_pb2.Empty()


def main() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    provider_pb2_grpc.add_ResourceProviderServicer_to_server(StandInAws(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    sys.stdout.write(f"{port}\n")
    sys.stdout.flush()
    try:
        Event().wait()
    except KeyboardInterrupt:
        server.stop(0)


if __name__ == "__main__":
    main()

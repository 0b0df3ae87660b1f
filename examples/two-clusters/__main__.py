"""Two clusters and two models in one program: the Fleet builds a GKE cluster and an EKS cluster,
then places both deployments in one scheduling run.

    modelplane plan dev --program examples/two-clusters
"""
import pulumi

from modelplane import Fleet, FleetArgs
from modelplane.sdk import fleet_types as mp

gke: mp.InferenceCluster = {
    "name": "gke-usc1", "labels": {"modelplane.ai/cloud": "gcp"},
    "gke": {"project": "my-project", "region": "us-central1"},
    "nodePools": [{"name": "l4", "class_": "gke-l4-1x-g2", "maxNodes": 4, "zones": ["us-central1-a"]}],
    "queues": [{"namespace": "ml"}]}
eks: mp.InferenceCluster = {
    "name": "eks-use1", "labels": {"modelplane.ai/cloud": "aws"},
    "eks": {"region": "us-east-1", "subnetIds": ["subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002"]},
    "nodePools": [{"name": "l40s", "class_": "eks-l40s-4x-g6e", "minNodes": 1, "maxNodes": 2,
                   "capacity": {"type": "spot"}}],
    "queues": [{"namespace": "ml"}]}

small: mp.ModelDeployment = {"name": "qwen3-8b", "namespace": "ml", "replicas": 4, "model": {"uri": "hf://Qwen/Qwen3-8B"},
                             "workers": {"count": 1, "topology": {"tensor": 1}}}
medium: mp.ModelDeployment = {"name": "qwen3-32b", "namespace": "ml", "replicas": 2,
                              "model": {"uri": "hf://Qwen/Qwen3-32B"}, "nodeSelector": {"cel": "gpu.memoryGiB >= 48"},
                              "workers": {"count": 1, "topology": {"tensor": 4}}}

fleet = Fleet("ml", FleetArgs(clusters=[gke, eks], deployments=[small, medium]))
pulumi.export("placements", fleet.placements)
pulumi.export("kubeconfigs", fleet.kubeconfigs)

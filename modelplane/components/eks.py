"""EKS: the cluster and its IAM roles, a system node group, and one managed node group per pool."""
from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from ..api import Catalog, InferenceCluster
from ..api.cluster import GPU_TAINT, POOL_LABEL
from .kubeconfig import TAINT_EFFECT, exec_kubeconfig

_CAPACITY = {"on-demand": "ON_DEMAND", "spot": "SPOT", "capacity-block": "CAPACITY_BLOCK", "reservation": "ON_DEMAND"}


def _assume(service: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}]})


def launch_template_args(c: InferenceCluster, catalog: Catalog, pool, security_groups=()) -> dict | None:
    """EFA interfaces (card 0 EFA with ENA, the others efa-only) and capacity-block market options.

    Interfaces declared in a launch template replace the ones EKS would attach, so they carry the
    cluster security group and the EFA group (EFA traffic must be allowed to and from itself)."""
    eks = catalog.classes[pool.class_].provisioning.eks
    args = {}
    if eks.efa_interfaces:
        args["network_interfaces"] = [
            {"device_index": 0 if i == 0 else 1, "network_card_index": i,
             "interface_type": "efa" if i == 0 else "efa-only", "delete_on_termination": "true",
             "security_groups": list(security_groups)}
            for i in range(eks.efa_interfaces)]
    if pool.capacity.type == "capacity-block":
        args["instance_market_options"] = {"market_type": "capacity-block"}
    if pool.capacity.type in ("capacity-block", "reservation"):
        args["capacity_reservation_specification"] = {
            "capacity_reservation_target": {"capacity_reservation_id": pool.capacity.reservation}}
    if not args:
        return None
    args["block_device_mappings"] = [{"device_name": "/dev/xvda", "ebs": {"volume_size": eks.disk_size_gb,
                                                                          "volume_type": "gp3"}}]
    return args


def node_group_args(c: InferenceCluster, catalog: Catalog, pool, with_template: bool) -> dict:
    eks = catalog.classes[pool.class_].provisioning.eks
    taints = [{"key": GPU_TAINT["key"], "value": GPU_TAINT["value"], "effect": TAINT_EFFECT[GPU_TAINT["effect"]]}]
    taints += [{"key": t.key, "value": t.value, "effect": TAINT_EFFECT[t.effect]} for t in pool.taints]
    args = {
        "node_group_name": pool.name, "instance_types": [eks.instance_type], "ami_type": eks.ami_type,
        "capacity_type": _CAPACITY[pool.capacity.type],
        "scaling_config": {"min_size": pool.min_nodes, "max_size": max(pool.max_nodes, 1),
                           "desired_size": pool.min_nodes},
        "labels": {POOL_LABEL: pool.name, **pool.labels}, "taints": taints,
    }
    if not with_template:
        args["disk_size"] = eks.disk_size_gb
    return args


def efa_security_group(c: InferenceCluster, cluster, opts) -> aws.ec2.SecurityGroup:
    """All traffic to and from itself, as EFA requires, plus egress for everything else."""
    return aws.ec2.SecurityGroup(
        f"{c.name}-efa", vpc_id=cluster.vpc_config.vpc_id, description=f"EFA traffic within {c.name}",
        ingress=[{"protocol": "-1", "from_port": 0, "to_port": 0, "self": True}],
        egress=[{"protocol": "-1", "from_port": 0, "to_port": 0, "self": True},
                {"protocol": "-1", "from_port": 0, "to_port": 0, "cidr_blocks": ["0.0.0.0/0"]}],
        tags={"Name": f"{c.name}-efa"}, opts=opts)


def kubeconfig(name, endpoint, ca, region: str) -> pulumi.Output:
    return pulumi.Output.from_input(name).apply(lambda n: exec_kubeconfig(
        n, endpoint, ca, "aws", ["eks", "get-token", "--cluster-name", n, "--region", region]))


def build(c: InferenceCluster, catalog: Catalog, parent: pulumi.Resource) -> pulumi.Output:
    opts = pulumi.ResourceOptions(parent=parent)
    e = c.eks
    cluster_role = aws.iam.Role(f"{c.name}-cluster", assume_role_policy=_assume("eks.amazonaws.com"), opts=opts)
    attach = aws.iam.RolePolicyAttachment(f"{c.name}-cluster-policy", role=cluster_role.name,
                                          policy_arn="arn:aws:iam::aws:policy/AmazonEKSClusterPolicy", opts=opts)
    cluster = aws.eks.Cluster(c.name, name=c.name, version=e.version, role_arn=cluster_role.arn,
                              vpc_config={"subnet_ids": list(e.subnet_ids)},
                              access_config={"authentication_mode": "API"},
                              opts=pulumi.ResourceOptions(parent=parent, depends_on=[attach]))
    node_role = aws.iam.Role(f"{c.name}-node", assume_role_policy=_assume("ec2.amazonaws.com"), opts=opts)
    attachments = [aws.iam.RolePolicyAttachment(f"{c.name}-node-{short}", role=node_role.name,
                                                policy_arn=f"arn:aws:iam::aws:policy/{policy}", opts=opts)
                   for short, policy in (("worker", "AmazonEKSWorkerNodePolicy"), ("cni", "AmazonEKS_CNI_Policy"),
                                         ("ecr", "AmazonEC2ContainerRegistryReadOnly"))]
    group_opts = pulumi.ResourceOptions(parent=parent, depends_on=[cluster, *attachments])
    aws.eks.NodeGroup(f"{c.name}-system", cluster_name=cluster.name, node_group_name="system",
                      node_role_arn=node_role.arn, subnet_ids=list(e.subnet_ids),
                      instance_types=[e.system_instance_type], ami_type="AL2023_x86_64_STANDARD",
                      scaling_config={"min_size": 1, "max_size": 3, "desired_size": 1}, opts=group_opts)
    groups = []
    if any(catalog.classes[p.class_].provisioning.eks.efa_interfaces for p in c.node_pools):
        groups = [cluster.vpc_config.cluster_security_group_id, efa_security_group(c, cluster, opts).id]
    for pool in sorted(c.node_pools, key=lambda p: p.name):
        lt_args = launch_template_args(c, catalog, pool, groups)
        extra = {}
        if lt_args:
            lt = aws.ec2.LaunchTemplate(f"{c.name}-{pool.name}", **lt_args, opts=opts)
            extra["launch_template"] = {"id": lt.id, "version": lt.latest_version.apply(str)}
        aws.eks.NodeGroup(f"{c.name}-{pool.name}", cluster_name=cluster.name, node_role_arn=node_role.arn,
                          subnet_ids=list(pool.subnet_ids or e.subnet_ids), **node_group_args(c, catalog, pool, bool(lt_args)),
                          **extra, opts=group_opts)
    return kubeconfig(cluster.name, cluster.endpoint, cluster.certificate_authority.data, e.region)

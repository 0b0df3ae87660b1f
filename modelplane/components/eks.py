"""EKS: the cluster and its IAM roles, a system node group, one managed node group per pool, and
the IAM the cluster autoscaler needs (EKS Pod Identity).

Recipes (docs/cloud-recipes.md has the sources): GPU node groups take a launch template that
stripes the instance store into RAID0 for the model download (AL2023 nodeadm), attaches every EFA
interface of EFA classes (in a cluster placement group on on-demand and Spot capacity), targets a
Capacity Block and requires IMDSv2. The cluster autoscaler
owns the node groups' desired size once they exist, so Pulumi ignores changes to it.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from ..api import Catalog, InferenceCluster
from ..api.cluster import GPU_PRESENT_LABEL, GPU_TAINT, POOL_LABEL
from .kubeconfig import TAINT_EFFECT, exec_kubeconfig

_CAPACITY = {"on-demand": "ON_DEMAND", "spot": "SPOT", "capacity-block": "CAPACITY_BLOCK", "reservation": "ON_DEMAND"}
AUTOSCALER_SERVICE_ACCOUNT = "cluster-autoscaler"   # kube-system; the substrate's chart uses this name
MIME_BOUNDARY = "MODELPLANE"

# What the cluster autoscaler calls (kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md);
# eks:DescribeNodegroup gives it the labels and taints of a managed node group at zero nodes.
AUTOSCALER_POLICY = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Resource": "*", "Action": [
        "autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeAutoScalingInstances",
        "autoscaling:DescribeLaunchConfigurations", "autoscaling:DescribeScalingActivities",
        "autoscaling:DescribeTags", "ec2:DescribeImages", "ec2:DescribeInstanceTypes",
        "ec2:DescribeLaunchTemplateVersions", "ec2:GetInstanceTypesFromInstanceRequirements",
        "eks:DescribeNodegroup"]},
    {"Effect": "Allow", "Resource": "*", "Action": [
        "autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"]},
]}


@dataclass
class EksBuild:
    kubeconfig: pulumi.Output
    system: list                                    # what in-cluster installs wait for
    addon_deps: dict = field(default_factory=dict)  # addon name -> resources it waits for


def _assume(service: str, tag_session: bool = False) -> str:
    actions = ["sts:AssumeRole", "sts:TagSession"] if tag_session else "sts:AssumeRole"
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": actions}]})


def node_config_user_data() -> str:
    """AL2023 nodeadm NodeConfig (MIME part merged with the one EKS writes for managed node
    groups): stripe the local NVMe instance store into RAID0 and use it for kubelet and
    containerd, so pods' ephemeral storage (the model download) lands there."""
    doc = (f"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"{MIME_BOUNDARY}\"\n\n"
           f"--{MIME_BOUNDARY}\nContent-Type: application/node.eks.aws\n\n"
           "---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n"
           "  instance:\n    localStorage:\n      strategy: RAID0\n\n"
           f"--{MIME_BOUNDARY}--\n")
    return base64.b64encode(doc.encode()).decode()


def wants_placement_group(pool, eks) -> bool:
    """A cluster placement group for EFA groups on on-demand or Spot capacity, as eksctl (efaEnabled)
    and terraform-aws-eks (EFA support) create; none for a Capacity Block (EC2 places its instances
    close together already) or a capacity reservation (the reservation fixes placement)."""
    return bool(eks.efa_interfaces) and pool.capacity.type in ("on-demand", "spot")


def launch_template_args(c: InferenceCluster, catalog: Catalog, pool, security_groups=(),
                         placement_group_name: str | None = None) -> dict:
    """EFA interfaces (card 0 EFA with ENA, the others efa-only), Capacity Block market options
    with the instance type (the EKS Capacity Block guide puts it in the template), the instance
    store in RAID0, IMDSv2 and the root volume.

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
        args["instance_type"] = eks.instance_type
        args["instance_market_options"] = {"market_type": "capacity-block"}
    if pool.capacity.type in ("capacity-block", "reservation"):
        args["capacity_reservation_specification"] = {
            "capacity_reservation_target": {"capacity_reservation_id": pool.capacity.reservation}}
    if placement_group_name:
        args["placement"] = {"group_name": placement_group_name}
    if eks.instance_store_gb and eks.ami_type.startswith("AL2023"):
        args["user_data"] = node_config_user_data()
    args["metadata_options"] = {"http_endpoint": "enabled", "http_tokens": "required",
                                "http_put_response_hop_limit": 2}
    args["block_device_mappings"] = [{"device_name": "/dev/xvda", "ebs": {"volume_size": eks.disk_size_gb,
                                                                          "volume_type": "gp3"}}]
    args["tag_specifications"] = [{"resource_type": "instance",
                                   "tags": {"modelplane.ai/cluster": c.name, POOL_LABEL: pool.name}}]
    return args


def node_group_args(c: InferenceCluster, catalog: Catalog, pool) -> dict:
    eks = catalog.classes[pool.class_].provisioning.eks
    taints = [{"key": GPU_TAINT["key"], "value": GPU_TAINT["value"], "effect": TAINT_EFFECT[GPU_TAINT["effect"]]}]
    taints += [{"key": t.key, "value": t.value, "effect": TAINT_EFFECT[t.effect]} for t in pool.taints]
    # A Capacity Block group's minimum is 0: EKS scales it to 0 before the block ends, and upgrading
    # it needs the desired size at 0 (EKS capacity-blocks-mng "Considerations"); the nodes the pool
    # keeps are its desired size at creation, which EKS honours once the block is active.
    low = 0 if pool.capacity.type == "capacity-block" else pool.min_nodes
    args = {
        "node_group_name": pool.name, "ami_type": eks.ami_type, "capacity_type": _CAPACITY[pool.capacity.type],
        "scaling_config": {"min_size": low, "max_size": max(pool.max_nodes, 1), "desired_size": pool.min_nodes},
        "labels": {POOL_LABEL: pool.name, GPU_PRESENT_LABEL: "true", **pool.labels}, "taints": taints,
    }
    if pool.capacity.type != "capacity-block":      # a Capacity Block's template names the type
        args["instance_types"] = [eks.instance_type]
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


def _autoscaler_identity(c: InferenceCluster, cluster, opts) -> list:
    """The cluster autoscaler's IAM role, bound to its ServiceAccount through EKS Pod Identity."""
    agent = aws.eks.Addon(f"{c.name}-pod-identity-agent", cluster_name=cluster.name,
                          addon_name="eks-pod-identity-agent", opts=opts)
    role = aws.iam.Role(f"{c.name}-autoscaler", assume_role_policy=_assume("pods.eks.amazonaws.com", True), opts=opts)
    policy = aws.iam.RolePolicy(f"{c.name}-autoscaler", role=role.id, policy=json.dumps(AUTOSCALER_POLICY), opts=opts)
    assoc = aws.eks.PodIdentityAssociation(f"{c.name}-autoscaler", cluster_name=cluster.name,
                                           namespace="kube-system", service_account=AUTOSCALER_SERVICE_ACCOUNT,
                                           role_arn=role.arn,
                                           opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                                               depends_on=[agent, policy])))
    return [assoc]


def build(c: InferenceCluster, catalog: Catalog, parent: pulumi.Resource) -> EksBuild:
    opts = pulumi.ResourceOptions(parent=parent)
    e = c.eks
    cluster_role = aws.iam.Role(f"{c.name}-cluster", assume_role_policy=_assume("eks.amazonaws.com"), opts=opts)
    attach = aws.iam.RolePolicyAttachment(f"{c.name}-cluster-policy", role=cluster_role.name,
                                          policy_arn="arn:aws:iam::aws:policy/AmazonEKSClusterPolicy", opts=opts)
    cluster = aws.eks.Cluster(c.name, name=c.name, version=e.version, role_arn=cluster_role.arn,
                              vpc_config={"subnet_ids": list(e.subnet_ids)},
                              access_config={"authentication_mode": "API",
                                             "bootstrap_cluster_creator_admin_permissions": True},
                              opts=pulumi.ResourceOptions(parent=parent, depends_on=[attach]))
    for i, arn in enumerate(e.admin_role_arns):
        entry = aws.eks.AccessEntry(f"{c.name}-admin-{i}", cluster_name=cluster.name, principal_arn=arn, opts=opts)
        aws.eks.AccessPolicyAssociation(
            f"{c.name}-admin-{i}", cluster_name=cluster.name, principal_arn=arn,
            policy_arn="arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
            access_scope={"type": "cluster"}, opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                depends_on=[entry])))
    node_role = aws.iam.Role(f"{c.name}-node", assume_role_policy=_assume("ec2.amazonaws.com"), opts=opts)
    attachments = [aws.iam.RolePolicyAttachment(f"{c.name}-node-{short}", role=node_role.name,
                                                policy_arn=f"arn:aws:iam::aws:policy/{policy}", opts=opts)
                   for short, policy in (("worker", "AmazonEKSWorkerNodePolicy"), ("cni", "AmazonEKS_CNI_Policy"),
                                         ("ecr", "AmazonEC2ContainerRegistryReadOnly"))]
    group_opts = pulumi.ResourceOptions(parent=parent, depends_on=[cluster, *attachments])
    system = aws.eks.NodeGroup(f"{c.name}-system", cluster_name=cluster.name, node_group_name="system",
                               node_role_arn=node_role.arn, subnet_ids=list(e.subnet_ids),
                               instance_types=[e.system_instance_type], ami_type="AL2023_x86_64_STANDARD",
                               scaling_config={"min_size": 1, "max_size": 3, "desired_size": 1}, opts=group_opts)
    groups = []
    if any(catalog.classes[p.class_].provisioning.eks.efa_interfaces for p in c.node_pools):
        groups = [cluster.vpc_config.cluster_security_group_id, efa_security_group(c, cluster, opts).id]
    # The autoscaler sets desired sizes; an `up` must not reset them to minNodes.
    scaled = pulumi.ResourceOptions.merge(group_opts, pulumi.ResourceOptions(
        ignore_changes=["scalingConfig.desiredSize"]))
    for pool in sorted(c.node_pools, key=lambda p: p.name):
        pg = None
        if wants_placement_group(pool, catalog.classes[pool.class_].provisioning.eks):
            pg = aws.ec2.PlacementGroup(f"{c.name}-{pool.name}", name=f"{c.name}-{pool.name}", strategy="cluster",
                                        opts=opts).name
        lt = aws.ec2.LaunchTemplate(f"{c.name}-{pool.name}", **launch_template_args(c, catalog, pool, groups, pg),
                                    opts=opts)
        aws.eks.NodeGroup(f"{c.name}-{pool.name}", cluster_name=cluster.name, node_role_arn=node_role.arn,
                          subnet_ids=list(pool.subnet_ids or e.subnet_ids), **node_group_args(c, catalog, pool),
                          launch_template={"id": lt.id, "version": lt.latest_version.apply(str)}, opts=scaled)
    deps = {"cluster-autoscaler": _autoscaler_identity(c, cluster, opts)} if c.substrate.autoscaler else {}
    return EksBuild(kubeconfig(cluster.name, cluster.endpoint, cluster.certificate_authority.data, e.region),
                    [system], deps)

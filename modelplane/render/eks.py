"""EKS, as resource nodes (pure): the cluster and its IAM roles, a system node group, one managed node group per pool, and
the IAM the cluster autoscaler needs (EKS Pod Identity).

Recipes (docs/cloud-recipes.md has the sources): GPU node groups take a launch template that
stripes the instance store into RAID0 for the model download (AL2023 nodeadm), attaches every EFA
interface of EFA classes (in a cluster placement group on on-demand and Spot capacity in one subnet), targets a
Capacity Block and requires IMDSv2. The cluster autoscaler
owns the node groups' desired size once they exist, so Pulumi ignores changes to it.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from functools import partial

from ..api import Catalog, InferenceCluster
from ..api.cluster import GPU_PRESENT_LABEL, GPU_TAINT, POOL_LABEL
from .addons import CERT_MANAGER_SERVICE_ACCOUNT
from .graph import Apply, Graph, Node, Ref, Secret
from .kubeconfig import TAINT_EFFECT, eks_kubeconfig

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
    kubeconfig: object                              # a secret expression
    system: list                                    # keys of what in-cluster installs wait for
    addon_deps: dict = field(default_factory=dict)  # addon name -> keys of what it waits for


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


def wants_placement_group(pool, eks, subnets: int) -> bool:
    """A cluster placement group for EFA groups on on-demand or Spot capacity, as eksctl (efaEnabled)
    and terraform-aws-eks (EFA support) create; none for a Capacity Block (EC2 places its instances
    close together already) or a capacity reservation (the reservation fixes placement), and none
    for a group over several subnets: a cluster placement group lives in one Availability Zone
    (EC2 Auto Scaling CreateAutoScalingGroup.PlacementGroup: "You cannot specify multiple
    Availability Zones and a cluster placement group"). Such a group's EFA does not count as a
    multi-node fabric either (api/fabric.py)."""
    return bool(eks.efa_interfaces) and pool.capacity.type in ("on-demand", "spot") and subnets == 1


def efa_layout(eks) -> list[tuple[int, str]]:
    """(device index, interface type) per network card. A card that takes one interface gets it at
    device index 0: EC2 rejects a device index beyond a card's limit (eksctl-io/eksctl#7520), and
    AWS ParallelCluster builds P6e-GB200 so (aws/aws-parallelcluster#6930, queues_stack.py:
    `device_index=0 if network_card.maximum_network_interfaces() == 1 else 1`, `efa` on even cards,
    `efa-only` on odd ones)."""
    if eks.network_cards is None:
        return [(0 if i == 0 else 1, "efa" if i == 0 else "efa-only") for i in range(eks.efa_interfaces)]
    return [(0 if i == 0 or card.max_interfaces == 1 else 1, card.interface_type)
            for i, card in enumerate(eks.network_cards.cards)]


def launch_template_args(c: InferenceCluster, catalog: Catalog, pool, security_groups=(),
                         placement_group_name=None) -> dict:
    """EFA interfaces (card 0 EFA with ENA, the others efa-only), Capacity Block market options
    with the instance type (the EKS Capacity Block guide puts it in the template), the instance
    store in RAID0, IMDSv2 and the root volume.

    Interfaces declared in a launch template replace the ones EKS would attach, so they carry the
    cluster security group and the EFA group (EFA traffic must be allowed to and from itself)."""
    eks = catalog.classes[pool.class_].provisioning.eks
    args = {}
    if eks.efa_interfaces:
        args["networkInterfaces"] = [
            {"deviceIndex": device, "networkCardIndex": i, "interfaceType": kind, "deleteOnTermination": "true",
             "securityGroups": list(security_groups)}
            for i, (device, kind) in enumerate(efa_layout(eks))]
    if pool.capacity.type == "capacity-block":
        args["instanceType"] = eks.instance_type
        args["instanceMarketOptions"] = {"marketType": "capacity-block"}
    if pool.capacity.type in ("capacity-block", "reservation"):
        args["capacityReservationSpecification"] = {
            "capacityReservationTarget": {"capacityReservationId": pool.capacity.reservation}}
    if placement_group_name is not None:
        args["placement"] = {"groupName": placement_group_name}
    if eks.instance_store_gb and eks.ami_type.startswith("AL2023"):
        args["userData"] = node_config_user_data()
    args["metadataOptions"] = {"httpEndpoint": "enabled", "httpTokens": "required",
                               "httpPutResponseHopLimit": 2}
    args["blockDeviceMappings"] = [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": eks.disk_size_gb,
                                                                       "volumeType": "gp3"}}]
    args["tagSpecifications"] = [{"resourceType": "instance",
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
        "nodeGroupName": pool.name, "amiType": eks.ami_type, "capacityType": _CAPACITY[pool.capacity.type],
        "scalingConfig": {"minSize": low, "maxSize": max(pool.max_nodes, 1), "desiredSize": pool.min_nodes},
        "labels": {POOL_LABEL: pool.name, GPU_PRESENT_LABEL: "true", **pool.labels}, "taints": taints,
    }
    if pool.capacity.type != "capacity-block":      # a Capacity Block's template names the type
        args["instanceTypes"] = [eks.instance_type]
    return args


ROLE, ATTACH, POLICY = "aws:iam/role:Role", "aws:iam/rolePolicyAttachment:RolePolicyAttachment", \
    "aws:iam/rolePolicy:RolePolicy"
CLUSTER, NODE_GROUP = "aws:eks/cluster:Cluster", "aws:eks/nodeGroup:NodeGroup"


def efa_security_group(c: InferenceCluster, cluster: str) -> dict:
    """All traffic to and from itself, as EFA requires, plus egress for everything else."""
    return {"vpcId": Ref(cluster, "vpcConfig.vpcId"), "description": f"EFA traffic within {c.name}",
            "ingress": [{"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}],
            "egress": [{"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True},
                       {"protocol": "-1", "fromPort": 0, "toPort": 0, "cidrBlocks": ["0.0.0.0/0"]}],
            "tags": {"Name": f"{c.name}-efa"}}


def cert_manager_dns_policy(zone_id: str) -> dict:
    """What cert-manager's route53 DNS-01 solver calls (cert-manager docs, "Route53": the IAM policy):
    read changes, list the zone's records, find zones by name, and change only the challenge's TXT
    records (it writes `_acme-challenge.<name>` TXT, cert-manager v1.21.1
    pkg/issuer/acme/dns/route53/route53.go L261-300). Route 53's condition keys hold the change to
    those (developer guide, "Using IAM policy conditions for fine-grained access control": names
    lowercase without the trailing dot, types uppercase), so the identity cannot rewrite the
    weighted service records (review N9)."""
    zone = f"arn:aws:route53:::hostedzone/{zone_id}"
    return {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "route53:GetChange", "Resource": "arn:aws:route53:::change/*"},
        {"Effect": "Allow", "Action": "route53:ListResourceRecordSets", "Resource": zone},
        {"Effect": "Allow", "Action": "route53:ChangeResourceRecordSets", "Resource": zone, "Condition": {
            "ForAllValues:StringLike": {"route53:ChangeResourceRecordSetsNormalizedRecordNames": ["_acme-challenge.*"]},
            "ForAllValues:StringEquals": {"route53:ChangeResourceRecordSetsRecordTypes": ["TXT"]}}},
        {"Effect": "Allow", "Action": "route53:ListHostedZonesByName", "Resource": "*"}]}


def _pod_identities(c: InferenceCluster, graph: Graph, cluster: str, parent: str) -> dict[str, list]:
    """IAM roles bound to in-cluster ServiceAccounts through EKS Pod Identity (its agent add-on first):
    the cluster autoscaler's, and cert-manager's when it answers DNS-01 in Route 53. Addon name ->
    the association its release waits for."""
    wanted = []
    if c.substrate.autoscaler:
        wanted.append(("cluster-autoscaler", "autoscaler", "kube-system", AUTOSCALER_SERVICE_ACCOUNT, AUTOSCALER_POLICY))
    dns01 = c.tls.acme.dns01 if c.tls and c.tls.acme else None
    if dns01 and dns01.route53:
        wanted.append(("cert-manager", "cert-manager", *CERT_MANAGER_SERVICE_ACCOUNT,
                       cert_manager_dns_policy(dns01.route53.hosted_zone_id)))
    if not wanted:
        return {}
    name = Ref(cluster, "name")
    agent = graph.add(Node("aws:eks/addon:Addon", f"{c.name}-pod-identity-agent",
                           {"clusterName": name, "addonName": "eks-pod-identity-agent"}, parent))
    out = {}
    for addon, short, namespace, account, document in wanted:
        role = graph.add(Node(ROLE, f"{c.name}-{short}",
                              {"assumeRolePolicy": _assume("pods.eks.amazonaws.com", True)}, parent))
        policy = graph.add(Node(POLICY, f"{c.name}-{short}",
                                {"role": Ref(role, "id"), "policy": json.dumps(document)}, parent))
        out[addon] = [graph.add(Node("aws:eks/podIdentityAssociation:PodIdentityAssociation", f"{c.name}-{short}",
                                     {"clusterName": name, "namespace": namespace, "serviceAccount": account,
                                      "roleArn": Ref(role, "arn")}, parent, depends_on=(agent, policy)))]
    return out


def build(c: InferenceCluster, catalog: Catalog, graph: Graph, parent: str) -> EksBuild:
    e = c.eks
    cluster_role = graph.add(Node(ROLE, f"{c.name}-cluster", {"assumeRolePolicy": _assume("eks.amazonaws.com")},
                                  parent))
    attach = graph.add(Node(ATTACH, f"{c.name}-cluster-policy", {
        "role": Ref(cluster_role, "name"), "policyArn": "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"}, parent))
    cluster = graph.add(Node(CLUSTER, c.name, {
        "name": c.name, "version": e.version, "roleArn": Ref(cluster_role, "arn"),
        "vpcConfig": {"subnetIds": list(e.subnet_ids)},
        "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True}},
        parent, depends_on=(attach,)))
    name = Ref(cluster, "name")
    for i, arn in enumerate(e.admin_role_arns):
        entry = graph.add(Node("aws:eks/accessEntry:AccessEntry", f"{c.name}-admin-{i}",
                               {"clusterName": name, "principalArn": arn}, parent))
        graph.add(Node("aws:eks/accessPolicyAssociation:AccessPolicyAssociation", f"{c.name}-admin-{i}", {
            "clusterName": name, "principalArn": arn,
            "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
            "accessScope": {"type": "cluster"}}, parent, depends_on=(entry,)))
    node_role = graph.add(Node(ROLE, f"{c.name}-node", {"assumeRolePolicy": _assume("ec2.amazonaws.com")}, parent))
    attachments = [graph.add(Node(ATTACH, f"{c.name}-node-{short}", {
        "role": Ref(node_role, "name"), "policyArn": f"arn:aws:iam::aws:policy/{policy}"}, parent))
        for short, policy in (("worker", "AmazonEKSWorkerNodePolicy"), ("cni", "AmazonEKS_CNI_Policy"),
                              ("ecr", "AmazonEC2ContainerRegistryReadOnly"))]
    after = (cluster, *attachments)
    system = graph.add(Node(NODE_GROUP, f"{c.name}-system", {
        "clusterName": name, "nodeGroupName": "system", "nodeRoleArn": Ref(node_role, "arn"),
        "subnetIds": list(e.subnet_ids), "instanceTypes": [e.system_instance_type],
        "amiType": "AL2023_x86_64_STANDARD", "scalingConfig": {"minSize": 1, "maxSize": 3, "desiredSize": 1}},
        parent, depends_on=after))
    groups = []
    if any(catalog.classes[p.class_].provisioning.eks.efa_interfaces for p in c.node_pools):
        efa = graph.add(Node("aws:ec2/securityGroup:SecurityGroup", f"{c.name}-efa", efa_security_group(c, cluster),
                             parent))
        groups = [Ref(cluster, "vpcConfig.clusterSecurityGroupId"), Ref(efa, "id")]
    for pool in sorted(c.node_pools, key=lambda p: p.name):
        pg = None
        subnets = list(pool.subnet_ids or e.subnet_ids)
        if wants_placement_group(pool, catalog.classes[pool.class_].provisioning.eks, len(subnets)):
            pg = Ref(graph.add(Node("aws:ec2/placementGroup:PlacementGroup", f"{c.name}-{pool.name}",
                                    {"name": f"{c.name}-{pool.name}", "strategy": "cluster"}, parent)), "name")
        lt = graph.add(Node("aws:ec2/launchTemplate:LaunchTemplate", f"{c.name}-{pool.name}",
                            launch_template_args(c, catalog, pool, groups, pg), parent))
        # The autoscaler sets desired sizes; an `up` must not reset them to minNodes.
        graph.add(Node(NODE_GROUP, f"{c.name}-{pool.name}", {
            "clusterName": name, "nodeRoleArn": Ref(node_role, "arn"),
            "subnetIds": subnets, **node_group_args(c, catalog, pool),
            "launchTemplate": {"id": Ref(lt, "id"), "version": Apply(str, (Ref(lt, "latestVersion"),))}},
            parent, depends_on=after, ignore_changes=("scalingConfig.desiredSize",)))
    deps = _pod_identities(c, graph, cluster, parent)
    kubeconfig = Secret(Apply(partial(eks_kubeconfig, e.region), (
        name, Ref(cluster, "endpoint"), Ref(cluster, "certificateAuthority.data"))))
    return EksBuild(kubeconfig, [system], deps)

"""The kubeconfig of a cluster your own program creates, to hand to a Fleet as an existing cluster.

A Fleet adopts a cluster through `existing: {kubeconfigSecret: KEY}` and the `secrets` argument
(`secrets={KEY: kubeconfig}`), whose values may be Outputs: pass a kubeconfig Output as it is, or
the cluster object through `kubeconfig_of`. The scheduler plans from the entry's settings (pools,
classes, region), never from the cluster object, so the plan is known at preview.
"""
from __future__ import annotations

import pulumi


def kubeconfig_of(cluster: pulumi.Resource) -> pulumi.Output[str]:
    """A secret kubeconfig for a `pulumi_eks.Cluster` (its `kubeconfig_json`), a
    `pulumi_gcp.container.Cluster` (gke-gcloud-auth-plugin) or a `pulumi_aws.eks.Cluster`
    (`aws eks get-token`, region read from its ARN), built as modelplane builds its own."""
    if hasattr(cluster, "kubeconfig_json"):          # pulumi_eks.Cluster
        return pulumi.Output.secret(getattr(cluster, "kubeconfig_json"))
    import pulumi_aws as aws
    import pulumi_gcp as gcp

    from ..render.kubeconfig import eks_kubeconfig, gke_kubeconfig

    if isinstance(cluster, gcp.container.Cluster):
        built = pulumi.Output.all(cluster.name, cluster.endpoint, cluster.master_auth.cluster_ca_certificate).apply(
            lambda v: gke_kubeconfig(*v))
    elif isinstance(cluster, aws.eks.Cluster):
        built = pulumi.Output.all(cluster.name, cluster.arn, cluster.endpoint, cluster.certificate_authority.data).apply(
            lambda v: eks_kubeconfig(v[1].split(":")[3], v[0], v[2], v[3]))
    else:
        raise TypeError(f"kubeconfig_of: {type(cluster).__name__} is not a pulumi_eks, GKE or EKS cluster; "
                        "pass its kubeconfig Output in `secrets` instead")
    return pulumi.Output.secret(built)

"""Kubeconfig text for a cluster reached through an exec credential plugin (pure)."""
from __future__ import annotations

# Taint effects as the GKE and EKS APIs spell them.
TAINT_EFFECT = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}


def exec_kubeconfig(name: str, server: str, ca: str, command: str, args: list[str] | None = None,
                    provide_cluster_info: bool = False) -> str:
    extra = f"      args: [{', '.join(args)}]\n" if args else ""
    info = "      provideClusterInfo: true\n" if provide_cluster_info else ""
    return (f"apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n"
            f"  cluster: {{server: \"{server}\", certificate-authority-data: \"{ca}\"}}\n"
            f"contexts:\n- name: {name}\n  context: {{cluster: {name}, user: {name}}}\n"
            f"current-context: {name}\nusers:\n- name: {name}\n  user:\n    exec:\n"
            f"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: {command}\n{extra}{info}")


def gke_kubeconfig(name: str, endpoint: str, ca: str) -> str:
    return exec_kubeconfig(name, f"https://{endpoint}", ca, "gke-gcloud-auth-plugin", provide_cluster_info=True)


def eks_kubeconfig(region: str, name: str, endpoint: str, ca: str) -> str:
    return exec_kubeconfig(name, endpoint, ca, "aws", ["eks", "get-token", "--cluster-name", name, "--region", region])

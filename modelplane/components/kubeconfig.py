"""Kubeconfig for a cluster reached through an exec credential plugin (secret Output)."""
from __future__ import annotations

import pulumi

# Taint effects as the GKE and EKS APIs spell them.
TAINT_EFFECT = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}


def exec_kubeconfig(name, server, ca, command: str, args: list[str] | None = None,
                    provide_cluster_info: bool = False) -> pulumi.Output:
    def render(a):
        extra = f"      args: [{', '.join(args)}]\n" if args else ""
        info = "      provideClusterInfo: true\n" if provide_cluster_info else ""
        return (f"apiVersion: v1\nkind: Config\nclusters:\n- name: {a[0]}\n"
                f"  cluster: {{server: \"{a[1]}\", certificate-authority-data: \"{a[2]}\"}}\n"
                f"contexts:\n- name: {a[0]}\n  context: {{cluster: {a[0]}, user: {a[0]}}}\n"
                f"current-context: {a[0]}\nusers:\n- name: {a[0]}\n  user:\n    exec:\n"
                f"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: {command}\n{extra}{info}")
    return pulumi.Output.secret(pulumi.Output.all(name, server, ca).apply(render))

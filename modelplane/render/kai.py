"""KAI gang scheduling: one PodGroup per replica, with a subGroup per GPU role."""
from __future__ import annotations

from .names import KAI_POD_GROUP_ANNOTATION, KAI_QUEUE_LABEL, KAI_SKIP_PODGROUPER, KAI_SUBGROUP_LABEL, meta

# A serving replica keeps running while one of its pods restarts; KAI must not evict the rest of
# the gang as "stale" meanwhile (negative: never; v2alpha2 PodGroupSpec.stalenessGracePeriod).
STALENESS_GRACE_PERIOD = "-1s"


def pod_metadata(pod_group: str, queue: str, role: str) -> tuple[dict, dict]:
    """(labels, annotations) every GPU pod of the replica carries: the queue, its subgroup, the
    PodGroup we render, and the annotation that keeps KAI's pod-grouper from regrouping it."""
    return ({KAI_QUEUE_LABEL: queue, KAI_SUBGROUP_LABEL: role},
            {KAI_POD_GROUP_ANNOTATION: pod_group, KAI_SKIP_PODGROUPER: "true"})


def gang_pods(placement_roles: dict, autoscaling: dict) -> dict[str, int]:
    """Pods per role the gang waits for: every node of every worker, or for an autoscaled role its
    minReplicas workers (the scheduler reserved room for maxReplicas). `placement_roles`:
    role -> {nodes, workers}; `autoscaling`: role -> minReplicas."""
    out = {}
    for role, rp in placement_roles.items():
        nodes, workers = int(rp["nodes"]), int(rp["workers"])
        out[role] = int(autoscaling[role]) * (nodes // workers) if role in autoscaling else nodes
    return out


def pod_group(name: str, namespace: str, lbls: dict, queue: str, priority_class: str,
              pods_per_role: dict[str, int]) -> dict:
    """minMember is every pod of the replica: the gang starts whole or not at all."""
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": meta(name, namespace, {**lbls, KAI_QUEUE_LABEL: queue}),
        "spec": {
            "minMember": sum(pods_per_role.values()),
            "queue": queue,
            "priorityClassName": priority_class,
            "preemptibility": "non-preemptible",
            "stalenessGracePeriod": STALENESS_GRACE_PERIOD,
            "subGroups": [{"name": role, "minMember": n} for role, n in pods_per_role.items()],
        },
    }

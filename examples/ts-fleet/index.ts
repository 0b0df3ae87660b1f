// The YAML example (examples/yaml-fleet) in TypeScript: one adopted on-prem cluster and two models.
// Every entry is typed from the package schema: `pulumi package add ../../provider` generates
// @pulumi/modelplane with an interface per entry (InferenceClusterArgs, ModelDeploymentArgs, ...)
// and an enum per closed set of values (ModelDeploymentPriority, CapacityType, ...).
import * as pulumi from "@pulumi/pulumi";
import * as modelplane from "@pulumi/modelplane";

const config = new pulumi.Config();

const fleet = new modelplane.Fleet("fleet", {
    clusters: [{
        name: "lab",
        existing: {kubeconfigSecret: "labKubeconfig", cloud: modelplane.ExistingCloud.OnPrem, region: "fra1",
                   version: "1.34"},
        nodePools: [{name: "h100", class: "h100-8x", minNodes: 3, maxNodes: 3}],   // whole nodes per worker
        queues: [{namespace: "ml"}],
    }],
    deployments: [
        {
            name: "qwen3-8b",
            namespace: "ml",
            model: {uri: "hf://Qwen/Qwen3-8B"},
            replicas: 2,
            workers: {count: 1, topology: {tensor: 1}},
        },
        {
            name: "qwen3-32b",
            namespace: "ml",
            model: {uri: "hf://Qwen/Qwen3-32B"},
            replicas: 1,
            priority: modelplane.ModelDeploymentPriority.Critical,
            workers: {count: 1, topology: {tensor: 4}},
        },
    ],
    // the settings name secrets by key (kubeconfigSecret); their values (Outputs too) come from here,
    // e.g. {labKubeconfig: cluster.kubeconfigJson} for a pulumi-eks cluster this program creates
    secrets: {labKubeconfig: config.requireSecret("labKubeconfig")},
});

export const placements = fleet.placements;
// typed outputs: where each replica of each deployment runs
export const where = fleet.placements.apply(ps => ps.map(p => `${p.deployment}#${p.replica} on ${p.cluster}`));
export const unplaced = fleet.unplaced;
export const endpoints = fleet.endpoints;

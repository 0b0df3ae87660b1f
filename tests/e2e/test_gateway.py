"""The request path under the real engine: KServe's LLMInferenceService controller, Envoy Gateway and
Envoy AI Gateway, each its upstream binary at the pinned version, on cluster e2e-a.

Runs after test_e2e.py has destroyed its stacks (file order). The operators' controllers run as host
processes (tools/e2e/operators.py); a thread gives LoadBalancer Services an address as a cloud would.
What is proven here rather than read: a first `up` of KServe deployments finishes (pools and pickers
before the services that name them, runtime review N1), every service becomes Ready through the
operators' own conditions, and what an in-place change really awaits (C2).
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import build
import cluster as loopback
import nodes
import operators
from modelplane.render import picker
import xds
from conftest import STACKS
from harness import Sampler, Workspace, stand_in_plugins

INFRA, STACK, CLUSTER, NS = "infra-gw", "gw", "e2e-a", "ml"
OPERATORS = ("kserve", "lws", "envoy-gateway", "ai-gateway")
KSERVE_READY_S = loopback.KSERVE_READY_DELAY_MS / 1000


@pytest.fixture(scope="module")
def gateway_cluster(clusters, report):
    results = {name: build.build(name) for name in OPERATORS}
    report.data["components"].update(results)
    failed = {n: r["error"].strip().splitlines()[-1] for n, r in results.items() if not r["ok"]}
    if failed:
        pytest.skip("could not build: " + "; ".join(f"{n}: {e}" for n, e in failed.items()))
    why = operators.gateways_possible()
    if why:
        pytest.skip(why)
    c = clusters[CLUSTER]
    c.apply(nodes.objects_for(STACKS / f"Pulumi.{INFRA}.yaml", CLUSTER))    # its pool for multi-node replicas too
    operators.start_lws(c)
    operators.start_kserve(c)
    operators.start_gateways(c)
    for name in OPERATORS:
        report.data["notRun"].pop(name, None)
    report.data["notRun"].pop("envoy-gateway, ai-gateway", None)
    report.write()
    try:
        with operators.LoadBalancers(c) as lbs:
            yield c
        report.scenario("g-gateways", loadBalancers=lbs.assigned)
    finally:
        for proc in ("envoy-gateway", "ai-gateway", "kserve", "lws"):
            loopback.stop(c, proc)
        operators.netns_down()


@pytest.fixture(scope="module")
def ws(gateway_cluster, tmp_path_factory):
    w = Workspace(tmp_path_factory.mktemp("gateway-project"))
    # g4's DNS records and drain need an AWS provider and Pulumi's Python dynamic provider host;
    # on PATH for the whole module, so g9's destroy finds them too
    plugins = tmp_path_factory.mktemp("gateway-plugins")
    w.env.update(stand_in_plugins(plugins, plugins / "aws.log", w.env["PATH"]))
    with w:
        for name in (INFRA, STACK):
            w.write_stack(name, (STACKS / f"Pulumi.{name}.yaml").read_text())
        w.set_secrets(INFRA, {"e2eAKubeconfig": loopback.inline_kubeconfig(gateway_cluster.kubeconfig)})
        yield w


def conditions(obj: dict) -> dict[str, str]:
    """type -> status of an object's conditions (or of a status entry's own, e.g. a pool parent's)."""
    conds = obj["conditions"] if "conditions" in obj else obj.get("status", {}).get("conditions", [])
    return {c["type"]: c["status"] for c in conds}


def test_g1_first_up_of_kserve_deployments_finishes(ws, gateway_cluster, report):
    c = gateway_cluster
    infra = ws.operate("up", INFRA)
    report.scenario("g1-first-up", infra={"ok": infra.ok, "summary": infra.summary, "error": infra.error[-3000:]})
    assert infra.ok, infra.error
    # Envoy Gateway programmed modelplane's Gateway: an address (the load balancer's) and Programmed.
    gw = c.get("gateway", "-n", "modelplane-gateway", "inference")
    assert conditions(gw).get("Programmed") == "True", gw.get("status")

    plan = json.loads(ws.modelplane("plan", STACK, "--json").stdout)
    with Sampler({CLUSTER: c}, [NS]) as sampler:
        out = ws.operate("up", STACK)
    order = [(e.t, e.phase, e.op, e.type.rsplit(":", 1)[-1], e.name) for e in out.events]
    report.scenario("g1-first-up", ok=out.ok, seconds=out.seconds, summary=out.summary, error=out.error[-3000:],
                    order=order, servingMin=sampler.minimum_by_deployment())
    assert out.ok, out.error

    # N1: every pool and picker existed before the first service that names it was sent.
    done = {n: t for t, ph, op, kind, n in order if ph == "done" and op == "create"}
    sent = {n: t for t, ph, op, kind, n in order if ph == "pre" and op == "create"}
    services = [n for n in sent if "/llminferenceservice/" in n]
    pools = [n for n in done if "/inferencepool/" in n or n.endswith("-epp") and "/deployment/" in n]
    assert services and pools, order
    assert max(done[p] for p in pools) < min(sent[s] for s in services), order

    # Ready through the operators' own conditions, not ours: KServe's roll-up of the Deployment's
    # Available, Envoy Gateway's route acceptance and AI Gateway's pool parents.
    for p in plan["placements"]:
        name = f"{p['deployment'].split('/')[1]}-{p['replica']}"
        svc = c.get("llminferenceservice", "-n", NS, name)
        conds = conditions(svc)
        for t in ("Ready", "WorkloadsReady", "RouterReady", "GatewaysReady", "HTTPRoutesReady", "InferencePoolReady"):
            assert conds.get(t) == "True", (name, t, conds)
        pods = c.get("pods", "-n", NS, "-l", f"modelplane.ai/deployment={p['deployment'].split('/')[1]},"
                     f"modelplane.ai/replica={p['replica']}")["items"]
        roles = p["roles"].values()
        # Every role's pods (prefill and decode; a multi-node replica's LeaderWorkerSet group, one
        # pod per node), each on a node of its planned pool.
        assert len(pods) == sum(r["workers"] * r["nodes"] for r in roles), (name, [x["metadata"]["name"] for x in pods])
        for pod in pods:
            node = c.get("node", pod["spec"]["nodeName"])
            assert node["metadata"]["labels"]["modelplane.ai/pool"] in {r["pool"] for r in roles}
        if any(r["nodes"] > 1 for r in roles):
            assert len({pod["spec"]["nodeName"] for pod in pods}) == len(pods), name
    # N10: KServe's managed routes only on the hop Gateway's `kserve` listener, so the pools' one
    # parent is the hop Gateway (this stack has no service routes on the inference Gateway).
    for route in c.get("httproutes", "-n", NS, "-l", "app.kubernetes.io/component=llminferenceservice-router")["items"]:
        refs = [(x["name"], x.get("sectionName")) for x in route["spec"]["parentRefs"]]
        assert refs == [("inference-hop", "kserve")], (route["metadata"]["name"], refs)
    for pool in c.get("inferencepools.inference.networking.k8s.io", "-n", NS)["items"]:
        parents = pool["status"]["parents"]
        assert [(x["parentRef"]["namespace"], x["parentRef"]["name"]) for x in parents] == \
            [("modelplane-gateway", "inference-hop")], pool["metadata"]["name"]
        assert conditions(parents[0]) == {"Accepted": "True", "ResolvedRefs": "True"}, pool["metadata"]["name"]
    lws = c.get("leaderworkersets", "-n", NS)["items"]
    assert [conditions(x).get("Available") for x in lws] == ["True"], [x.get("status") for x in lws]
    # Each picker's PodDisruptionBudget (policy/v1, which the offline schema check does not carry):
    # the API server took it and kube-controller-manager's disruption controller acts on it,
    # counting the picker's two pods against minAvailable 1.
    for dep in sorted({p["deployment"].split("/")[1] for p in plan["placements"]}):
        name = picker.picker_name(dep)
        deadline = time.monotonic() + 60
        while True:
            pdb = c.get("poddisruptionbudget", "-n", NS, name)
            st = pdb.get("status") or {}
            if st.get("observedGeneration") == pdb["metadata"]["generation"] or time.monotonic() > deadline:
                break
            time.sleep(2)
        assert pdb["spec"]["minAvailable"] == 1 and pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow", pdb
        assert (st.get("observedGeneration"), st.get("desiredHealthy"), st.get("expectedPods")) == \
            (pdb["metadata"]["generation"], 1, picker.PICKER_REPLICAS), (name, st)
    report.scenario("g1-first-up", verified="first up finished; every LLMInferenceService Ready with Gateways "
                    "Programmed, routes Accepted and the shared pool's parent Accepted by AI Gateway; the "
                    "multi-node replica's LeaderWorkerSet Available, one pod per node")

    again = ws.operate("preview", STACK)
    changed = [(e.op, e.name, e.type, e.diffs) for e in again.events if e.phase == "pre" and e.op not in ("same", "read")]
    # One known exception, seen in 2 of 8 runs: KServe v0.20.0 brings its child LeaderWorkerSet or
    # Deployment back to what it expects with a full Update (lifecycle_crud.go L150-172) whenever it
    # finds them unequal (workload_multi_node.go L671-692), which drops every annotation it does not
    # set, among them our observer's (render/rollout.py await_children). The next preview then
    # offers to put them back. Accepted only where the live child has really lost them.
    dropped = {}
    for op, name, kind, _ in changed:
        if op == "update" and kind.endswith("Patch") and name.startswith(f"{CLUSTER}/{NS}/"):
            live = c.get(name.split("/")[2], "-n", NS, name.split("/")[3])["metadata"].get("annotations") or {}
            if "modelplane.ai/spec-digest" not in live:
                dropped[name] = sorted(live)
    report.scenario("g1-first-up", second_preview=again.summary, second_preview_changes=changed,
                    observerAnnotationsDroppedByKServe=dropped)
    assert again.ok and all(n in dropped for _, n, _, _ in changed), (again.summary, changed, dropped)


def rolled(c, name: str) -> dict:
    """A KServe child workload's rollout. A Deployment (`<svc>-kserve`) as `kubectl rollout status`
    judges it: the controller saw the latest spec and every replica is updated and available, no old
    one left. A LeaderWorkerSet (`<svc>-kserve-mn`) as its controller reports it: status and its
    `Available` condition at the current generation, every group updated and ready (lws v0.9.0
    pkg/controllers/leaderworkerset_controller.go L458-495: Available only once every group runs
    the new revision)."""
    if name.endswith("-kserve-mn"):
        w = c.get("leaderworkersets", "-n", NS, name)
        st, want, gen = w.get("status", {}), w["spec"].get("replicas", 1), w["metadata"]["generation"]
        available = [x for x in st.get("conditions", []) if x["type"] == "Available"]
        done = (st.get("observedGeneration") == gen and st.get("updatedReplicas") == want
                and st.get("readyReplicas") == want and bool(available) and available[0]["status"] == "True"
                and available[0].get("observedGeneration") == gen)
        return {"done": done, "generation": gen, **{k: st.get(k) for k in (
            "observedGeneration", "replicas", "updatedReplicas", "readyReplicas")}}
    d = c.get("deployment", "-n", NS, name)
    st, want = d.get("status", {}), d["spec"].get("replicas", 1)
    done = (st.get("observedGeneration") == d["metadata"]["generation"] and st.get("updatedReplicas") == want
            and st.get("availableReplicas") == want and st.get("replicas") == want)
    return {"done": done, "generation": d["metadata"]["generation"], **{k: st.get(k) for k in (
        "observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas")}}


class RolloutWatch:
    """Polls the rollout of some Deployments, remembering when each poll started: a poll that began
    after a moment T and found a rollout unfinished proves it was unfinished at T or later, however
    slow the machine (no timing threshold)."""

    def __init__(self, c, names: list[str], interval: float = 0.3):
        self.c, self.names, self.interval = c, names, interval
        self.polls: list[tuple[float, dict[str, bool]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)

    def _run(self):
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                self.polls.append((began, {n: rolled(self.c, n)["done"] for n in self.names}))
            except RuntimeError:        # a Deployment KServe has not made yet
                pass
            self._stop.wait(self.interval)

    def unfinished_after(self, name: str, moment: float) -> list[float]:
        """Poll start times, at or after MOMENT, that found NAME's rollout unfinished."""
        return [t for t, done in self.polls if t >= moment and not done[name]]


def test_g2_in_place_change_is_awaited(ws, gateway_cluster, report):
    c = gateway_cluster
    path = ws.root / "stacks" / f"Pulumi.{STACK}.yaml"
    path.write_text(path.read_text().replace("--max-model-len=10240", "--max-model-len=16384"))
    replicas = ("qwen3-8b-0", "qwen3-8b-1")
    with Sampler({CLUSTER: c}, [NS]) as sampler, RolloutWatch(c, [f"{r}-kserve" for r in replicas]) as watch:
        began = time.monotonic()
        out = ws.operate("up", STACK)
        ended = time.monotonic()
        time.sleep(2 * KSERVE_READY_S)     # let the rolls finish, so the watch sees when they did
    starts = {r: began + e.t for e in out.events for r in replicas
              if e.phase == "pre" and e.op == "update" and e.name.endswith(f"/llminferenceservice/{r}")}
    first, second = sorted(starts, key=starts.get)
    late = {"upReturnedBefore": {r: len(watch.unfinished_after(f"{r}-kserve", ended)) for r in replicas},
            "secondStartedBefore": len(watch.unfinished_after(f"{first}-kserve", starts[second]))}
    report.scenario("g2-in-place", ok=out.ok, seconds=out.seconds, summary=out.summary, error=out.error[-3000:],
                    order=[(e.t, e.phase, e.op, e.name) for e in out.events if e.phase != "pre" or e.op != "same"],
                    pollsFindingRollsUnfinished=late, servingMin=sampler.minimum_by_deployment())
    assert out.ok, out.error
    assert set(starts) == set(replicas), starts
    # What `up` reports done is done: no poll begun after it returned found a roll unfinished ...
    assert late["upReturnedBefore"] == {r: 0 for r in replicas}, late
    # ... and one replica at a time, as the plan says: the second roll began after the first ended.
    assert late["secondStartedBefore"] == 0, late
    assert sampler.minimum_by_deployment()[f"{NS}/qwen3-8b"] >= 1


def test_g3_multi_node_in_place_change_is_awaited(ws, gateway_cluster, report):
    """C2 for a LeaderWorkerSet: an engine-args change of the two-node replica rolls its group, and
    `up` returns only after the LeaderWorkerSet reports the new revision Available."""
    c = gateway_cluster
    path = ws.root / "stacks" / f"Pulumi.{STACK}.yaml"
    path.write_text(path.read_text().replace("--max-model-len=4096", "--max-model-len=6144"))
    lws = "qwen3-8b-pp-0-kserve-mn"
    before = rolled(c, lws)["generation"]
    with RolloutWatch(c, [lws]) as watch:
        out = ws.operate("up", STACK)
        ended = time.monotonic()
        time.sleep(2 * KSERVE_READY_S)
    after = rolled(c, lws)
    late = len(watch.unfinished_after(lws, ended))
    report.scenario("g3-multi-node-in-place", ok=out.ok, seconds=out.seconds, summary=out.summary,
                    error=out.error[-3000:], generations=[before, after["generation"]],
                    pollsFindingRollUnfinishedAfterUp=late, polls=len(watch.polls))
    assert out.ok, out.error
    assert after["generation"] > before and after["done"], after      # it did roll, and finished
    assert late == 0, late        # what `up` reports done is done: no later poll found the roll unfinished


API, HOST = "gw-api", "api.acme-ml.com"
MODEL_HEADER = "x-ai-eg-model"


def settled(read, timeout: float = 90, every: float = 1.0):
    """`read()` until it returns a truthy value (the operators reconcile after `up` returns)."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every)


def accepted(c, kind: str, name: str) -> bool:
    return conditions(c.get(kind, "-n", NS, name)).get("Accepted") == "True"


def parents_accepted(route: dict) -> bool:
    parents = route.get("status", {}).get("parents", [])
    return bool(parents) and all(conditions(p) == {"Accepted": "True", "ResolvedRefs": "True"} for p in parents)


def test_g4_models_on_one_hostname_with_a_fallback_provider(ws, gateway_cluster, report):
    """Model-name routing and provider fallback (#45) as the real operators translate them: AI
    Gateway v1.0.0 accepts modelplane's AIGatewayRoutes and generates their HTTPRoutes, Envoy Gateway
    v1.8.1 accepts those (with AI Gateway's extension server modifying the translation), and the
    Envoy configuration served to the Gateway's proxy routes each model name by `x-ai-eg-model`,
    answers 404 to any other, and puts the fallback provider at priority 1 behind a retry that moves
    to the next priority. No request is proxied (the Envoy pods are KWOK's): this is the
    configuration Envoy would run, read over xDS."""
    c = gateway_cluster
    built = build.build("xds-dump")
    report.data["components"]["xds-dump"] = built
    if not built["ok"]:
        pytest.skip("could not build xds-dump: " + built["error"].strip().splitlines()[-1])
    ws.write_stack(API, (STACKS / f"Pulumi.{API}.yaml").read_text())
    ws.set_secrets(API, {"togetherApiKey": "e2e-not-a-key"})
    plan = json.loads(ws.modelplane("plan", API, "--json").stdout)
    models = plan["modelNames"][HOST]            # model name -> "<ns>/<service>"
    fallback = {"Qwen/Qwen3-8B": "together"}
    assert sorted(models) == ["Qwen/Qwen3-8B", "openai/gpt-oss-20b"], models
    out = ws.operate("up", API)
    report.scenario("g4-model-routing", ok=out.ok, seconds=out.seconds, summary=out.summary, error=out.error[-3000:])
    assert out.ok, out.error

    services = {m: s.split("/")[1] for m, s in models.items()}
    for svc in services.values():
        # AI Gateway reconciled the route into an HTTPRoute of the same name; Envoy Gateway accepted
        # that on the Gateway with every backend resolved; the retry policy is accepted on it.
        assert settled(lambda: accepted(c, "aigatewayroutes", svc)), c.get("aigatewayroutes", "-n", NS, svc).get("status")
        assert settled(lambda: parents_accepted(c.get("httproute", "-n", NS, svc))), \
            c.get("httproute", "-n", NS, svc).get("status")
        assert settled(lambda: parents_accepted(c.get("httproute", "-n", NS, f"{svc}-hop")))
        btp = c.get("backendtrafficpolicies", "-n", NS, svc)
        ancestors = btp.get("status", {}).get("ancestors", [])
        assert ancestors and all(conditions(a).get("Accepted") == "True" for a in ancestors), btp.get("status")
    for backend in c.get("aiservicebackends", "-n", NS)["items"]:
        assert conditions(backend).get("Accepted") == "True", backend["metadata"]["name"]
    for policy in c.get("backendsecuritypolicies", "-n", NS)["items"]:
        assert conditions(policy).get("Accepted") == "True", policy["metadata"]["name"]

    def envoy_config():
        try:
            d = xds.dump(c, "modelplane-gateway", "inference")
            vh = xds.virtual_host(d, HOST)
        except (RuntimeError, AssertionError):
            return None
        found = {xds.header_value(r, MODEL_HEADER) for r in vh.get("routes", [])}
        return (d, vh) if set(models) <= found else None
    got = settled(envoy_config, timeout=120, every=3)
    assert got, "the Gateway's proxy is never served a route per model name"
    d, vh = got
    # N10: none of KServe's managed routes (`/<ns>/<name>/v1/...`, or its model header) is served on
    # the inference Gateway; they are on the hop Gateway, under their own Host only.
    public = [m for m in xds.matches(d) if m[1].startswith(f"/{NS}/") or "x-gateway-model-name" in m[2]]
    assert public == [], public
    hop = [m for m in xds.matches(xds.dump(c, "modelplane-gateway", "inference-hop")) if m[1].startswith(f"/{NS}/")]
    assert hop and all(x.split(":")[0] == "kserve.modelplane.internal" for m in hop for x in m[0]), hop
    routes = vh["routes"]
    by_model = {xds.header_value(r, MODEL_HEADER): (i, r) for i, r in enumerate(routes)}
    not_found = [i for i, r in enumerate(routes) if r.get("directResponse", {}).get("status") == 404]
    facts = {"virtualHost": vh.get("name"), "routes": [r.get("name") for r in routes], "notFound": not_found}
    # Any other model: AI Gateway's 404, after every model's own route (Envoy takes the first match).
    assert not_found and max(by_model[m][0] for m in models) < min(not_found), facts
    for model, svc in services.items():
        i, r = by_model[model]
        action = r["route"]
        cl = xds.cluster(d, action["cluster"])
        prios = xds.endpoint_hosts_by_priority(cl)
        facts[model] = {"cluster": cl["name"], "priorities": prios, "retryPriority":
                        action.get("retryPolicy", {}).get("retryPriority", {}).get("name")}
        entry = c.get("backends.gateway.envoyproxy.io", "-n", NS, f"{svc}-entry")["spec"]["endpoints"][0]["fqdn"]
        assert prios[0] == [f"{entry['hostname']}:{entry['port']}"], facts[model]
        if model in fallback:
            provider = c.get("backends.gateway.envoyproxy.io", "-n", NS,
                             f"{svc}-{fallback[model]}")["spec"]["endpoints"][0]["fqdn"]
            assert sorted(prios) == [0, 1] and prios[1] == [f"{provider['hostname']}:{provider['port']}"], facts[model]
            # a failed attempt is retried at the next priority: Envoy's previous_priorities predicate
            assert facts[model]["retryPriority"] == "envoy.retry_priorities.previous_priorities", action.get("retryPolicy")
        else:
            assert sorted(prios) == [0], facts[model]
    report.scenario("g4-model-routing", xds=facts, verified=(
        "AIGatewayRoutes Accepted by AI Gateway, their HTTPRoutes and the hop routes Accepted with refs resolved "
        "by Envoy Gateway; the proxy's xDS routes each model name by x-ai-eg-model, 404 for any other after them, "
        "the fallback provider at priority 1 with the previous_priorities retry"))

    gone = ws.operate("destroy", API)
    report.scenario("g4-model-routing", destroyed=gone.ok, destroy_error=gone.error[-2000:])
    if not gone.ok and "aigateway.envoyproxy.io/finalizer" in gone.error:
        # AI Gateway v1.0.0 lost its finalizer update and never retries (docs/e2e.md g4); the plan
        # now deletes its objects one by one so this should not recur. If it does, release the
        # stuck object so the namespace, and g9's destroy, are not held by it, and say so.
        stuck = [f"{x['metadata']['namespace']}/{x['metadata']['name']}"
                 for x in c.get("aiservicebackends", "-A")["items"] if x["metadata"].get("deletionTimestamp")]
        for name in stuck:
            ns, n = name.split("/")
            c.kubectl("patch", "aiservicebackend", "-n", ns, n, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
        report.scenario("g4-model-routing", finalizerReleasedByHarness=stuck)
        pytest.xfail(f"destroy waited on AI Gateway's finalizer of {stuck} (docs/e2e.md g4); released by the harness")
    assert gone.ok, gone.error
# g6: a service with a DNS name on the gateway cluster, then the `up` that takes it off the cluster.
DNS_TTL = 5
DNS = f"""  modelplane:dns:
    route53: {{zoneId: Z0E2EEXAMPLE, domain: e2e.example.com}}
    ttl: {DNS_TTL}
"""
SERVICE = """  modelplane:services:
    - name: chat
      namespace: ml
      hostname: chat.e2e.example.com
      endpoints:
        - {deployment: qwen3-8b}
"""
RECORD, DRAIN = "aws:route53/record:Record", "pulumi-python:dynamic/modelplane:DnsDrain"


def _with_config(stack_text: str, extra: str) -> str:
    """The stack file with `extra` config keys added: into its `config:` block, not at its end
    (Pulumi writes `encryptionsalt:` below the config of a stack that holds secrets)."""
    import yaml

    doc = yaml.safe_load(stack_text)
    doc["config"].update(yaml.safe_load("config:\n" + extra)["config"])
    return yaml.safe_dump(doc, sort_keys=False)


def test_g6_a_service_leaving_a_cluster_loses_its_dns_record_a_ttl_before_its_routes(ws, gateway_cluster, report):
    """C5 on the real engine: between the service's Route 53 record and its routes on e2e-a stands
    a drain (render/drain.py), a Pulumi Python dynamic resource whose delete waits the TTL + 5 s.
    The first `up` creates routes, then the drain (at once), then the record; the `up` that takes
    the service off e2e-a (its only gateway cluster here: the record and routes of a cluster that
    leaves a service go the same way) deletes the record, waits, then deletes the routes. Route 53
    is a stand-in (tools/e2e/standin_aws.py); the routes are real HTTPRoutes on e2e-a, and the
    order and the wait are the engine's, read from its events. No upper bound on time: only that
    the routes went at least the TTL after the record."""
    c = gateway_cluster
    path = ws.root / "stacks" / f"Pulumi.{STACK}.yaml"
    base = path.read_text()
    try:
        path.write_text(_with_config(base, DNS + SERVICE))
        made = ws.operate("up", STACK)
        report.scenario("g6-dns-drain", made={"ok": made.ok, "seconds": made.seconds, "summary": made.summary,
                                              "error": made.error[-3000:]})
        assert made.ok, made.error
        routes = [x["metadata"]["name"] for x in c.get("httproutes", "-n", NS, "-l", "modelplane.ai/service=chat")["items"]]
        assert sorted(routes) == ["chat", "chat-health"], routes
        done = {(e.type, e.name): e.t for e in made.events if e.phase == "done" and e.op == "create"}
        sent = {(e.type, e.name): e.t for e in made.events if e.phase == "pre" and e.op == "create"}
        route_keys = [k for k in done if k[0].endswith(":HTTPRoute") and k[1].startswith(f"{CLUSTER}/{NS}/httproute/chat")]
        # qwen3-8b's two replicas on e2e-a: one record each, told apart by setIdentifier (review N11)
        records = [(RECORD, f"{NS}-chat-{CLUSTER}-{NS}-qwen3-8b-{i}") for i in (0, 1)]
        drains = [(DRAIN, f"{name}-drain") for _, name in records]
        assert len(route_keys) == 2 and set(drains + records) <= set(done), sorted(done)
        assert (RECORD, f"{NS}-chat-{CLUSTER}") not in done, sorted(done)
        for drain, record in zip(drains, records):
            assert max(done[k] for k in route_keys) <= sent[drain] and done[drain] <= sent[record]

        path.write_text(_with_config(base, DNS))        # the service leaves e2e-a
        out = ws.operate("up", STACK)
    finally:
        path.write_text(base)       # g9 destroys the rest (the DNS provider among it)
    deleted = [(e.t, e.phase, e.type, e.name) for e in out.events if e.op == "delete"]
    report.scenario("g6-dns-drain", ok=out.ok, seconds=out.seconds, summary=out.summary, error=out.error[-3000:],
                    deletes=deleted)
    assert out.ok, out.error
    began = {(ty, n): t for t, ph, ty, n in deleted if ph == "pre"}
    ended = {(ty, n): t for t, ph, ty, n in deleted if ph == "done"}
    gone_routes = [k for k in began if k[0].endswith(":HTTPRoute")]
    assert len(gone_routes) == 2 and set(drains + records) <= set(ended), deleted
    # each record, then its drain, then the routes; the routes at least the TTL after the last record
    for drain, record in zip(drains, records):
        assert ended[record] <= began[drain] and ended[drain] <= min(began[k] for k in gone_routes), deleted
    gap = min(began[k] for k in gone_routes) - max(ended[r] for r in records)
    report.scenario("g6-dns-drain", recordToRoutesSeconds=round(gap, 2))
    assert gap >= DNS_TTL, deleted
    assert c.get("httproutes", "-n", NS, "-l", "modelplane.ai/service=chat")["items"] == []
    calls = [json.loads(line) for line in Path(ws.env["MODELPLANE_E2E_AWS_LOG"]).read_text().splitlines()]
    for _, name in records:
        assert [x["op"] for x in calls if x["urn"].endswith(f"::{name}") and "route53/record" in x["urn"]] \
            == ["create", "delete"], calls


def listener_conditions(gw: dict, name: str) -> dict:
    return next((conditions(x) for x in gw.get("status", {}).get("listeners", []) if x["name"] == name), {})


def test_g5_https_once_cert_manager_issues(ws, gateway_cluster, report):
    """N2 on the real operators (after g6: its service's hostname is not under this certificate, which
    the loader refuses once the cluster has `tls`): with `tls` on the cluster, modelplane's Certificate is issued by
    cert-manager v1.21.1's own control loops (a CA ClusterIssuer: no ACME server here), Envoy
    Gateway programs the `https` listener from its Secret, and the apps stack's next `up` changes no
    LLMInferenceService (their managed routes stay on the hop Gateway), so every service stays Ready."""
    c = gateway_cluster
    built = build.build("cert-manager")
    report.data["components"]["cert-manager"] = built
    if not built["ok"]:
        pytest.skip("could not build cert-manager: " + built["error"].strip().splitlines()[-1])
    operators.start_cert_manager(c)
    report.data["notRun"].pop("cert-manager", None)
    try:
        c.apply(operators.ca_issuer(c))
        path = ws.root / "stacks" / f"Pulumi.{INFRA}.yaml"
        path.write_text(path.read_text().replace(
            "      queues:\n", '      tls: {hostnames: ["*.acme-ml.com"], issuerRef: {name: e2e-ca}}\n      queues:\n', 1))
        infra = ws.operate("up", INFRA)
        report.scenario("g5-https", infra={"ok": infra.ok, "summary": infra.summary, "error": infra.error[-3000:]})
        assert infra.ok, infra.error

        cert = settled(lambda: conditions(c.get("certificate", "-n", "modelplane-gateway", "inference-gateway-tls"))
                       .get("Ready") == "True", timeout=120)
        assert cert, c.get("certificate", "-n", "modelplane-gateway", "inference-gateway-tls").get("status")
        secret = c.get("secret", "-n", "modelplane-gateway", "inference-gateway-tls")
        assert secret["type"] == "kubernetes.io/tls" and secret["data"].get("tls.crt"), secret["metadata"]
        https = settled(lambda: listener_conditions(c.get("gateway", "-n", "modelplane-gateway", "inference"), "https")
                        .get("Programmed") == "True", timeout=120)
        gw = c.get("gateway", "-n", "modelplane-gateway", "inference")
        assert https, gw.get("status", {}).get("listeners")
        assert listener_conditions(gw, "https").get("ResolvedRefs") == "True", gw["status"]["listeners"]

        out = ws.operate("up", STACK)
        report.scenario("g5-https", ok=out.ok, seconds=out.seconds, summary=out.summary, error=out.error[-3000:])
        assert out.ok, out.error
        # The managed routes' ref does not follow the listener, so TLS changes no service: Envoy
        # Gateway keeps a dropped parent's status and KServe then never reports the service Ready
        # (what this scenario found while the ref named `https`; docs/routing.md).
        touched = [(e.op, e.name) for e in out.events if e.phase == "pre" and "/llminferenceservice/" in e.name
                   and e.op not in ("same", "read")]
        assert touched == [], touched
        plan = json.loads(ws.modelplane("plan", STACK, "--json").stdout)
        names = [f"{p['deployment'].split('/')[1]}-{p['replica']}" for p in plan["placements"]]
        for name in names:
            svc = c.get("llminferenceservice", "-n", NS, name)
            assert svc["spec"]["router"]["gateway"]["refs"] == [
                {"name": "inference-hop", "namespace": "modelplane-gateway", "sectionName": "kserve"}], svc["spec"]["router"]
        ready = settled(lambda: all(conditions(c.get("llminferenceservice", "-n", NS, n)).get("HTTPRoutesReady") == "True"
                                    and conditions(c.get("llminferenceservice", "-n", NS, n)).get("Ready") == "True"
                                    for n in names), timeout=180, every=3)
        states = {n: conditions(c.get("llminferenceservice", "-n", NS, n)) for n in names}
        report.scenario("g5-https", certificate="Ready", httpsListener=listener_conditions(gw, "https"),
                        services={n: {k: v for k, v in st.items() if k in ("Ready", "HTTPRoutesReady")}
                                  for n, st in states.items()})
        assert ready, states
    finally:
        loopback.stop(c, "cert-manager")


def test_g9_destroy(ws, gateway_cluster, report):
    out = ws.operate("destroy", STACK)
    infra = ws.operate("destroy", INFRA)
    report.scenario("g9-destroy", ok=out.ok and infra.ok, summary=out.summary, infra_summary=infra.summary,
                    error=(out.error + infra.error)[-3000:])
    assert out.ok, out.error
    assert infra.ok, infra.error
    left = gateway_cluster.kubectl("get", "llminferenceservices,inferencepools,gateways,deployments", "-A",
                                   "-l", "app.kubernetes.io/managed-by=modelplane", "-o", "name", check=False)
    assert left.strip() == "", left

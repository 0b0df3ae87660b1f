"""The `modelplane` command: offline plan (no cloud, no pulumi binary) and Automation API runs."""
from __future__ import annotations

import gc
import json
import os
import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path

from . import startup

startup.prepare()     # before pydantic or any dataclass is imported (startup.py)

import click  # noqa: E402

from .console import (EXIT_FAILED, EXIT_INPUT, EXIT_VIOLATION, FORMATS, err, out,  # noqa: F401  (re-exported)
                      project_options)
from .console import fail as _fail, refuse as _refuse
from . import __version__
from .errors import InputError, Problem


@contextmanager
def collector_paused():
    """A plan allocates millions of small acyclic objects (records, proxies, the document) and
    frees them at exit: the cyclic collector's full passes over that heap are pure overhead
    (a fifth of a large plan's time); it runs again afterwards."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            # What survived the plan goes to the oldest generation: re-enabled as it was, the first
            # allocation would start a young collection over all of it (0.45 s at 100 x 2,000).
            gc.freeze()
            gc.unfreeze()
            gc.enable()


_ENTRY = {"plan done": False}     # set by `plan` once its output is written; read by `run`


def run() -> None:
    """The console script (and `python -m modelplane`): `main`, and after a finished `plan` out at
    once: its output flushed, the heap it leaves (hundreds of MiB on a large fleet) is not torn
    down object by object, which is a twentieth of such a plan. Its exit handlers still run first:
    they keep the user's caches (startup.py's compiled code, scheduler/cel.py's outcomes). Other
    commands exit as usual (their temporary folders and threads end at exit)."""
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    if not _ENTRY["plan done"] or not (code is None or isinstance(code, int)):
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):       # a closed pipe: what a normal exit would meet too
            code = code or EXIT_FAILED
    import atexit

    atexit._run_exitfuncs()     # what interpreter shutdown runs first; os._exit skips the rest of it
    os._exit(code or 0)


def _explain_key(run, key: str) -> str:
    """The deployment `--explain` names (namespace/name, or a name unique in the stack)."""
    desired = run.result.plan.desired
    if key in desired:
        return key
    known = sorted(desired)
    matches = [k for k in known if k.split("/")[-1] == key]
    if len(matches) != 1:
        from .errors import did_you_mean

        guess = did_you_mean(key, known)
        raise InputError([Problem("--explain", key, f"no deployment {key!r} in this stack",
                                  f"did you mean {guess!r}?" if guess else
                                  f"choose one of {', '.join(known) or '(none: the stack has no deployments)'}")])
    return matches[0]


def _explain_doc(run, key: str) -> dict:
    """The Filter/Score table and exact-phase moves of one deployment, for `--json`."""
    from .scheduler.explain import explain_rows

    cols = ("cluster", "pool", "role", "verdict", "reason", "detail")
    return {"deployment": key, "rows": [dict(zip(cols, row)) for row in explain_rows(run.result, key)],
            "exactPhase": [{"replica": i, "cluster": after, "before": before}
                           for d, i, before, after in run.result.plan.changed if d == key]}


def _previous_document(path: Path) -> dict:
    """The previous plan as a document (a bare placements list is one without resources or cost)."""
    doc = json.loads(path.read_text())
    return doc if isinstance(doc, dict) else {"placements": doc}


def _explain(run, key: str) -> None:
    from rich.table import Table

    from .scheduler.explain import explain_rows

    result = run.result
    table = Table(title=f"Filter / Score for {key}", title_justify="left")
    for col in ("cluster", "pool", "role", "verdict", "reason", "detail"):
        table.add_column(col)
    for row in explain_rows(result, key):
        table.add_row(*row)
    out.print(table)
    for d, i, before, after in result.plan.changed:
        if d == key:
            why = f"instead of {before}" if before else "which the fast path left unplaced"
            out.print(f"  exact phase: replica {i} on {after} {why} (the exact fill places more replicas of "
                      "higher tiers, then more GPUs, than first fit in name order)", markup=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="modelplane", message="%(prog)s %(version)s")
def main():
    """Run LLM inference on GPU fleets: plan offline, preview and apply with Pulumi."""


def _check_inputs(stack, config_file, out_dir, report_file, previous, policy_config, program_dir):
    """Every input `plan` reads, checked before the pack starts or the program runs: the stack
    file, --previous, --policy-config and where output goes. Returns what the run reuses."""
    from .output import outdir
    from .api.loader import check_stack
    from .api.previous import read_previous
    from .policy.gate import read_config

    if program_dir and config_file:
        raise InputError([Problem("--program", str(program_dir), "--program plans your own program as written, "
                                  "so --config-file does not apply", "drop --config-file, or plan the stack file "
                                  "without --program")])
    if out_dir:
        outdir.check_out(out_dir)
    if report_file:
        outdir.check_report(report_file)
    prev = read_previous(previous, stack)
    policy = read_config(policy_config) if policy_config else None
    checked = None if program_dir else check_stack(stack, config_file)
    return prev, policy, checked


def _plan_and_gate(gate, stack, config_file, prev, without, policy, policy_config, program_dir=None, checked=None,
                   engine="direct"):
    """Plan (and re-plan without the lost clusters), then run the pack. Raises InputError on bad input.
    `engine`: "direct" (the graph recorded without the SDK, the pack's rules called in-process) or
    "pulumi" (the program under Pulumi's mocks, the pack through the analyzer protocol)."""
    from .output import report
    from .policy import default_config, evaluate, read_config
    from .policy.background import Verdicts, evaluate_later

    if engine == "pulumi":
        from .engine import offline as engine_module
    else:
        from .engine import direct as engine_module

    services_before, before, cost_before = [], {}, None
    if program_dir and without:
        raise InputError([Problem("--program", str(program_dir), "--program plans your own program as written, so "
                                  "--without does not apply", "plan the stack file to ask what losing a cluster does")])
    run = engine_module.run_program(program_dir, stack, prev) if program_dir else \
        engine_module.run(stack, config_file, prev, checked=checked)
    if without:
        known = set(run.result.inventories)
        for name in without:
            if name not in known:
                from .errors import did_you_mean

                guess = did_you_mean(name, known)
                raise InputError([Problem("--without", name, "no such cluster in this plan",
                                          f"did you mean {guess!r}?" if guess else
                                          f"clusters are {', '.join(sorted(known))}")])
        base = [p.to_json() for p in run.result.plan.placements]
        before = {(p["deployment"], p["replica"]): p["cluster"] for p in base}
        services_before = report.services(run)
        cost_before = report.cost_of(run, base)
        run = engine_module.run(stack, config_file, base, tuple(without), checked=checked)
    policy_file = policy_config or default_config(run.result.spec.production)
    config = policy if policy is not None else read_config(policy_file)
    # in-process rules run on the other core while the document is built (policy/background.py)
    verdicts = evaluate_later(run, config) if gate is None else Verdicts(run, config, done=evaluate(run, config, gate))
    return run, verdicts, (services_before, cost_before), before, policy_file


def _write_json(doc: dict) -> None:
    """The plan document on stdout: as UTF-8 bytes straight to its binary buffer where stdout
    writes UTF-8 anyway (the same bytes, without decoding orjson's and encoding them again)."""
    from .output import report

    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None and _is_utf8(getattr(sys.stdout, "encoding", None)):
        sys.stdout.flush()          # what was written as text goes first
        report.write_json(doc, buffer.write, utf8=True)
        buffer.flush()
    else:
        report.write_json(doc, sys.stdout.write)


def _is_utf8(encoding: str | None) -> bool:
    """Whether a stream's encoding is UTF-8 under any of its names (utf8, UTF-8, utf_8)."""
    import codecs

    try:
        return encoding is not None and codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def _format_of(fmt: str | None, as_json: bool) -> str:
    if as_json and fmt not in (None, "json"):
        raise click.UsageError(f"--json is --format json; it cannot go with --format {fmt}")
    return "json" if as_json else fmt or "text"


def _refused(exc: InputError, fmt: str, stack: str) -> None:
    """Invalid input: the problems on stderr, and in the asked format on stdout (CI reads one
    document either way); exit 2."""
    from .output import comment, report, sarif
    from .api.project import current

    err.print(exc.render(), markup=False)
    if fmt == "json":
        sys.stdout.write(report.to_json(report.refusal(stack, exc.problems)))
    elif fmt == "sarif":
        sys.stdout.write(report.to_json(sarif.log(exc.problems, [], current().root)))
    elif fmt == "markdown":
        sys.stdout.write(comment.refused(stack, exc.problems))
    sys.exit(EXIT_INPUT)


@main.command()
@click.argument("stack")
@click.option("--config-file", type=click.Path(path_type=Path),
              help="Plan this stack file instead of the project's Pulumi.STACK.yaml (infra stacks its fleet names "
                   "are read beside it).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="text (default): tables; json: the plan document; markdown: a pull-request comment; sarif: "
                   "input problems and policy verdicts with file and line (SARIF 2.1.0), for CI annotations.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json: the plan document (its keys: README, `--json`).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), help="Write every Kubernetes object (and cloud resource inputs) here.")
@click.option("--report", "report_file", type=click.Path(path_type=Path),
              help="Write the fleet report (one self-contained HTML page) here.")
@click.option("--previous", type=click.Path(path_type=Path), help="A previous `plan --json` output: its placements are the existing state.")
@click.option("--explain", metavar="DEPLOYMENT", help="Print only the whole Filter/Score table for one deployment.")
@click.option("--without", "without", multiple=True, metavar="CLUSTER",
              help="What-if: plan as if this cluster were lost; prints only what changes.")
@click.option("--repack", is_flag=True, help="What-if: what a full re-pack (no stickiness, exact phase) would move and gain.")
@click.option("--program", "program_dir", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Plan your own Pulumi program (a directory using modelplane.Fleet: Python, or YAML with "
                   "modelplane:index:Fleet resources) for stack STACK.")
@click.option("--policy-config", type=click.Path(path_type=Path),
              help="Policy pack config in the CLI's format (default: the project's policies/config/dev.json, or "
                   "production.json for production stacks, else the package's).")
@click.option("--trace", "hosts", multiple=True, metavar="HOST",
              help="Follow a service hostname from DNS through the gateway and routes to GPU pods or a provider "
                   "(prints only the trace); exit 1 if any share of it breaks on the way.")
@click.option("--down", "down", multiple=True, metavar="NAME",
              help="With --trace: trace as if this were gone (repeatable): a cluster, a replica "
                   "(namespace/deployment#index), a P/D role of one (namespace/deployment#index/prefill or /decode), a provider, an endpoint picker ([cluster/]namespace/deployment-epp), "
                   "a hop Gateway (cluster/hop) or a certificate (cluster/certificate). Health checks drop a failing "
                   "cluster from DNS (the trace prints the detection window), endpoint pickers skip dead pods.")
@click.option("--model", "model", metavar="NAME",
              help="With --trace of a hostname several services share: the model name the request's body sends "
                   "(the route is chosen by it; a name no service answers to gets 404).")
@click.option("--engine", type=click.Choice(["direct", "pulumi"]), default="direct", show_default=True,
              help="direct: resources and policies computed in-process, no Pulumi SDK; pulumi: the program under "
                   "Pulumi's mock runtime and the policy pack through the analyzer protocol (what `pulumi preview "
                   "--policy-pack` runs). Both give the same plan; --program always uses pulumi.")
@project_options
def plan(stack, config_file, fmt, as_json, out_dir, report_file, previous, explain, without, repack, program_dir,
         policy_config, hosts, down, model, engine):
    """Plan STACK offline: no cloud, no credentials, no pulumi binary. Exit 0 clean, 1 on a mandatory
    policy violation, 2 on invalid input or usage (nothing planned or written)."""
    fmt = _format_of(fmt, as_json)
    try:
        # the SDK's event loop makes cyclic garbage (futures, tasks): its engine keeps the collector
        with collector_paused() if engine == "direct" and not program_dir else nullcontext():
            try:
                _plan(stack, config_file, fmt, out_dir, report_file, previous, explain, without, repack, program_dir,
                      policy_config, hosts, down, engine, model)
            except SystemExit:
                _ENTRY["plan done"] = True      # exit 1: a verdict, the output written
                raise
            _ENTRY["plan done"] = True
    except InputError as exc:       # PolicyConfigError too
        _refused(exc, fmt, stack)


def _plan(stack, config_file, fmt, out_dir, report_file, previous, explain, without, repack, program_dir,
          policy_config, hosts, down, engine, model=None):
    from .analysis import origins, outcome
    from .output import outdir, report
    from .policy import PackError, with_fixes

    if down and not hosts:
        raise InputError([Problem("--down", ", ".join(down), "--down traces what-ifs, and no --trace HOST is given",
                                  "give the hostname to follow with --trace HOST")])
    prev, policy, checked = _check_inputs(stack, config_file, out_dir, report_file, previous, policy_config,
                                          program_dir)
    if program_dir:
        engine = "pulumi"       # only Pulumi runs a program
    if engine == "pulumi":
        from .policy import Analyzer

        pack = Analyzer(stack=stack)   # the pack starts now and imports while the program runs
    else:
        pack = nullcontext()           # the rules run in-process
    try:
        with pack as gate:
            run, verdicts, (services_before, cost_before), before, policy_file = _plan_and_gate(
                gate, stack, config_file, prev, without, policy, policy_config, program_dir, checked, engine)
    except PackError as exc:
        _pack_failed(exc)
    try:
        explain = _explain_key(run, explain) if explain else None
        traces = _traces(run, hosts, down, model)
        doc = report.document(run, [])
    except BaseException:
        verdicts.abandon()      # the gate's child stopped and reaped before the error goes on
        raise
    located = []

    def located_verdicts() -> dict:
        located[:] = origins.locate(run, checked[0] if checked else None, with_fixes(verdicts.result()))
        return {"violations": located}

    doc["policy"] = report.Later(located_verdicts)     # written last: the gate has until then
    if fmt != "json" or without or previous or repack or explain or traces or report_file:
        try:
            report.settle(doc)
        except PackError as exc:
            _pack_failed(exc)
    violations = located
    if without:
        doc["whatIf"] = report.what_if(without, before, doc, cost_before)
    if previous:
        doc.update(report.changes_against(run, doc, _previous_document(previous), checked[0] if checked else None))
        violations = _with_outages(run, doc, violations, policy, policy_file, checked[0] if checked else None)
    if repack:
        doc["repack"] = report.repack_of(run).to_json()
    if explain and fmt == "json":
        doc["explain"] = _explain_doc(run, explain)
    if traces:
        doc["trace"] = [t.to_json() for t in traces]
    if report_file:
        from .output.fleetreport import render

        page = render(doc)
    if out_dir:
        try:
            n = outdir.write(run, out_dir)
        except OSError as exc:
            raise InputError([Problem(str(out_dir), "--out", f"cannot write: {exc.strerror or exc}",
                                      "choose a folder you can write to")]) from None
        err.print(f"wrote {n} files to {out_dir}", markup=False)
    if report_file:
        try:
            report_file.write_text(page)
        except OSError as exc:
            raise InputError([Problem(str(report_file), "--report", f"cannot write: {exc.strerror or exc}",
                                      "choose a file you can write to")]) from None
        err.print(f"wrote the fleet report to {report_file}", markup=False)
    if fmt == "json":
        try:
            _write_json(doc)
        except PackError as exc:        # a rule failed in the background: the document stops short
            sys.stdout.flush()
            _pack_failed(exc)
        sys.stdout.flush()          # whole before anything said on stderr after it (2>&1 keeps the document whole)
    elif fmt == "markdown":
        from .output import comment

        sys.stdout.write(comment.render(doc, previous.name if previous else None, Path(policy_file).name))
    elif fmt == "sarif":
        from .output import sarif
        from .api.project import current

        others = origins.locate(run, checked[0] if checked else None,
                                outcome.refusals(doc) + outcome.broken_traces(doc))
        sys.stdout.write(report.to_json(sarif.log([], violations + others, current().root)))
    else:
        _print_text(run, doc, violations, policy_file, without, before, services_before, cost_before, repack,
                    previous, explain, traces)
    # A change `up` would refuse: deleting or replacing a protected cluster or pool (docs/changes.md).
    for r in outcome.refusals(doc):
        err.print(f"error: {r['message']}; {r['fix']}", markup=False)
    if outcome.reasons(doc):
        sys.exit(EXIT_VIOLATION)


def _print_text(run, doc, violations, policy_file, without, before, services_before, cost_before, repack, previous,
                explain, traces) -> None:
    """The plan as tables; --explain, --trace and --without print only their answer (and the verdicts)."""
    from .output import tables

    focused = bool(explain or traces or without)
    if not focused:
        if run.result.spec.clusters:
            out.print(tables.cluster_table(run))
        if run.result.spec.deployments:
            out.print(tables.placement_table(doc))
        tables.summary(out, doc, run.result.plan.desired)
        tables.sizing(out, doc)
        if doc["cost"]["replicas"] or doc["cost"]["idle"]["pools"]:
            out.print(tables.cost_table(doc))
            tables.idle_paid(out, doc)
            tables.price_notes(out, doc)
        if doc["services"]:
            out.print(tables.routing_table(doc))
            tables.entry_points(out, doc, run.result.spec.dns is not None)
        tables.catalog_notes(out, run.result.catalog)
    if without:
        out.print(f"what-if without {', '.join(without)}:")
        for p in doc["placements"]:
            was = before.get((p["deployment"], p["replica"]))
            if was != p["cluster"]:
                out.print(f"  moves  {p['deployment']}#{p['replica']}: {was} -> {p['cluster']}")
        for u in doc["unplaced"]:
            if (u["deployment"], u["replica"]) in before:
                out.print(f"  lost   {u['deployment']}#{u['replica']} (was on {before[(u['deployment'], u['replica'])]})")
        tables.traffic_shift(out, services_before, doc["services"])
        tables.cost_shift(out, cost_before, doc["cost"])
    if repack:
        tables.repack(out, doc["repack"], doc["cost"]["stack"]["gpus"]["max"])
    if previous:
        tables.changes(out, doc, previous.name)
    if explain:
        _explain(run, explain)
    if traces:
        from .output.trace import render as trace_lines

        for line in (line for t in traces for line in trace_lines(t)):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
    tables.print_violations(out, violations, Path(policy_file))


def _with_outages(run, doc: dict, violations: list[dict], policy, policy_file, stack_path=None) -> list[dict]:
    """The plan's violations plus the `no-outage` verdicts only `--previous` can see (node pools
    replaced, workloads rolling), in the pack's order, located and with their fix like the others;
    the document's policy section follows."""
    from .analysis import origins
    from .analysis.disruptions import outage_verdicts
    from .policy import read_config, with_fixes

    from .output.report import fleet_runs

    fleet = {u.stack: {d.key: d for d in u.result.spec.deployments} for u in fleet_runs(run, stack_path)} \
        if any("stack" in row for row in doc["disruptions"]) else {}
    extra = outage_verdicts(run, doc["disruptions"], policy if policy is not None else read_config(policy_file), fleet)
    extra = origins.locate(run, stack_path, with_fixes(extra))
    if not extra:
        return violations
    out = sorted(violations + extra, key=lambda v: (v["policy"], v.get("resource", ""), v["message"]))
    doc["policy"]["violations"] = out
    return out


def _pack_failed(exc) -> None:
    """A policy failed to run (a bug in a rule): exit 3. Without its verdicts `--json` cannot finish
    the document, so a large plan's (written while the rules ran, policy/background.py) stops short."""
    err.print(f"[red]error:[/red] the policy pack failed: {exc}", markup=True)
    sys.exit(EXIT_FAILED)


def _traces(run, hosts, down=(), model=None) -> list:
    """Every --trace HOST followed through the plan (as if --down were gone); an unknown host or
    --down name fails before anything is written."""
    if not hosts:
        return []
    from .output.trace import DOWN_FORMS, TraceError, trace

    out = []
    for host in hosts:
        try:
            out.append(trace(run, host, down, model))
        except TraceError as exc:
            raise InputError([Problem("--trace", host, str(exc), "trace a hostname of one of the stack's services "
                                      "(modelplane:services[].hostname); --down names " + DOWN_FORMS)]) from None
    return out


def _operate(operation: str, stacks: tuple[str, ...], env: str | None, backend: str | None, parallel: int,
             policy_config: Path | None) -> None:
    from .automation.console import run_command

    names = [*stacks, *([env] if env else [])]
    if policy_config:       # refused here, before any stack runs, as `plan` refuses it
        from .policy import read_config

        try:
            read_config(policy_config)
        except InputError as exc:
            _refuse(exc)
    if not names:
        _fail(f"name the stacks to {operation}, or an environment with --env ENV (its apps stack and fleet)")
    sys.exit(run_command(operation, names, backend, parallel, policy_config, console=out.rich(), errors=err.rich()))


for _op in ("preview", "up", "destroy", "refresh"):
    def _command(stacks, env, backend, parallel, policy_config, _op=_op):
        _operate(_op, stacks, env, backend, parallel, policy_config)
    _command.__doc__ = (f"Run `pulumi {_op}` through the Automation API for STACKS, or for a whole environment "
                        "(--env: an apps stack plus the infra stacks of its modelplane:fleet); infra first, "
                        f"{'apps first on destroy' if _op == 'destroy' else 'then apps'}. Needs the pulumi CLI.")
    _command = click.argument("stacks", nargs=-1)(_command)
    _command = click.option("--env", help="An apps stack: run it and the infra stacks its fleet names.")(_command)
    _command = click.option("--backend", help="State backend URL (default: PULUMI_BACKEND_URL, else a file "
                            "backend under .pulumi-state/).")(_command)
    _command = click.option("--parallel", default=4, show_default=True, type=click.IntRange(1, 32),
                            help="Stacks run at the same time.")(_command)
    _command = click.option("--policy-config", type=click.Path(path_type=Path, exists=True),
                            help="Policy pack config (the CLI's JSON format) for preview and up.")(_command)
    main.command(name=_op)(project_options(_command))


@main.command()
@click.option("--out", "out_file", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the schema here instead of printing it.")
@click.option("--catalog-dir", type=click.Path(path_type=Path, exists=True),
              help="Your own InferenceClasses (as modelplane:catalogDir): their names join the pool class enum.")
@project_options
def schema(out_file, catalog_dir):
    """Print the JSON Schema of a stack file (for editors: yaml-language-server, and CI); the pool
    class enum holds the package's classes and the project's own."""
    import json

    from .api.loader import catalog_of
    from .sdk.schema import stack_schema

    try:
        catalog = catalog_of({"catalogDir": str(catalog_dir.resolve())} if catalog_dir else {})
    except InputError as exc:
        _refuse(exc)
    text = json.dumps(stack_schema(catalog), indent=2, sort_keys=True) + "\n"
    if out_file is None:
        sys.stdout.write(text)
        return
    try:
        out_file.write_text(text)
    except OSError as exc:
        _fail(f"--out {out_file}: {exc.strerror or exc}")
    err.print(f"wrote the stack file schema to {out_file}", markup=False)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option("--schemas", "extra", multiple=True, type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="Another folder of CRDs / OpenAPI documents, overriding the repository's schemas/.")
@click.option("--allow-unknown", is_flag=True, help="A kind with no schema is not a failure.")
def validate(paths, extra, allow_unknown):
    """Check Kubernetes objects (e.g. a `plan --out` directory) against the upstream schemas in
    schemas/: structure, unknown fields and every CRD's CEL rules. Exit 1 on any failure."""
    import yaml

    from .manifests import SCHEMA_DIR, Catalog, manifest_files, read_documents

    catalog = Catalog([SCHEMA_DIR, *extra])
    failed = 0
    for path in manifest_files(paths):
        try:
            docs = read_documents(path)
        except (yaml.YAMLError, ValueError) as exc:
            out.print(f"FAIL {path}: cannot parse: {exc}", markup=False)
            failed += 1
            continue
        for obj in docs:
            status, line = catalog.report(obj)
            out.print(f"{line} ({path})", markup=False)
            failed += status == "FAIL" or (status == "unknown" and not allow_unknown)
    sys.exit(1 if failed else 0)


@main.command()
@project_options
def classes():
    """List the InferenceClasses: the package's, then the project's catalog/ and --catalog folders."""
    from .api.loader import catalog_of

    try:
        catalog = catalog_of({})
    except InputError as exc:
        _refuse(exc)
    from rich.table import Table

    table = Table(title="InferenceClasses", title_justify="left")
    for col in ("name", "clouds", "machine", "GPU", "count", "fabric", "from"):
        table.add_column(col)
    for name, c in sorted(catalog.classes.items()):
        p = c.provisioning
        machine = (p.gke.machine_type if p and p.gke else p.eks.instance_type if p and p.eks else "-")
        g = c.capabilities.gpu
        table.add_row(name, ",".join(c.clouds()) or "byo", machine, f"{g.product} {g.memory_gib}GB", str(g.count),
                      f"{c.capabilities.network.fabric} {c.capabilities.network.bandwidth_gbps}G",
                      catalog.sources.get(name, "built in"))
    out.print(table)


@main.command()
@click.argument("folder", required=False, type=click.Path(path_type=Path), default=".")
def init(folder):
    """Start a project of your own in FOLDER (default: here; new or empty): Pulumi.yaml, the program's
    entry point, requirements.txt and a dev stack; then `modelplane plan dev` plans it offline."""
    from .scaffold import init as write

    try:
        written = write(folder)
    except InputError as exc:
        _refuse(exc)
    err.print(f"wrote {', '.join(written)} in {folder}", markup=False)
    err.print("next: modelplane plan dev   (edit stacks/Pulumi.dev.yaml: `modelplane classes` lists the GPU "
              "classes; pip install -r requirements.txt into the venv Pulumi.yaml names before `pulumi up`)",
              markup=False)


from .prices.command import prices as _prices  # noqa: E402  (the `prices` command group)

main.add_command(_prices)

from .sizing.command import size as _size  # noqa: E402  (the `size` command)

main.add_command(_size)


if __name__ == "__main__":
    os.environ.setdefault("PULUMI_ERROR_OUTPUT_STRING", "true")
    main()

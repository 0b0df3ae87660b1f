"""Run preview/up/destroy/refresh for one stack of this project through pulumi.automation.

State goes to a local file backend under the project (git-ignored) unless PULUMI_BACKEND_URL
or --backend says otherwise; the passphrase comes from PULUMI_CONFIG_PASSPHRASE(_FILE).
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from ..api.project import current, data_dir

POLICY_PACK = data_dir("policies")
INSTALL_HINT = ("the `pulumi` CLI is not installed: install it (https://www.pulumi.com/docs/install/) "
                "to preview or apply; `modelplane plan STACK` works without it")


class MissingCli(RuntimeError):
    pass


class DriverError(RuntimeError):
    pass


class StackLocked(DriverError):
    """Another update holds the stack's lock (a concurrent `up`, or a crashed one: `pulumi cancel`)."""


def backend_url(explicit: str | None = None) -> str:
    if explicit:
        return explicit
    if os.environ.get("PULUMI_BACKEND_URL"):
        return os.environ["PULUMI_BACKEND_URL"]
    state = current().root / ".pulumi-state"
    state.mkdir(exist_ok=True)
    return f"file://{state}"


def preflight(command=None) -> None:
    """Fail before touching any stack: the CLI must exist and the state's passphrase be set."""
    from pulumi import automation as auto

    if command is None:
        _answers_version()
        try:
            # runs `pulumi version` again and checks it against the SDK's minimum
            # (pulumi/automation/_cmd.py PulumiCommand.__init__, _parse_and_validate_pulumi_version)
            auto.PulumiCommand()
        except FileNotFoundError as exc:
            raise MissingCli(INSTALL_HINT) from exc
        except auto.InvalidVersionError as exc:
            raise MissingCli(_broken(str(exc).splitlines()[0])) from None
    _passphrase()


def _broken(what: str) -> str:
    import shutil

    return (f"the pulumi CLI at {shutil.which('pulumi') or 'pulumi'} does not work: {what}; reinstall it "
            "(https://www.pulumi.com/docs/install/) or put a working one first on PATH; `modelplane plan STACK` "
            "works without it")


def _answers_version() -> None:
    """`pulumi version` with its output captured: a binary that is there but broken is one line of
    ours, not its own output and the SDK's CalledProcessError traceback."""
    import shutil
    import subprocess

    where = shutil.which("pulumi")
    if where is None:
        raise MissingCli(INSTALL_HINT)
    try:
        done = subprocess.run([where, "version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise MissingCli(_broken(f"`pulumi version` could not run ({exc})")) from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise MissingCli(_broken(f"`pulumi version` exited {done.returncode}" + (f" ({said[0]})" if said else "")))


def _passphrase() -> None:
    if not (os.environ.get("PULUMI_CONFIG_PASSPHRASE") or os.environ.get("PULUMI_CONFIG_PASSPHRASE_FILE")):
        raise DriverError("set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) for the state's secrets")


def language_host() -> bool:
    """Whether the CLI can start a Python program itself (pulumi-language-python beside it or on PATH)."""
    if os.environ.get("MODELPLANE_INLINE") == "1":
        return False
    cli = shutil.which("pulumi")
    beside = Path(cli).resolve().parent / "pulumi-language-python" if cli else None
    return bool(shutil.which("pulumi-language-python") or (beside and beside.exists()))


def select_stack(stack: str, backend: str | None = None, command=None):
    """A Stack bound to this project directory (its Pulumi.yaml and stacks/ config dir).

    Without a Python language host the program runs inline, in this process: the Automation API
    serves it to the engine over `--client`, so the same program, config and state take part."""
    from pulumi import automation as auto

    # PULUMI_PYTHON_CMD: the Python that Pulumi's dynamic provider host (the DNS drain, render/
    # drain.py) runs when Pulumi.yaml names no virtualenv (pulumi/pulumi@v3.259.0 sdk/python/dist/
    # pulumi-resource-pulumi-python L13-L49): this one, which has modelplane installed
    env = {"PULUMI_BACKEND_URL": backend_url(backend), "MODELPLANE_PYTHON": sys.executable,
           "PULUMI_PYTHON_CMD": os.environ.get("PULUMI_PYTHON_CMD") or sys.executable}
    _passphrase()
    root = str(current().root)
    opts = auto.LocalWorkspaceOptions(work_dir=root, env_vars=env, pulumi_command=command)
    try:
        if language_host():
            return auto.create_or_select_stack(stack_name=stack, work_dir=root, opts=opts)
        from ..engine import program
        return auto.create_or_select_stack(stack_name=stack, project_name=program.PROJECT,
                                           program=program.main, opts=opts)
    except FileNotFoundError as exc:
        raise MissingCli(INSTALL_HINT) from exc


def policy_pack() -> list[str]:
    """The pack as the engine can start it: the folder through the Python language host, else the
    executable shim beside PulumiPolicy.yaml (policies/analyzer)."""
    if not POLICY_PACK.joinpath("PulumiPolicy.yaml").exists():
        return []
    if language_host():
        return [str(POLICY_PACK)]
    return [str(POLICY_PACK / "analyzer")]


def operate(operation: str, stack: str, backend: str | None = None, on_output=print, command=None,
            on_event=None, policy_config: Path | None = None) -> dict:
    """Run one operation; return its change summary. Raises MissingCli, StackLocked, DriverError.

    The policy pack is attached to preview and up (absolute paths: the CLI runs in the work dir)."""
    from pulumi import automation as auto

    st = select_stack(stack, backend, command)
    packs = policy_pack()
    gate = {"policy_packs": packs}
    if packs and policy_config:
        gate["policy_pack_configs"] = [str(Path(policy_config).resolve())]
    streams = {"on_output": on_output, "on_event": on_event}
    try:
        if operation == "preview":
            return dict(st.preview(**streams, **gate).change_summary or {})
        if operation == "up":
            return dict(st.up(**streams, **gate).summary.resource_changes or {})
        if operation == "refresh":
            return dict(st.refresh(**streams).summary.resource_changes or {})
        if operation == "destroy":
            return dict(st.destroy(**streams).summary.resource_changes or {})
    except auto.ConcurrentUpdateError as exc:
        raise StackLocked(f"stack {stack} is locked by another update ({_first_line(exc)}); "
                          f"wait for it, or run `pulumi cancel --stack {stack}` if it crashed") from None
    except auto.CommandError as exc:
        raise DriverError(f"{operation} of stack {stack} failed: {_first_line(exc)}") from None
    raise ValueError(f"unknown operation {operation!r}")


def _first_line(exc) -> str:
    """The most telling line of a CLI failure: the first `error:` line of stderr, else its first line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    for ln in lines:     # str(CommandError) is " code: N / stdout: ... / stderr: ..." line by line
        at = ln.lower().find("error:")
        if at >= 0:
            return ln[at:]
    return next((ln for ln in lines if not ln.startswith("code:")), "no output")


def stack_runner(backend: str | None = None, command=None, on_output=None, policy_config: Path | None = None):
    """A runner for environment.run: drives one stack and feeds its live progress into the outcome."""
    def runner(operation: str, stack: str, outcome) -> dict:
        def on_event(event):
            pre = getattr(event, "resource_pre_event", None)
            if pre is not None and pre.metadata is not None:
                outcome.current = f"{pre.metadata.op} {pre.metadata.urn.rsplit('::', 1)[-1]}"
            if getattr(event, "res_outputs_event", None) is not None:
                outcome.done += 1
        return operate(operation, stack, backend, on_output or (lambda line: None), command, on_event, policy_config)
    return runner

"""Run preview/up/destroy/refresh for one stack of this project through pulumi.automation.

State goes to a local file backend under the project (git-ignored) unless PULUMI_BACKEND_URL
or --backend says otherwise; the passphrase comes from PULUMI_CONFIG_PASSPHRASE(_FILE).
"""
from __future__ import annotations

import os
from pathlib import Path

from ..api.loader import ROOT

STATE_DIR = ROOT / ".pulumi-state"
POLICY_PACK = ROOT / "policies"
INSTALL_HINT = ("the `pulumi` CLI is not installed: install it (https://www.pulumi.com/docs/install/) "
                "to preview or apply; `modelplane plan STACK` works without it")


class MissingCli(RuntimeError):
    pass


class DriverError(RuntimeError):
    pass


def backend_url(explicit: str | None = None) -> str:
    if explicit:
        return explicit
    if os.environ.get("PULUMI_BACKEND_URL"):
        return os.environ["PULUMI_BACKEND_URL"]
    STATE_DIR.mkdir(exist_ok=True)
    return f"file://{STATE_DIR}"


def select_stack(stack: str, backend: str | None = None, command=None):
    """A Stack bound to this project directory (its Pulumi.yaml and stacks/ config dir)."""
    from pulumi import automation as auto

    env = {"PULUMI_BACKEND_URL": backend_url(backend)}
    if not (os.environ.get("PULUMI_CONFIG_PASSPHRASE") or os.environ.get("PULUMI_CONFIG_PASSPHRASE_FILE")):
        raise DriverError("set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) for the state's secrets")
    opts = auto.LocalWorkspaceOptions(work_dir=str(ROOT), env_vars=env, pulumi_command=command)
    try:
        return auto.create_or_select_stack(stack_name=stack, work_dir=str(ROOT), opts=opts)
    except FileNotFoundError as exc:
        raise MissingCli(INSTALL_HINT) from exc


def operate(operation: str, stack: str, backend: str | None = None, on_output=print, command=None) -> dict:
    """Run one operation; return its change summary. Raises MissingCli, DriverError."""
    from pulumi import automation as auto

    st = select_stack(stack, backend, command)
    packs = [str(POLICY_PACK)] if POLICY_PACK.joinpath("PulumiPolicy.yaml").exists() else []
    try:
        if operation == "preview":
            return dict(st.preview(on_output=on_output, policy_packs=packs).change_summary or {})
        if operation == "up":
            return dict(st.up(on_output=on_output, policy_packs=packs).summary.resource_changes or {})
        if operation == "refresh":
            return dict(st.refresh(on_output=on_output).summary.resource_changes or {})
        if operation == "destroy":
            return dict(st.destroy(on_output=on_output).summary.resource_changes or {})
    except auto.ConcurrentUpdateError as exc:
        raise DriverError(f"stack {stack} is locked by another update: {str(exc).splitlines()[0]}") from None
    except auto.CommandError as exc:
        raise DriverError(f"{operation} of stack {stack} failed:\n{getattr(exc, 'stderr', '') or exc}") from None
    raise ValueError(f"unknown operation {operation!r}")

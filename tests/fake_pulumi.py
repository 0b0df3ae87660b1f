"""A stand-in for the `pulumi` binary behind the Automation API (pulumi-notes section d).

It records every command line, answers the few queries the SDK makes, writes the engine events a
real CLI would (so progress and summaries flow through the real SDK code), and fails or reports a
lock for the stacks it is told to."""
from __future__ import annotations

import json
import threading
import time

import semver
from pulumi import automation as auto
from pulumi.automation.errors import create_command_error


def _stack_of(args):
    return args[args.index("--stack") + 1] if "--stack" in args else None


class FakePulumi(auto.PulumiCommand):
    def __init__(self, fail=(), locked=(), delay=0.0, changes=None):
        self.command = "pulumi"
        self.version = semver.VersionInfo.parse("3.200.0")   # < 3.205: events go to a log file
        self.fail, self.locked, self.delay = set(fail), set(locked), delay
        self.changes = changes or {"create": 3}
        self.calls: list[tuple[str, list[str]]] = []    # (operation, args) in the order they started
        self.active, self.peak = 0, 0
        self._lock = threading.Lock()

    def run(self, args, cwd, additional_env, on_output=None, on_error=None):
        op = next((a for a in args if a in ("preview", "up", "refresh", "destroy")), None)
        stack = _stack_of(args)
        if op is None:
            return self._query(args)
        with self._lock:
            self.calls.append((op, list(args)))
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            time.sleep(self.delay)
            if stack in self.locked | self.fail:
                self._events(args, op, failed=True)
            if stack in self.locked:
                raise create_command_error(auto.CommandResult("", "error: the stack is currently locked by 1 lock(s)", 255))
            if stack in self.fail:
                raise create_command_error(auto.CommandResult("", f"error: {stack}: quota exceeded for nvidia-h200", 255))
            self._events(args, op)
            if on_output:
                on_output(f"{op} {stack} done")
            return auto.CommandResult(f"{op} {stack} done", "", 0)
        finally:
            with self._lock:
                self.active -= 1

    def _events(self, args, op, failed=False):
        if "--event-log" not in args:
            return
        path = args[args.index("--event-log") + 1]
        if failed:
            with open(path, "a") as fh:
                fh.write(json.dumps({"sequence": 1, "timestamp": 0, "cancelEvent": {}}) + "\n")
            return
        events = [{"sequence": 1, "timestamp": 0, "resourcePreEvent": {"metadata": {
            "op": "create", "urn": "urn:pulumi:s::modelplane::modelplane:index:InferenceCluster::c", "type": "x",
            "provider": ""}}},
            {"sequence": 2, "timestamp": 0, "resOutputsEvent": {"metadata": {
                "op": "create", "urn": "urn:pulumi:s::modelplane::modelplane:index:InferenceCluster::c", "type": "x",
                "provider": ""}}},
            {"sequence": 3, "timestamp": 0, "summaryEvent": {
                "maybeCorrupt": False, "durationSeconds": 1, "policyPacks": {},
                "resourceChanges": dict(self.changes) if op != "destroy" else {"delete": 3}}},
            {"sequence": 4, "timestamp": 0, "cancelEvent": {}}]      # the engine's last event
        with open(path, "a") as fh:
            for ev in events:
                fh.write(json.dumps(ev) + "\n")

    def _query(self, args):
        if args[:2] == ["stack", "history"]:
            op = next((o for o, a in reversed(self.calls) if _stack_of(a) == _stack_of(args)), "up")
            return auto.CommandResult(json.dumps([{
                "kind": "destroy" if op == "destroy" else "update", "startTime": "2026-11-22T00:00:00.000Z",
                "endTime": "2026-11-22T00:00:01.000Z", "message": "", "environment": {}, "config": {},
                "result": "succeeded", "version": 2,
                "resourceChanges": {"delete": 3} if op == "destroy" else dict(self.changes)}]), "", 0)
        if args[:2] == ["stack", "output"]:
            return auto.CommandResult("{}", "", 0)
        return auto.CommandResult("", "", 0)

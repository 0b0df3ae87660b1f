"""The DNS drain's provider (render/drain.py): Pulumi's Python dynamic provider host loads it from
the drain's `__provider` input and calls it. Create and update return at once; delete sleeps the
seconds the drain recorded, so the routes after it go only once resolvers dropped the record.
"""
from __future__ import annotations

import time

from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider, UpdateResult

from ..render.drain import PROVIDER_KEY


class DnsDrainProvider(ResourceProvider):
    """`sleep` is the clock (a test passes its own)."""

    serialize_as_secret_always = False

    def __init__(self, sleep=time.sleep):
        super().__init__()
        self.sleep = sleep

    def create(self, props: dict) -> CreateResult:
        return CreateResult(f"{props['hostname']}/{props['cluster']}", _outs(props))

    def diff(self, _id: str, olds: dict, news: dict) -> DiffResult:
        # `__provider` counts too: a new text updates the state's, which the delete loads
        changed = any(olds.get(k) != news.get(k) for k in set(olds) | set(news))
        return DiffResult(changes=changed, replaces=[], delete_before_replace=False)

    def update(self, _id: str, _olds: dict, news: dict) -> UpdateResult:
        return UpdateResult(_outs(news))

    def delete(self, _id: str, props: dict) -> None:
        # props: the state's, so the TTL the record was served with, not a newer one
        self.sleep(float(props.get("seconds") or 0))


def _outs(props: dict) -> dict:
    return {k: v for k, v in props.items() if k != PROVIDER_KEY}

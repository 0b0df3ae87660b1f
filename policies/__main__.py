"""modelplane CrossGuard pack: `pulumi preview --policy-pack policies`."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack, ResourceValidationPolicy  # noqa: E402

import rules  # noqa: E402


def _resource_policy(name, description, check):
    def validate(args, report_violation):
        for message in check(args.resource_type, dict(args.props)):
            report_violation(message)
    return ResourceValidationPolicy(name=name, description=description, validate=validate)


PolicyPack(name="modelplane", enforcement_level=EnforcementLevel.MANDATORY, policies=[
    _resource_policy(name, (check.__doc__ or name).strip().splitlines()[0], check)
    for name, check in sorted(rules.RESOURCE_RULES.items())
])

"""modelplane CrossGuard pack: `pulumi preview --policy-pack policies`.

The rules live in modelplane.policy (one definition for this pack, `modelplane plan` and tests).
"""
import os
import sys
from pathlib import Path

# In a checkout the package sits beside this folder; an installed modelplane carries this pack as
# modelplane/_data/policies and is importable already.
if (Path(__file__).resolve().parent.parent / "modelplane").is_dir():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import (EnforcementLevel, PolicyConfigSchema, PolicyPack,  # noqa: E402
                           ResourceValidationPolicy, StackValidationPolicy)

from modelplane.policy import POLICIES, memo  # noqa: E402

if os.environ.get("MODELPLANE_PACK_MEMO", "1") != "0":     # off only to compare verdicts in tests
    memo.install()

LEVEL = {"advisory": EnforcementLevel.ADVISORY, "mandatory": EnforcementLevel.MANDATORY,
         "disabled": EnforcementLevel.DISABLED}


def _resource(p):
    def validate(args, report_violation):
        for message in p.check(args.resource_type, args.props, args.get_config()):
            report_violation(message)
    return ResourceValidationPolicy(name=p.name, description=p.description, validate=validate,
                                    enforcement_level=LEVEL[p.level],
                                    config_schema=PolicyConfigSchema(properties=p.config) if p.config else None)


def _stack(p):
    def validate(args, report_violation):
        for message, urn in p.check(args.resources, args.get_config()):
            report_violation(message, urn)
    return StackValidationPolicy(name=p.name, description=p.description, validate=validate,
                                 enforcement_level=LEVEL[p.level],
                                 config_schema=PolicyConfigSchema(properties=p.config) if p.config else None)


PolicyPack(name="modelplane", enforcement_level=EnforcementLevel.MANDATORY,
           policies=[_resource(p) if p.kind == "resource" else _stack(p) for _, p in sorted(POLICIES.items())])

"""The pack uses the rules defined once in modelplane.policy."""
from modelplane.policy import RESOURCE_RULES, gpu_pool_tainted_and_labelled, kai_wired  # noqa: F401

"""Pure federation scheduler: Filter -> Score -> Bind over the fleet, sticky and explainable."""
from .cel import CelError, Matcher
from .core import DemandError, schedule
from .model import (CAPACITY, CLUSTER_SELECTOR, CO_LOCATION, DISK, DOMAIN, FABRIC, MEMORY, NODE_SELECTOR, QUEUE, SHAPE,
                    Cluster,
                    Demand, Move, Placement, Plan, Pool, Rejection, Role, RolePlacement, Unplaced)
from .ratio import RatioError, allocate

__all__ = ["CAPACITY", "CLUSTER_SELECTOR", "CO_LOCATION", "DISK", "DOMAIN", "FABRIC", "MEMORY", "NODE_SELECTOR", "QUEUE", "SHAPE", "CelError", "Cluster",
           "Demand", "DemandError", "Matcher", "Move", "Placement", "Plan", "Pool", "RatioError", "Rejection",
           "Role", "RolePlacement", "Unplaced", "allocate", "schedule"]

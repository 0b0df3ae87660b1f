"""CP-SAT without its Python modelling layer: the exact phase's model written as the solver's own
CpModelProto and solved through OR-Tools' C++ wrapper (cp_model_helper.SolveWrapper, which
`cp_model.CpSolver` calls). `ortools.sat.python.cp_model` imports numpy and pandas for features
this model does not use: 0.6 s of the first plan in a process that runs the exact phase, a third
of its budget at 100 clusters.

The proto is the one cp_model writes for the same calls, so the solver gets the same model: a
linear expression's terms merged per variable, in variable order, zero coefficients dropped; a
maximised objective negated with scaling factor -1 (OR-Tools 9.12, cp_model.py CpModel.add and
_set_objective). tests/test_exact.py compares the bytes with cp_model's. Variables are indices.
"""
from __future__ import annotations

INT_MIN, INT_MAX = -2 ** 63, 2 ** 63 - 1
OPTIMAL, FEASIBLE = 4, 2          # cp_model_pb2.CpSolverStatus


def flat(terms) -> tuple[list[int], list[int]]:
    """(variables, coefficients) of a sum of (coefficient, variable) terms, as cp_model flattens it."""
    acc: dict[int, int] = {}
    for c, v in terms:
        acc[v] = acc.get(v, 0) + c
    order = sorted(v for v, c in acc.items() if c)
    return order, [acc[v] for v in order]


def value(terms, solution) -> int:
    """A sum of (coefficient, variable) terms at a solution (exact: Python integers)."""
    return sum(c * solution[v] for c, v in terms)


class Model:
    def __init__(self):
        from ortools.sat import cp_model_pb2

        self.proto = cp_model_pb2.CpModelProto()

    def var(self, lb: int, ub: int, name: str) -> int:
        v = self.proto.variables.add()
        v.name = name
        v.domain.extend((lb, ub))
        return len(self.proto.variables) - 1

    def add(self, terms, lb: int = INT_MIN, ub: int = INT_MAX) -> None:
        """lb <= sum of (coefficient, variable) terms <= ub."""
        variables, coeffs = flat(terms)
        linear = self.proto.constraints.add().linear
        linear.vars.extend(variables)
        linear.coeffs.extend(coeffs)
        linear.domain.extend((lb, ub))

    def objective(self, terms, maximize: bool) -> None:
        self.proto.ClearField("objective")
        self.proto.ClearField("floating_point_objective")
        variables, coeffs = flat(terms)
        objective = self.proto.objective
        objective.vars.extend(variables)
        objective.scaling_factor = -1.0 if maximize else 1.0
        objective.coeffs.extend([-c for c in coeffs] if maximize else coeffs)

    def hint(self, variables, values) -> None:
        self.proto.ClearField("solution_hint")
        if variables:
            self.proto.solution_hint.vars.extend(variables)
            self.proto.solution_hint.values.extend(int(v) for v in values)

    def solve(self, parameters) -> tuple[int, list[int]]:
        """(status, value per variable) under `parameters` (a SatParameters)."""
        from ortools.sat.python import cp_model_helper

        wrapper = cp_model_helper.SolveWrapper()
        wrapper.set_parameters(parameters)
        response = wrapper.solve_and_return_response_wrapper(self.proto)
        return int(response.status()), list(response.response().solution)


def parameters(**fields):
    from ortools.sat import sat_parameters_pb2

    return sat_parameters_pb2.SatParameters(**fields)

"""Minimize failures into the smallest case that is still the same bug (see minimizer.py)."""

from fuzzharness.minimize.minimizer import DEFAULT_BUDGET, MinimizeResult, minimize

__all__ = ["DEFAULT_BUDGET", "MinimizeResult", "minimize"]

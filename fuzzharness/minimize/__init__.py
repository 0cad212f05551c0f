"""Minimize failures into the smallest case that is still the same bug (see minimizer.py).

This package's ``__init__`` stays light (the CLI reads :data:`DEFAULT_BUDGET` for its
``--help`` without loading the minimizer, Hypothesis and the generators)."""

DEFAULT_BUDGET = 120.0  # seconds of minimization per bucket

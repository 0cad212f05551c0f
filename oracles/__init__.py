"""Oracles: float64 references, dtype-aware error bounds and comparisons."""

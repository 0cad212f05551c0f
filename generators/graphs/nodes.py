"""The parts of a graph spec that its operators see: a node, a shape, and the error a spec
that violates the model raises (the graph itself is :mod:`fuzzharness.generators.graphs.spec`,
which uses the operators for shape inference)."""

from __future__ import annotations

import dataclasses
from typing import Any

Shape = tuple[int, ...]


class InvalidGraph(ValueError):
    """A graph spec that violates the model (a generator or minimizer bug, or a bad file)."""


@dataclasses.dataclass
class Node:
    name: str
    op: str
    args: list[str]
    attrs: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "op": self.op, "args": list(self.args), "attrs": self.attrs}

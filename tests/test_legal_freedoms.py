"""TVM's legal freedoms are never findings; the faults next to them still are.

A compiler may sum a reduction in another order, in per-lane partial sums, or keep a wider
accumulator (``fuzzharness/testing/legal_freedoms.py`` builds such kernels with TVM from the
declared program, as a TVM release lowering it that way would).  Their outputs differ from
the declared arithmetic bit for bit — each test checks that first, so that passing means
something — yet every verdict must be a pass or a note (``order_preserving_divergence``, the
same-order check alone disagreeing), never a finding.  Next to them, a kernel that drops a
term or narrows its accumulator (``fuzzharness/testing/injected_faults.py``) with the same shapes,
inputs and schedule must still fail.
"""

from __future__ import annotations

import pytest

import fuzzharness.testing.injected_faults  # noqa: F401  (registers the fault workloads)
import fuzzharness.testing.legal_freedoms as legal
from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Status
from fuzzharness.execution.stages import execute

LEGAL = (Status.PASS, Status.ORDER_PRESERVING_DIVERGENCE)


def case(workload, params, dist="normal", seed=5):
    return Case(workload={"name": workload, "params": params},
                inputs={"distribution": dist, "seed": seed},
                schedule={"source": "test", "trace": None}, target={"kind": "llvm"},
                oracle={"mode": "bound"})


@pytest.mark.parametrize("freedom, base, params", [
    ("reversed", "matmul", {"M": 8, "N": 8, "K": 64, "dtype": "float16"}),
    ("reversed", "row_sum", {"M": 16, "N": 200, "dtype": "float32"}),
    ("wide", "matmul", {"M": 8, "N": 8, "K": 64, "dtype": "float16"}),
    ("wide", "softmax", {"B": 1, "M": 8, "N": 96, "dtype": "float16"}),
    ("lanes", "row_sum", {"M": 16, "N": 256, "dtype": "float32"}),
    ("lanes", "layer_norm", {"B": 1, "M": 8, "N": 64, "dtype": "float32"}),
])
def test_a_legal_lowering_changes_the_bits_and_is_never_a_finding(freedom, base, params):
    plain = execute(case(base, params)).verdict
    lowered = execute(case(legal.workload_name(freedom, base), params)).verdict
    assert plain.status is Status.PASS, plain.line()
    assert lowered.digest != plain.digest, "the freedom must change the output bits"
    assert lowered.status in LEGAL, lowered.line()
    if lowered.status is Status.ORDER_PRESERVING_DIVERGENCE:
        assert lowered.details["note_by"] == "emulation, same order (first run)"
        assert "decided_by" not in lowered.details
        assert "a legal summation order or wider accumulator" in lowered.message


@pytest.mark.parametrize("fault, params, decided", [
    # within the bound on float inputs: only the exact run's order-independent elements see it
    ("fault_dropped_term", {"M": 8, "N": 8, "K": 256, "dtype": "float16"}, "emulation (second run)"),
    ("fault_narrowed_accumulator", {"M": 8, "N": 8, "K": 64, "dtype": "float16-acc32"},
     "bound (first run)"),
])
def test_a_dropped_term_or_a_narrowed_accumulator_still_fails(fault, params, decided):
    v = execute(case(fault, params)).verdict
    assert v.status is Status.WRONG_RESULT, v.line()
    assert v.details["decided_by"] == decided

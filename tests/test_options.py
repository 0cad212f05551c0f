"""Compiler options: only CPU variants the host runs; every option compiles and agrees."""

import numpy as np
import pytest

from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Status
from fuzzharness.execution.stages import execute
from fuzzharness.generators import draw as draws
from fuzzharness.generators import options

CANDIDATE_CPUS = ("x86-64-v4", "sapphirerapids", "graniterapids", "znver5", "alderlake",
                  "diamondrapids", "cannonlake")


def test_resolved_tiers_never_exceed_the_host():
    for tier in options.TIERS:
        mcpu = options.resolve_tier(tier)
        assert options.host_lacks(mcpu) is None, (tier, mcpu, options.host_lacks(mcpu))


def test_a_cpu_the_host_lacks_is_recognised():
    lacking = [c for c in CANDIDATE_CPUS if options.host_lacks(c)]
    if not lacking:
        pytest.skip("this host has every feature of every candidate CPU")
    assert "lacks" in options.host_lacks(lacking[0])


def test_drawn_options_are_the_same_draws_whatever_the_share():
    """The share of option cases changes no draw: the rest of the case stays put."""
    for i in range(20):
        a, b = draws.for_case(1, i), draws.for_case(1, i)
        options.draw_options(a, {"kind": "llvm"}, 0.0)
        options.draw_options(b, {"kind": "llvm"}, 1.0)
        assert a.choices == b.choices


def matmul_case(target, pass_config, dist="uniform", oracle="bound"):
    from tests.test_execute import split_reorder_trace

    params = {"M": 9, "N": 13, "K": 70, "dtype": "float16-acc32"}
    return Case(workload={"name": "matmul", "params": params},
                inputs={"distribution": dist, "seed": 2},
                schedule={"source": "test", "trace": split_reorder_trace("matmul", params)},
                target=target, pass_config=pass_config, oracle={"mode": oracle})


def variants():
    out = [({"kind": "llvm"}, {})]
    for tier in options.TIERS:
        mcpu = options.resolve_tier(tier)
        if mcpu:
            out.append(({"kind": "llvm", "mcpu": mcpu}, {}))
    out += [({"kind": "llvm", "mattr": list(m)}, {}) for m in options.MATTRS if m]
    out += [({"kind": "llvm"}, cfg) for _, cfg in options.PASS_CONFIGS]
    out += [({"kind": "llvm"}, {"tirx.UnrollLoop": {"auto_max_step": s, "explicit_unroll": e}})
            for s in options.UNROLL_STEPS for e in (False, True)]
    return out


@pytest.mark.slow
def test_every_option_compiles_and_agrees():
    """Same program, every option: each passes against the reference; in the exact-integer
    mode every variant gives the same bits."""
    digests = set()
    for target, cfg in variants():
        v = execute(matmul_case(target, cfg)).verdict
        assert v.status is Status.PASS, (target, cfg, v.line())
        exact = execute(matmul_case(target, cfg, "small_ints", "exact"))
        assert exact.verdict.status is Status.PASS, (target, cfg, exact.verdict.line())
        digests.add(exact.verdict.digest)
        assert np.isfinite(v.ratio)
    assert len(digests) == 1

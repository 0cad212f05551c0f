"""Targets in one campaign (generators/targets.py): the per-index choice, its determinism,
and the default campaign's mix decided by the OpenCL runtimes this machine has."""

from __future__ import annotations

import os
from collections import Counter

import pytest

from fuzzharness.generators.cases import TARGET_PRESETS, GenSettings, generate_case
from fuzzharness.generators.targets import choose, label, parse
from tests.conftest import run_cli

MIX = (TARGET_PRESETS["llvm"], TARGET_PRESETS["opencl"], TARGET_PRESETS["adreno"])


def test_labels_and_parse():
    assert [label(t) for t in parse("llvm, opencl,adreno")] == ["llvm", "opencl", "adreno"]
    assert label({"kind": "llvm", "mcpu": "x86-64-v3"}) == "llvm"
    with pytest.raises(ValueError, match="unknown target 'vulkan9'"):
        parse("llvm,vulkan9")


def test_choice_is_per_index_deterministic_and_follows_the_shares():
    picks = [label(choose(MIX, (0.7, 0.1, 0.2), 3, i)) for i in range(2000)]
    assert picks == [label(choose(MIX, (0.7, 0.1, 0.2), 3, i)) for i in range(2000)]
    counts = Counter(picks)
    assert 0.65 < counts["llvm"] / 2000 < 0.75 and 0.16 < counts["adreno"] / 2000 < 0.24
    assert picks != [label(choose(MIX, (0.7, 0.1, 0.2), 4, i)) for i in range(2000)]
    assert {label(choose(MIX, (1, 0, 0), 3, i)) for i in range(200)} == {"llvm"}


def test_a_mixed_campaigns_llvm_case_is_the_llvm_campaigns_case():
    """Same choices, same id: the mix does not reshuffle what a target's cases are."""
    mixed = GenSettings(targets=MIX, target_shares=(0.5, 0.25, 0.25), graph_fraction=0)
    alone = GenSettings(graph_fraction=0)
    seen = Counter()
    def draw(settings, i):
        try:
            return generate_case(11, i, settings).id
        except Exception as e:  # noqa: BLE001 - TVM failing while the schedule is drawn
            return f"{type(e).__name__}: {e}"

    for i in range(12):
        target = mixed.at(11, i).target
        seen[label(target)] += 1
        one = alone if label(target) == "llvm" else GenSettings(target=target, graph_fraction=0)
        assert draw(mixed, i) == draw(one, i)
    assert seen["llvm"] and len(seen) >= 2


def test_settings_validate_the_mix():
    with pytest.raises(ValueError, match="target_shares"):
        GenSettings(targets=MIX, target_shares=(1.0,)).validate()
    s = GenSettings.from_dict(GenSettings(targets=MIX, target_shares=(1, 1, 1)).to_dict())
    assert s.targets == MIX and s.at(0, 0).targets is None


@pytest.mark.slow
def test_default_campaign_targets_follow_the_opencl_runtime(tmp_path):
    """With an OpenCL runtime the default campaign mixes OpenCL and Adreno in and says so;
    with none (an ICD vendors folder without drivers) it is llvm only and says why."""
    pytest.importorskip("pyopencl")
    from fuzzharness.backends import backends

    if backends["opencl"].unavailable(TARGET_PRESETS["opencl"]):
        pytest.skip("no OpenCL runtime here (pip install -e '.[opencl]' brings one)")
    args = ("run", "--seed", "5", "--max-cases", "6", "--workers", "1", "--no-progress",
            "--graph-fraction", "0")
    r = run_cli(*args, "--out", tmp_path / "with")
    assert r.returncode in (0, 1), r.stderr
    assert "targets llvm 55 %, opencl 10 %, adreno 35 %" in r.stderr
    assert "an OpenCL runtime is here" in r.stderr
    empty = tmp_path / "no-vendors"
    empty.mkdir()
    # no system driver, and the pip-installed runtime's discovery off: no runtime at all
    env = {**os.environ, "OCL_ICD_VENDORS": str(empty), "FUZZHARNESS_OPENCL_ICD": "0"}
    env.pop("FUZZHARNESS_OPENCL_ICD_DIR", None)
    r = run_cli(*args, "--out", tmp_path / "without", env=env)
    assert r.returncode in (0, 1), r.stderr
    assert "target llvm" in r.stderr and "llvm only: no OpenCL" in r.stderr
    r = run_cli(*args, "--out", tmp_path / "named", "--target", "llvm,adreno", env=None)
    assert r.returncode in (0, 1), r.stderr
    assert "targets llvm 50 %, adreno 50 %" in r.stderr

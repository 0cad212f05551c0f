"""The OpenCL runtime the `opencl` extra installs (Intel's CPU runtime from PyPI) is found by
the harness itself: no apt, no exported variable.  Both sides: with the discovery on, a fresh
process with no system vendors sees Intel's device with fp16 and images; switched off
(FUZZHARNESS_OPENCL_ICD=0), the same process finds no platform and says how to get one."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from tests.conftest import need

PROBE = ("from fuzzharness.backends.opencl import device_descriptions\n"
         "print('\\n'.join(device_descriptions()))\n")


def _probe(tmp_path, **env) -> str:
    (tmp_path / "vendors").mkdir(exist_ok=True)  # no system runtime: only what pip installed
    e = {k: v for k, v in os.environ.items() if k not in ("OCL_ICD_VENDORS", "FUZZHARNESS_OPENCL_ICD_DIR")}
    e.update(OCL_ICD_VENDORS=str(tmp_path / "vendors"), FUZZHARNESS_CACHE=str(tmp_path / "cache"), **env)
    p = subprocess.run([sys.executable, "-c", PROBE], env=e, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.skipif(not (sys.platform == "linux" and platform.machine() == "x86_64"),
                    reason="Intel's CPU runtime wheels are for x86-64 Linux")
def test_the_pip_installed_runtime_is_found_without_set_up(tmp_path):
    from fuzzharness.backends.opencl_runtime import pip_runtimes

    need(None if any(p.is_relative_to(sys.prefix) for p in pip_runtimes())
         else "intel-opencl-rt is not installed here (pip install -e '.[opencl]')")
    found = _probe(tmp_path)
    assert "Intel(R) OpenCL" in found and "fp16: True, images: True" in found, found
    off = _probe(tmp_path, FUZZHARNESS_OPENCL_ICD="0")
    assert "Intel(R) OpenCL" not in off and "no OpenCL platform" in off and "[opencl]" in off, off

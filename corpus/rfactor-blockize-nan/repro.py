#!/usr/bin/env python3
"""[Bug] [TIR] nan/inf in the output after blockize, rfactor: matmul (K=1, M=1, N=1, float32, llvm)

Bucket  ab29130a02501144, found as bucket 9a4164a79851724e
        this case: nan_inf@verify [matmul float32] blockize+rfactor
TVM 0.27.0.post1 · tvm-ffi 0.1.14.post1 · LLVM 22 · numpy 2.4.6 · Python 3.11.7
Target  {"kind": "llvm"} · PassContext config {}
Written 2026-11-21 by tvm-fuzzharness 0.1.0 (case 156a9a2a71484140, minimized from 429a7db443eb30cd)
Expects nan/inf where the float64 reference is finite

Needs only tvm and numpy:  python repro.py
Exit status: 1 = the bug reproduces, 0 = fixed (a correct result, or TVM now refuses the
schedule with a ScheduleError), 2 = something else happened.  Compiling and running
happen in a child process, so a crash of TVM is reported rather than fatal.
"""


import json
import os
import re
import signal
import subprocess
import sys
import tempfile

import numpy as np
import tvm
from tvm import s_tir
from tvm.script import tirx as T


TARGET = {'kind': 'llvm'}
PASS_CONFIG = {}
TIMEOUT = 300  # seconds for the child process
# what tvm-fuzzharness saw: nan_inf        stage=verify  error/bound=inf  worst=C[0, 0]  C[0, 0] = nan where the reference is 1.0
EXPECT = {'symptom': 'nan_inf', 'stage': 'verify', 'compare': 'reference', 'summary': 'nan/inf where the float64 reference is finite'}


# -- the program, unscheduled --------------------------------------------------------------
@T.prim_func(s_tir=True)
def main(A: T.Buffer((1, 1), "float32"), B: T.Buffer((1, 1), "float32"),
         C: T.Buffer((1, 1), "float32")):
    for i, j, k in T.grid(1, 1, 1):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + T.Cast("float32", A[vi, vk]) * T.Cast("float32", B[vk, vj])


# -- the schedule -------------------------------------------------------------------------
def schedule(sch):
    b0 = sch.get_sblock(name="C", func_name="main")
    l1, l2, l3 = sch.get_loops(block=b0)
    b4 = sch.rfactor(loop=l3, factor_axis=0)
    b5 = sch.get_sblock(name="C_rf", func_name="main")
    b6 = sch.blockize(target=[b5, b0], preserve_unit_iters=False)


# -- inputs and the float64 reference ----------------------------------------------------
INPUTS = ['A', 'B']  # kernel parameters: these, then OUTPUTS
OUTPUTS = {'C': ((1, 1), 'float32')}  # name: (shape, dtype)


def make_inputs():
    A = np.full((1, 1), 1, dtype='float32')
    B = np.full((1, 1), 1, dtype='float32')
    return {'A': A, 'B': B}


def reference(x):
    """float64 value and per-element error bound of every output."""
    A = x['A'].astype(np.float64)
    B = x['B'].astype(np.float64)
    value = A @ B
    # exact-integer inputs: every partial sum is an integer small enough to be exact in
    # the float32 accumulator, so any summation order gives exactly this value: bound 0
    bound = np.zeros_like(value)
    C_expected = (value, bound)
    return {'C': C_expected}



# every parameter keeps its layout (no transform_layout of a parameter in the schedule)
def to_kernel(name, array):
    return array


def from_kernel(name, array):
    return array


def kernel_shape(name, shape):
    return shape


# -- compile and run: in a child process, so that a crash of TVM is reported, not fatal ------
def _stage(name):
    print(f"[repro] stage: {name}", file=sys.stderr, flush=True)


def _poison(shape, dtype):
    """Output buffers start as nan (or the lowest integer): unwritten elements show."""
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.integer):
        return np.full(shape, np.iinfo(dtype).min, dtype=dtype)
    return np.full(shape, np.nan, dtype=dtype)


def compile_and_run(x, scheduled=True):
    _stage("schedule")
    sch = s_tir.Schedule(main)
    if scheduled:
        schedule(sch)
    _stage("compile")
    with tvm.transform.PassContext(opt_level=3, config=PASS_CONFIG):
        lib = tvm.compile(sch.mod, target=TARGET)
    _stage("build")
    kernel = lib["main"]  # the LLVM JIT compiles here
    _stage("run")
    args = [tvm.runtime.tensor(to_kernel(name, x[name])) for name in INPUTS]
    outs = [tvm.runtime.tensor(_poison(kernel_shape(name, shape), dtype))
            for name, (shape, dtype) in OUTPUTS.items()]
    kernel(*args, *outs)
    return {name: from_kernel(name, out.numpy()) for name, out in zip(OUTPUTS, outs)}


def _child(path):
    x = make_inputs()
    result = {"out_" + k: v for k, v in compile_and_run(x).items()}
    if EXPECT["compare"] == "unscheduled":
        result.update({"base_" + k: v for k, v in compile_and_run(x, scheduled=False).items()})
    np.savez(path, **result)
    _stage("done")


# -- judge ----------------------------------------------------------------------------------
def _judge(outputs, expected):
    """(worst error/bound ratio, message, failed) over all outputs; bound 0 = bitwise equal."""
    worst, message, failed = 0.0, None, False
    for name, (value, bound) in expected.items():
        got = np.asarray(outputs[name]).astype(np.float64)
        judged = np.isfinite(bound)
        bad = judged & np.isfinite(value) & ~np.isfinite(got)
        if bad.any():
            i = tuple(int(v) for v in np.argwhere(bad)[0])
            return np.inf, (f"{name}{list(i)} = {float(got[i])!r} where the float64 reference is "
                            f"{float(value[i])!r}"), True
        special = judged & ~np.isfinite(value) & ~((np.isnan(value) & np.isnan(got)) | (value == got))
        if special.any():
            i = tuple(int(v) for v in np.argwhere(special)[0])
            return np.inf, (f"{name}{list(i)} = {float(got[i])!r} where IEEE arithmetic gives "
                            f"{float(value[i])!r}"), True
        err = np.where(judged & np.isfinite(value), np.abs(got - np.where(np.isfinite(value), value, 0)), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(bound > 0, err / bound, np.where(err > 0, np.inf, 0.0))
        ratio = np.where(judged, ratio, 0.0)
        if ratio.size and (message is None or ratio.max() > worst):
            i = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
            worst = float(ratio[i])
            message = (f"{name}{[int(v) for v in i]}: got {float(got[i])!r}, expected "
                       f"{float(value[i])!r} "
                       f"(float64 reference), |error| {err[i]:.6g}, bound {bound[i]:.6g}, "
                       f"error/bound {worst:.6g}")
            failed = failed or worst > 1.0
    return worst, message or "no output elements", failed


def _exception_lines(log):
    """Where TVM threw (its C++ frame, if any) and the exception's own lines."""
    lines = [ln for ln in log.splitlines() if ln.strip()]
    frames = [i for i, ln in enumerate(lines) if ln.lstrip().startswith('File "')]
    if not frames:
        return lines[-12:]
    native = [lines[i] for i in frames if ".cc\"" in lines[i] or ".h\"" in lines[i]]
    return (native[-1:] + lines[frames[-1] + 1:])[-12:]


def _signal_name(code):
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def check():
    """Run the child, judge what happened; return the exit status (see the docstring)."""
    print(f"TVM {tvm.__version__}, target {json.dumps(TARGET)}, "
          f"pass config {json.dumps(PASS_CONFIG)}")
    print(f"expecting: {EXPECT['summary']}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "outputs.npz")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", path]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired as e:
            err = (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
            stage = ([ln.split(": ", 1)[1] for ln in err.splitlines() if ln.startswith("[repro] stage: ")] or ["?"])[-1]
            print(f"actual:    no result within {TIMEOUT} s (stage {stage}): a hang")
            return 1 if EXPECT["symptom"] == "timeout" else 2
        stages = [ln.split(": ", 1)[1] for ln in proc.stderr.splitlines() if ln.startswith("[repro] stage: ")]
        stage = stages[-1] if stages else "?"
        log = "\n".join(ln for ln in proc.stderr.splitlines() if not ln.startswith("[repro] stage: "))
        if proc.returncode < 0:
            name = _signal_name(proc.returncode)
            print(f"actual:    the process died with {name} in stage {stage}")
            print("\n".join(log.splitlines()[-15:]))
            same = EXPECT["symptom"] == "crash" and EXPECT.get("signal") in (None, name)
            return 1 if same else 2
        if proc.returncode != 0 or stage != "done":
            print(f"actual:    an exception in stage {stage}:")
            print("\n".join(_exception_lines(log)))
            if EXPECT.get("error") and re.search(EXPECT["error"], log):
                return 1
            if stage == "schedule" and "ScheduleError" in log:
                print("TVM now refuses this schedule with a ScheduleError: counted as fixed")
                return 0
            return 2
        with np.load(path) as data:
            outputs = {k[4:]: data[k] for k in data.files if k.startswith("out_")}
            base = {k[5:]: data[k] for k in data.files if k.startswith("base_")}
    if EXPECT["compare"] == "unscheduled":
        differ = [n for n in outputs if outputs[n].tobytes() != base[n].tobytes()]
        print("actual:    " + (f"outputs {differ} differ from the unscheduled program's bits"
                               if differ else "the same bits as the unscheduled program"))
        return 1 if differ else 0
    worst, message, failed = _judge(outputs, reference(make_inputs()))
    print(f"actual:    {message}")
    if failed:
        return 1 if EXPECT["symptom"] in ("wrong_result", "nan_inf") else 2
    print("the output is correct" + ("" if EXPECT["symptom"] in ("wrong_result", "nan_inf")
                                     else f" (expected a {EXPECT['symptom']})"))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2])
        sys.exit(0)
    status = check()
    print({1: "RESULT: the bug reproduces (exit 1)", 0: "RESULT: fixed (exit 0)",
           2: "RESULT: something else happened (exit 2)"}[status])
    sys.exit(status)

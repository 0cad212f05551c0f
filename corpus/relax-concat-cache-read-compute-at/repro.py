#!/usr/bin/env python3
"""[Bug] [Relax] Wrong result after cache_read, compute_at, software_pipeline: Relax graph (concat, max; float16, llvm, random mode)

Bucket  a1dcdf2057dbb4be
TVM 0.27.0.post1 · tvm-ffi 0.1.14.post1 · LLVM 22 · numpy 2.4.6 · Python 3.11.7
Target  {"kind": "llvm"} · PassContext config {}
Mode    graph:random
Written by tvm-fuzzharness 0.1.0 (case 8fd23b34b98587a8, minimized from cd1f8ab8fbd2edeb)
Expects an output element farther from the float64 reference than its error bound

Needs only tvm and numpy:  python repro.py
Exit status: 1 = the bug reproduces, 0 = fixed (a correct result), 2 = something else
happened.  Compiling and running happen in a child process, so a crash of TVM is
reported rather than fatal.
"""


import base64
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import tvm
from tvm import relax, s_tir
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T


TARGET = {'kind': 'llvm'}
PASS_CONFIG = {}
MODE = 'graph:random'
LAYOUT = None  # ConvertLayout desired (data, kernel) layouts of conv2d
TIMEOUT = 300  # seconds for the child process
# what tvm-fuzzharness saw: wrong_result   stage=verify  error/bound=inf  worst=n2[1, 0, 0, 0]  n2[1, 0, 0, 0]: got 0.779296875, reference 1.0, |error| 0.221 vs bound 0 (graph/max/exact-int)
EXPECT = {'symptom': 'wrong_result', 'stage': 'verify', 'summary': 'an output element farther from the float64 reference than its error bound'}
OUTPUTS = ['n2']  # in the order main returns them


# -- the graph, as Relax TVMScript ---------------------------------------------------------

@I.ir_module
class Module:
    @R.function
    def main(x0: R.Tensor((1, 1, 1, 1), dtype="float16"), y0: R.Tensor((1, 1, 1, 1), dtype="float16"), y1: R.Tensor((3, 1, 1, 1), dtype="float16")) -> R.Tensor((3, 1, 1, 1), dtype="float16"):
        with R.dataflow():
            n0: R.Tensor((3, 1, 1, 1), dtype="float16") = R.concat((x0, y0, y0), axis=0)
            n2: R.Tensor((3, 1, 1, 1), dtype="float16") = R.maximum(y1, n0)
            gv: R.Tensor((3, 1, 1, 1), dtype="float16") = n2
            R.output(gv)
        return gv


# -- schedules of the fused PrimFuncs ----------------------------------------------------
def schedule_0(sch):  # fused_concatenate_maximum
    b0 = sch.get_sblock(name="T_concat", func_name="main")
    l1, l2, l3, l4 = sch.get_loops(block=b0)
    b5 = sch.cache_read(block=b0, read_buffer_index=0, storage_scope="global")
    sch.compute_at(block=b5, loop=l1, preserve_unit_loops=False, index=-1)
    sch.annotate(block_or_loop=l1, ann_key="software_pipeline_stage", ann_val=[0, 1])
    sch.annotate(block_or_loop=l1, ann_key="software_pipeline_order", ann_val=[0, 1])

SCHEDULES = {'fused_concatenate_maximum': schedule_0}


# -- inputs and the float64 reference ----------------------------------------------------
def make_inputs():
    return [
        _unpack('eNpjsAEAAD4APQ==', '<f2', (1, 1, 1, 1)),  # x0
        _unpack('eNpjsAEAAD4APQ==', '<f2', (1, 1, 1, 1)),  # y0
        _unpack('eNpjsGEAQgACIgC1', '<f2', (3, 1, 1, 1)),  # y1
    ]


def reference():
    """{output: (float64 value, per-element bound)} (tvm-fuzzharness oracles/bounds.py, composed per op)."""
    return {
        'n2': (_unpack('eNpjYACBD/YMaDQAIt0Djg==', '<f8', (3, 1, 1, 1)), _unpack('eNpjYMAOAAAYAAE=', '<f8', (3, 1, 1, 1))),
    }

def _unpack(blob, dtype, shape):
    """An array from its exact bytes (zlib + base64)."""
    return np.frombuffer(zlib.decompress(base64.b64decode(blob)), dtype=np.dtype(dtype)).reshape(shape).copy()



# -- compile and run: in a child process ------------------------------------------------------
def _stage(name):
    print(f"[repro] stage: {name}", file=sys.stderr, flush=True)


def _phase(name, tgt):
    """relax.pipeline.<name>(target); TVM 0.27's dispatcher misses the CPU dataflow_lower_passes."""
    from tvm.relax import pipeline as rp
    try:
        return getattr(rp, name)(tgt)
    except AttributeError:
        from tvm.relax.backend.cpu_generic import pipeline as cpu
        return getattr(cpu, name)(tgt)


def compile_and_run(inputs):
    tgt = tvm.target.Target(TARGET)
    mod = Module
    _stage("lower")
    with tgt:
        if LAYOUT:
            mod = relax.transform.ConvertLayout({"relax.nn.conv2d": LAYOUT})(mod)
            mod = relax.transform.Normalize()(mod)
        mod = tvm.transform.Sequential(_phase("library_dispatch_passes", tgt)
                                       + _phase("legalize_passes", tgt))(mod)
    _stage("schedule")
    if MODE == "graph:dlight":
        from tvm.s_tir import dlight as dl
        with tgt:
            mod = dl.ApplyDefaultSchedule(dl.cpu.GEMV(), dl.cpu.Reduction())(mod)
    for name, fn in SCHEDULES.items():
        funcs = dict(mod.functions.items())
        gv = next(g for g in funcs if g.name_hint == name)
        sch = s_tir.Schedule(funcs[gv])
        fn(sch)
        funcs[gv] = sch.mod["main"].with_attr("tirx.is_scheduled", True)
        mod = tvm.IRModule(funcs, attrs=mod.attrs)
    _stage("codegen")
    with tvm.transform.PassContext(opt_level=3, config=PASS_CONFIG), tgt:
        mod = tvm.transform.Sequential(_phase("dataflow_lower_passes", tgt)
                                       + _phase("finalize_passes", tgt))(mod)
        ex = relax.build(mod, target=tgt, relax_pipeline=None)
    _stage("build")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    main = vm["main"]
    _stage("run")
    result = main(*[tvm.runtime.tensor(x) for x in inputs])
    results = [result] if isinstance(result, tvm.runtime.Tensor) else list(result)
    return {name: r.numpy() for name, r in zip(OUTPUTS, results)}


def _child(path):
    np.savez(path, **compile_and_run(make_inputs()))
    _stage("done")


# -- judge ----------------------------------------------------------------------------------
def _judge(outputs, expected):
    """(failed, message): the worst |output - reference| / bound (bound 0: bitwise equal)."""
    worst, message = -1.0, "no output elements"
    for name, (value, bound) in expected.items():
        got = np.asarray(outputs[name]).astype(np.float64)
        judged = np.isfinite(bound)
        bad = judged & np.isfinite(value) & ~np.isfinite(got)
        if bad.any():
            i = tuple(int(v) for v in np.argwhere(bad)[0])
            return True, f"{name}{list(i)} = {float(got[i])!r} where the float64 reference is {float(value[i])!r}"
        special = ~np.isfinite(value) & ~((np.isnan(value) & np.isnan(got)) | (value == got))
        if special.any():
            i = tuple(int(v) for v in np.argwhere(special)[0])
            return True, f"{name}{list(i)} = {float(got[i])!r} where IEEE arithmetic gives {float(value[i])!r}"
        err = np.where(judged & np.isfinite(value), np.abs(got - np.where(np.isfinite(value), value, 0)), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(bound > 0, err / bound, np.where(err > 0, np.inf, 0.0))
        ratio = np.where(judged, ratio, 0.0)
        if ratio.size and ratio.max() > worst:
            i = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
            worst = float(ratio[i])
            message = (f"{name}{[int(v) for v in i]}: got {float(got[i])!r}, float64 reference "
                       f"{float(value[i])!r}, |error| {err[i]:.6g}, bound {bound[i]:.6g}, "
                       f"error/bound {worst:.6g}")
    return worst > 1.0, message


def check():
    print(f"TVM {tvm.__version__}, target {json.dumps(TARGET)}, mode {MODE}")
    print(f"expecting: {EXPECT['summary']}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "outputs.npz")
        try:
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", path],
                                  capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            print(f"actual:    no result within {TIMEOUT} s")
            return 2
        stages = [ln.split(": ", 1)[1] for ln in proc.stderr.splitlines() if ln.startswith("[repro] stage: ")]
        stage = stages[-1] if stages else "?"
        log = "\n".join(ln for ln in proc.stderr.splitlines() if not ln.startswith("[repro] stage: "))
        if proc.returncode < 0:
            name = signal.Signals(-proc.returncode).name
            print(f"actual:    the process died with {name} in stage {stage}")
            print("\n".join(log.splitlines()[-15:]))
            return 1 if EXPECT["symptom"] == "crash" and EXPECT.get("signal") in (None, name) else 2
        if proc.returncode != 0 or stage != "done":
            print(f"actual:    an exception in stage {stage}:")
            print("\n".join([ln for ln in log.splitlines() if ln.strip()][-12:]))
            return 1 if EXPECT.get("error") and re.search(EXPECT["error"], log) else 2
        with np.load(path) as data:
            outputs = {k: data[k] for k in data.files}
    failed, message = _judge(outputs, reference())
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

"""The fixed part of every repro script: the runner (child process that compiles and runs,
parent that judges, exit status) and the TIR kind's ``compile_and_run``.  Filled in by the
kinds' script writers (:mod:`fuzzharness.kinds.tir.script`, :mod:`fuzzharness.kinds.relax.script`);
needs only tvm, numpy and the standard library.

A script defines, before :data:`RUNNER`: ``TARGET``, ``PASS_CONFIG``, ``TIMEOUT``, ``EXPECT``
(:func:`fuzzharness.repro.kit.expectation_of`), ``make_inputs()`` → ``{name: array}``,
``reference(inputs)`` → ``{output: (float64 value, per-element bound)}`` and
``compile_and_run(inputs, scheduled=True)`` → ``{output: array}`` (``scheduled=False``: the
unscheduled program, for an order-preserving divergence).

The child runs with heap hygiene (``_hygiene_env``, from :mod:`fuzzharness.core.hygiene`)
and its buffers between guard zones (``_Guarded``, from :mod:`fuzzharness.backends.redzone`),
both inserted before :data:`RUNNER`: a memory bug reproduces every time and says what it hit.

Exit status of a repro: 1 the bug reproduces, 0 fixed (a correct result, or TVM now refuses
the schedule with a ScheduleError), 2 something else happened (a different error, a crash
where none was expected, no result at all).

The exit contract: **1 only when TVM misbehaves** — computes a wrong result, crashes, hangs,
or raises where the schedule is legal.  An exception raised by the script's own code (making
the inputs, converting outputs, the float64 reference, the judge) is exit 2 with one line
``SCRIPT ERROR: ...`` that names the part, never 1 — else a script whose judge breaks would
keep "reproducing" after TVM is fixed.  Three mechanisms, in every script:

* :data:`PRELUDE` (right after the standard-library imports, before anything can fail) makes
  every exception that reaches the top of the parent exit 2 (``sys.excepthook``), naming the
  part the parent was in (``_PART``) — the module-level TVMScript, a missing package, the
  reference, the judge;
* the child marks the stages only the script's code runs (``inputs``, ``save``) and, for an
  exception inside ``compile_and_run``, says whether it came through TVM (a frame of tvm,
  tvm_ffi, pyopencl or TVM's C++; the guard zones' ``OutOfBoundsWrite``; an OpenCL build's
  ``GeneratedCodeError``, nvcc's or a faulting CUDA launch's too) or from the script alone (``[repro] fault: script``);
* outputs of dtypes numpy cannot store (bfloat16, float8: ml_dtypes) travel as float32,
  which holds each of their values exactly.

The harness counts a run as reproduced only with exit 1 *and* the closing
``RESULT: the bug reproduces`` line (:mod:`fuzzharness.repro.verify`).
"""

#: the standard-library imports every script starts with, then the exit contract's hook
STDLIB_IMPORTS = ("import json\nimport os\nimport re\nimport signal\nimport subprocess\n"
                  "import sys\nimport tempfile\n")

PRELUDE = r'''
# -- exit contract: 1 only when TVM misbehaves; a fault of this script's own code is exit 2 ---
_PART = "loading the script (imports, the program as TVMScript)"


def _script_fault(kind, value, tb):
    import traceback

    if issubclass(kind, KeyboardInterrupt):
        print("RESULT: interrupted (exit 130)", flush=True)
        os._exit(130)
    traceback.print_exception(kind, value, tb)
    line = (traceback.format_exception_only(kind, value) or ["?"])[-1].strip()
    print(f"SCRIPT ERROR: the repro script's own code failed while {_PART}: {line[:300]}")
    print("RESULT: something else happened (exit 2)", flush=True)
    sys.stderr.flush()
    os._exit(2)


if sys.argv[1:2] != ["--child"]:  # the child's exceptions are judged by the parent
    sys.excepthook = _script_fault
'''

RUNNER = r'''
# -- compile and run: in a child process, so that a crash of TVM is reported, not fatal ------
def _stage(name):
    print(f"[repro] stage: {name}", file=sys.stderr, flush=True)


def _poison(shape, dtype):
    """Output buffers start as nan (or the lowest integer): unwritten elements show."""
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.integer):
        return np.full(shape, np.iinfo(dtype).min, dtype=dtype)
    return np.full(shape, np.nan, dtype=dtype)


#: the script's own stages: an exception there is the script's fault, whatever it says
_OWN_STAGES = ("inputs", "save")
_TVM_FRAME = re.compile(r"(^|/)(tvm|tvm_ffi|pyopencl)/|\.(cc|h|cpp|cu|pxi|pyx)$|^<unknown>$")


def _through_tvm(e):
    """Did ``e`` come from TVM (or the kernels it generated), not from this script alone?"""
    if type(e).__name__ in ("OutOfBoundsWrite", "GeneratedCodeError", "KeyboardInterrupt"):
        return True
    me, tb = os.path.abspath(__file__), e.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name != me and _TVM_FRAME.search(name):
            return True
        tb = tb.tb_next
    return False


def _savable(array):
    """numpy stores bfloat16/float8 (ml_dtypes) as raw bytes it cannot read back: float32
    holds each of their values exactly (nan payloads included)."""
    array = np.asarray(array)
    return array.astype(np.float32) if array.dtype.kind == "V" else array


def _child(path):
    _stage("inputs")
    x = make_inputs()
    try:
        result = {"out_" + k: v for k, v in compile_and_run(x).items()}
        # outputs whose transform_layout padding the scheduled kernel left without the pad value
        result.update({"unfilled_" + k: np.int64(n)
                       for k, n in globals().get("UNFILLED", {}).items() if n})
        if EXPECT["compare"] == "unscheduled":
            result.update({"base_" + k: v for k, v in compile_and_run(x, scheduled=False).items()})
    except BaseException as e:
        if not _through_tvm(e):
            print("[repro] fault: script", file=sys.stderr, flush=True)
        raise
    _stage("save")
    np.savez(path, **{k: _savable(v) for k, v in result.items()})
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
    global _PART
    _PART = "running the child process"
    print(f"TVM {tvm.__version__}, target {json.dumps(TARGET)}, "
          f"pass config {json.dumps(PASS_CONFIG)}")
    print(f"expecting: {EXPECT['summary']}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "outputs.npz")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", path]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT,
                                  env=_hygiene_env())
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
            same = EXPECT["symptom"] == "crash" and (EXPECT.get("signal") in (None, name)
                                                      or name in EXPECT.get("signals", ()))
            return 1 if same else 2
        own = stage in _OWN_STAGES or "[repro] fault: script" in proc.stderr
        log = "\n".join(ln for ln in log.splitlines() if ln != "[repro] fault: script")
        if proc.returncode != 0 and own:
            lines = _exception_lines(log)
            print("\n".join(lines))
            print(f"SCRIPT ERROR: the repro script's own code failed in the child (stage "
                  f"{stage}, not inside TVM): {(lines or ['?'])[-1][:300]}")
            return 2
        if proc.returncode != 0 or stage != "done":
            print(f"actual:    an exception in stage {stage}:")
            print("\n".join(_exception_lines(log)))
            if EXPECT.get("error") and re.search(EXPECT["error"], log):
                return 1
            if stage == "schedule" and "ScheduleError" in log:
                print("TVM now refuses this schedule with a ScheduleError: counted as fixed")
                return 0
            return 2
        _PART = "reading the child's outputs"
        with np.load(path) as data:
            outputs = {k[4:]: data[k] for k in data.files if k.startswith("out_")}
            unfilled = {k[9:]: int(data[k]) for k in data.files if k.startswith("unfilled_")}
            base = {k[5:]: data[k] for k in data.files if k.startswith("base_")}
    if EXPECT["compare"] == "unscheduled":
        differ = [n for n in outputs if outputs[n].tobytes() != base[n].tobytes()]
        print("actual:    " + (f"outputs {differ} differ from the unscheduled program's bits"
                               if differ else "the same bits as the unscheduled program"))
        return 1 if differ else 0
    _PART = "computing the float64 reference"
    expected = reference(make_inputs())
    _PART = "judging the outputs"
    worst, message, failed = _judge(outputs, expected)
    print(f"actual:    {message}")
    if unfilled:
        print("actual:    transform_layout padding not filled with the pad value: "
              + ", ".join(f"{n} ({k} elements)" for n, k in unfilled.items()))
        failed = True
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
'''

"""Triage hints for an issue: which lowering pass is involved.

Two probes, both on the minimized case, with TVM's own ``PassContext``:

* **where it raises** — a pass instrument notes every pass as it starts and ends; for an
  error during lowering the pass that started and never ended is the one that raised, and
  the IR it was given is kept (the per-pass IR dump);
* **bisection by disabling** — the case is compiled and run once per pass of the pipeline
  with that pass disabled (``PassContext(disabled_pass=[name])``).  A pass whose removal
  makes the output correct (or the error go away) is *implicated*; one whose removal breaks
  compilation is *required*; the rest change nothing.  Only passes that changed the IR in
  the unmodified pipeline (structural hash before and after, recorded by the same
  instrument) are tried: disabling a pass that left the IR as it was leaves every later pass
  the same input, so it cannot change the outcome — on a typical case this skips two thirds
  of the pipeline.  For a wrong result the first
  implicated pass in pipeline order is where the output goes wrong, and the IR before and
  after it is kept.  When no pass is implicated the scheduled TIR is already wrong (or a
  required pass is at fault): the hint says so, and the issue shows the scheduled TIR.

Each attempt runs the kernel as the harness's run and the repro script do — guard zones
around every buffer, a fresh thread, a child whose heap glibc perturbs — so an out-of-bounds
write fails here too and a read of memory nobody wrote sees the same garbage.  When the
unmodified pipeline's attempt does not fail the way the case did, no pass is probed: a pass
whose removal "fixes" what did not fail would be named by chance (the fix test of camp16's
culprits failed for 19 of 27 such names before the probe ran kernels this way).

Disabling a pass can itself crash TVM, so the attempts run in a child process
(``python -m fuzzharness.kinds.tir.pass_bisect``) that reports one JSON line per pass; when it dies,
the attempt is recorded as a crash and a fresh child continues with the next pass.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fuzzharness.backends.redzone import run_guarded
from fuzzharness.core.case import Case
from fuzzharness.core.hygiene import hygiene_env
from fuzzharness.core.tvm_support import PASS_WRAPPERS, replay_trace
from fuzzharness.core.verdict import Verdict
from fuzzharness.execution import relayout
from fuzzharness.kinds.tir.reference import expectation
from fuzzharness.oracles.compare import judge
from fuzzharness.oracles.numerics import numpy_dtype
from fuzzharness.repro.triage import Triage

#: passes the llvm pipeline of TVM 0.27 cannot do without once they have something to do:
#: disabled, they leave block constructs that later passes refuse (an error) or crash on
#: (LowerOpaqueBlock: a segfault), so they can never make a wrong output right.  Not probed
#: (each would cost a compile, and a crash a fresh probe process); listed as required.
ALWAYS_REQUIRED = ("s_tir.LowerInitBlock", "s_tir.ConvertBlocksToOpaque", "s_tir.LowerOpaqueBlock",
                   "tirx.FlattenBuffer", "tirx.MakePackedAPI")
IR_LINES = 60


# -- the child ---------------------------------------------------------------------------------
def _script(func) -> str:
    text = func.script() if hasattr(func, "script") else str(func)
    lines = text.splitlines()
    return "\n".join(lines[:IR_LINES] + ([f"... ({len(lines) - IR_LINES} more lines)"]
                                           if len(lines) > IR_LINES else []))


class _Probe:
    """Compile and run the case with given passes disabled; judge like the harness."""

    def __init__(self, case: Case, pattern: str | None, verdict: Verdict | None = None):
        self.case = case
        self.pattern = pattern
        # the inputs and reference of the check that decided the verdict (a second input
        # set, the same-order emulation), as the repro script has them
        self.exp = expectation(case, verdict)
        self.mod = replay_trace(self.exp.func, case.trace).mod

    def attempt(self, disabled: list[str], watch: str | None = None) -> dict[str, Any]:
        import re

        import numpy as np
        import tvm
        import tvm_ffi
        from tvm.ir.instrument import pass_instrument


        seen: list[str] = []
        open_: list[str] = []
        dump: dict[str, str] = {}
        before: list[int] = []
        changed: set[str] = set()

        @pass_instrument
        class Recorder:
            def run_before_pass(self, mod, info):
                seen.append(info.name)
                open_.append(info.name)
                if not disabled:  # only the unmodified pipeline: a broken IR can crash hashing
                    before.append(tvm_ffi.structural_hash(mod))
                if watch is not None and info.name == watch and "before" not in dump:
                    dump["before"] = _main_script(mod)

            def run_after_pass(self, mod, info):
                if open_ and open_[-1] == info.name:
                    open_.pop()
                if not disabled and before and before.pop() != tvm_ffi.structural_hash(mod):
                    changed.add(info.name)
                if watch is not None and info.name == watch and "after" not in dump:
                    dump["after"] = _main_script(mod)

        out: dict[str, Any] = {"disabled": disabled}
        try:
            with tvm.transform.PassContext(opt_level=3, config=self.case.pass_config,
                                           disabled_pass=disabled, instruments=[Recorder()]):
                lib = tvm.compile(self.mod, target=self.case.target)
            e = self.exp
            # run as the harness and the repro script do (guard zones, a fresh thread, the
            # child's perturbed heap): an out-of-bounds write is an error here too, and a
            # read of memory nobody wrote sees the same garbage
            args = [relayout.kernel_array(e.layouts, s.name, e.inputs[s.name]) for s in e.input_specs]
            for o in e.output_specs:
                shape = relayout.kernel_shape(e.layouts, o.name, o.shape)
                dtype = _np(o.dtype)
                fill = np.iinfo(dtype).min if np.issubdtype(dtype, np.integer) else np.nan
                args.append(np.full(shape, fill, dtype=dtype))
            names = [s.name for s in e.input_specs] + [o.name for o in e.output_specs]
            outs = run_guarded(lib["main"], args, len(e.output_specs), names)
            got = {o.name: relayout.reference_array(e.layouts, o.name, t)
                   for o, t in zip(e.output_specs, outs, strict=True)}
            j = judge(e.expected, got)
            out["result"] = "wrong" if j.status.value in ("wrong_result", "nan_inf") else "correct"
            out["message"] = j.message
        except Exception as ex:  # noqa: BLE001 - every outcome is data here
            text = f"{type(ex).__name__}: {ex}"
            out["result"] = "same_error" if self.pattern and re.search(self.pattern, text) else "error"
            out["message"] = text.strip().splitlines()[0][:300] if text.strip() else type(ex).__name__
            out["raised_in"] = open_[-1] if open_ else None
        out["passes"] = seen
        out["changed"] = sorted(changed)
        out["ir"] = dump
        return out


def _main_script(mod) -> str:
    try:
        return _script(mod["main"])
    except Exception:  # noqa: BLE001 - after host/device splitting the names change
        return _script(mod)


def _np(dtype: str):

    return numpy_dtype(dtype)


def child_main(argv: list[str]) -> int:
    """``python -m fuzzharness.kinds.tir.pass_bisect CASE.json PATTERN START [VERDICT.json]``:
    one JSON line per attempt: first the unmodified pipeline ("base"), then each pass from
    index START."""
    from fuzzharness.core.plugins import load_plugins

    load_plugins()  # a plugin's workload must be known here too
    case = Case.from_json(Path(argv[0]).read_text())
    pattern = argv[1] or None
    start = int(argv[2])
    verdict = Verdict.from_dict(json.loads(Path(argv[3]).read_text())) if len(argv) > 3 else None
    probe = _Probe(case, pattern, verdict)
    base = probe.attempt([])
    print(json.dumps({"base": base}), flush=True)
    names = [n for n in dict.fromkeys(base["passes"]) if n not in PASS_WRAPPERS]
    if base["result"] == "correct":  # nothing fails here, so no pass can be what fixes it
        print(json.dumps({"done": len(names)}), flush=True)
        return 0
    changed = set(base.get("changed") or ())
    for i, name in enumerate(names[start:], start):
        if name not in changed:  # it left the IR as it was: disabling it changes nothing
            print(json.dumps({"pass": name, "index": i, "result": "unchanged", "message": ""}),
                  flush=True)
            continue
        if name in ALWAYS_REQUIRED:
            print(json.dumps({"pass": name, "index": i, "result": "error",
                              "message": "required (not probed)"}), flush=True)
            continue
        print(json.dumps({"trying": name, "index": i}), flush=True)
        r = probe.attempt([name])
        print(json.dumps({"pass": name, "index": i, "result": r["result"],
                          "message": r.get("message", "")}), flush=True)
    print(json.dumps({"done": len(names)}), flush=True)
    return 0


# -- the parent ----------------------------------------------------------------------------------
def _run_child(case_path: Path, pattern: str, start: int, timeout: float,
               verdict_path: Path | None) -> tuple[list[dict], int]:
    cmd = [sys.executable, "-m", "fuzzharness.kinds.tir.pass_bisect", str(case_path), pattern, str(start),
           *([str(verdict_path)] if verdict_path else [])]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=max(1.0, timeout),
                           env=hygiene_env(os.environ))
        out, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc = -9
    msgs = []
    for line in out.splitlines():
        try:
            msgs.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return msgs, rc


def triage(case: Case, *, symptom: str, pattern: str | None, workdir: Path,
           budget: float = 90.0, verdict: Verdict | None = None) -> Triage:
    """Probe ``case`` (see the module docstring); at most ``budget`` seconds.  ``verdict``:
    the case's own, whose deciding check (``details["decided_by"]``) picks the inputs."""
    t0 = time.monotonic()
    result = Triage()
    path = workdir / "triage-case.json"
    path.write_text(case.to_json())
    verdict_path = None
    if verdict is not None:
        verdict_path = workdir / "triage-verdict.json"
        verdict_path.write_text(json.dumps(verdict.to_dict()))
    wrong = symptom in ("wrong_result", "nan_inf")
    start, names, base = 0, None, None
    try:
        while time.monotonic() - t0 < budget:
            msgs, rc = _run_child(path, pattern or "", start, budget - (time.monotonic() - t0),
                                  verdict_path)
            trying = None
            for m in msgs:
                if "base" in m and base is None:
                    base = m["base"]
                    names = [n for n in dict.fromkeys(base["passes"]) if n not in PASS_WRAPPERS]
                elif "trying" in m:
                    trying = m["trying"]
                elif "pass" in m:
                    trying = None
                    _classify(result, m)
                    start = m["index"] + 1
            if any("done" in m for m in msgs) or base is None:
                break
            if trying is not None:  # the child died while this pass was disabled
                result.crashed.append(trying)
                start += 1
            if rc == 0:
                break
    finally:
        path.unlink(missing_ok=True)
        if verdict_path is not None:
            verdict_path.unlink(missing_ok=True)
    if base is None:
        result.note = "the probe could not compile the case (it crashes TVM before any pass result)"
    elif not _fails_like(base, wrong, pattern):
        # disabling a pass cannot fix what does not fail: naming one would be a guess
        result.implicated, result.required = [], []  # and no passes: culprit unknown
        result.note = (f"the probe's own run of the case did not fail as the campaign's did "
                       f"({base['result']}: {base.get('message', '')[:120]}): no pass is probed")
    else:
        result.passes = names or []
        result.raised_in = base.get("raised_in")
        probe_pass = result.raised_in or (result.implicated[0] if result.implicated else None)
        if probe_pass is not None:
            dumps = _dumps(path, case, probe_pass, budget - (time.monotonic() - t0))
            result.ir_before, result.ir_after = dumps.get("before", ""), dumps.get("after", "")
        if wrong and not result.implicated:
            result.note = ("disabling any single pass does not make the output correct: the "
                           "scheduled TIR already computes the wrong result, or a required "
                           "pass is at fault")
    result.scheduled_tir = _scheduled(case)
    result.seconds = time.monotonic() - t0
    return result


def _fails_like(base: dict, wrong: bool, pattern: str | None) -> bool:
    """Whether the unmodified pipeline's attempt shows the failure being triaged: a wrong
    output for a wrong result, the same error for an error with a pattern."""
    if wrong:
        return base.get("result") == "wrong"
    return base.get("result") == "same_error" if pattern else base.get("result") != "correct"


def _classify(result: Triage, m: dict) -> None:
    """correct without the pass: implicated; another error without it: required."""
    if m["result"] == "correct":
        result.implicated.append(m["pass"])
    elif m["result"] == "error":
        result.required.append(m["pass"])


def _dumps(path: Path, case: Case, name: str, budget: float) -> dict[str, str]:
    """IR before/after pass ``name`` (in a child: compiling may crash)."""
    if budget <= 1:
        return {}
    path.write_text(case.to_json())
    cmd = [sys.executable, "-c",
           "import json,sys\nfrom pathlib import Path\nfrom fuzzharness.core.case import Case\n"
           "from fuzzharness.core.plugins import load_plugins\nload_plugins()\n"
           "from fuzzharness.kinds.tir.pass_bisect import _Probe\n"
           "p = _Probe(Case.from_json(Path(sys.argv[1]).read_text()), None)\n"
           "print(json.dumps(p.attempt([], watch=sys.argv[2])['ir']))", str(path), name]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=budget,
                           env=hygiene_env(os.environ))
        return json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else {}
    except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
        return {}
    finally:
        path.unlink(missing_ok=True)


def _scheduled(case: Case) -> str:
    try:

        return _script(replay_trace(expectation(case).func, case.trace).mod["main"])
    except Exception:  # noqa: BLE001 - a hint, never a failure
        return ""


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))

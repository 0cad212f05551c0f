"""Run a written repro script in a fresh process, the way a maintainer would.

The script is started with ``python -I`` (isolated mode: no ``PYTHONPATH``, no current
directory, no user site-packages) from its own directory, so an accidental import of this
harness fails instead of passing unnoticed; the static check :func:`foreign_imports` says
the same before anything runs.

A repro *reproduces* when it exits with status 1 **and** its runner said so last
(``RESULT: the bug reproduces``): Python itself exits 1 on an exception nobody caught, so an
exit status alone cannot tell TVM's bug from a fault of the script's own code (the exit
contract of :mod:`fuzzharness.repro.template`; a script written before that contract has no
hook that turns such a fault into exit 2).
"""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
import time
from pathlib import Path

#: pyopencl: OpenCL scripts launch TVM's kernels with it (fuzzharness.repro.gpu_runtime);
#: cuda (NVIDIA's cuda-bindings): CUDA scripts do (same module)
ALLOWED_MODULES = {"numpy", "tvm", "ml_dtypes", "pyopencl", "cuda"}
REPRODUCES, FIXED, OTHER = 1, 0, 2
#: the runner's last line when the bug reproduces (fuzzharness.repro.template.RUNNER)
REPRODUCES_LINE = "RESULT: the bug reproduces"
#: the runner's line when the script's own code failed (exit 2)
SCRIPT_ERROR = "SCRIPT ERROR:"


@dataclasses.dataclass
class Run:
    exit_code: int | None  # None: the script itself did not finish (see output)
    output: str
    seconds: float

    @property
    def reproduced(self) -> bool:
        return self.exit_code == REPRODUCES and REPRODUCES_LINE in self.output \
            and SCRIPT_ERROR not in self.output

    @property
    def status(self) -> int | None:
        """The exit status as the contract reads it: an exit 1 without the runner's verdict
        (the script's own fault) is 2."""
        if self.exit_code == REPRODUCES and not self.reproduced:
            return OTHER
        return self.exit_code

    @property
    def script_fault(self) -> str | None:
        """The script's own fault (its ``SCRIPT ERROR`` line, or an exit 1 without the
        runner's verdict: an exception nobody caught), else None."""
        for line in self.output.splitlines():
            if line.startswith(SCRIPT_ERROR):
                return line
        if self.exit_code == REPRODUCES and REPRODUCES_LINE not in self.output:
            tail = [ln for ln in self.output.splitlines() if ln.strip()][-1:] or ["?"]
            return f"{SCRIPT_ERROR} exit 1 without the runner's verdict: {tail[0][:200]}"
        return None


def foreign_imports(text: str) -> list[str]:
    """Top-level modules the script imports besides the standard library, tvm and numpy."""
    stdlib = set(sys.stdlib_module_names)
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return sorted(m for m in found if m not in stdlib and m not in ALLOWED_MODULES)


def run_script(path: str | Path, *, python: str | None = None, timeout: float = 900.0) -> Run:
    """Run ``path`` once in a fresh, isolated interpreter; never raises for what it does."""
    from fuzzharness.backends.opencl_runtime import configure

    configure()  # an OpenCL script finds the runtimes the harness found (inherited environment)
    path = Path(path).resolve()
    cmd = [python or sys.executable, "-I", str(path)]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=path.parent)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return Run(None, out + f"\n(the repro script itself ran for more than {timeout:g} s)",
                   time.monotonic() - t0)
    output = p.stdout + (("\n" + p.stderr) if p.stderr.strip() else "")
    return Run(p.returncode, output.strip(), time.monotonic() - t0)


#: where every script opens TVM's PassContext (fuzzharness.kinds.*: the COMPILE sections)
_PASS_CONTEXT = "config=PASS_CONFIG)"


def fix_test(path: str | Path, passes: list[str], *, python: str | None = None) -> Run | None:
    """Run a copy of the repro script with TVM's ``passes`` disabled
    (``PassContext(disabled_pass=...)``): a culprit pass is *confirmed* when the copy says
    fixed (exit 0) while the script itself reproduces.  None: the script opens no
    PassContext this can change (a stored script of another shape)."""
    path = Path(path)
    text = path.read_text()
    if _PASS_CONTEXT not in text:
        return None
    copy = path.with_name(path.stem + ".fix-test.py")
    copy.write_text(text.replace(_PASS_CONTEXT,
                                 f"config=PASS_CONFIG, disabled_pass={sorted(passes)!r})"))
    try:
        return run_script(copy, python=python)
    finally:
        copy.unlink(missing_ok=True)


def verify(path: str | Path, *, times: int = 1, python: str | None = None) -> list[Run]:
    """Run the script ``times`` times (each in a fresh process); stop at the first that does
    not reproduce."""
    runs = []
    for _ in range(max(1, times)):
        runs.append(run_script(path, python=python))
        if not runs[-1].reproduced:
            break
    return runs

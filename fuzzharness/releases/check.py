"""TVM releases side by side: cached environments, and a case or repro run on each.

Which release broke it?  :data:`RELEASES` are the PyPI releases that share the API this
harness generates for (``tvm.s_tir``, ``tvm.tirx``, ``T.sblock``, ``get_sblock``,
``Trace.apply_json_to_schedule``, ``tvm.compile``), each with the apache-tvm-ffi pin that
works with it (newer tvm-ffi releases fail to import with 0.25 — undefined symbol
``json::Stringify`` — and segfault on IR JSON saves with 0.26/0.27).

:func:`environment` creates a virtual environment per release under
``<cache>/releases/`` (``$FUZZHARNESS_CACHE``, default ``~/.cache/tvm-fuzzharness``) with pip,
once: the release, its tvm-ffi pin and what the harness's workers need (numpy, ml_dtypes,
hypothesis).  A stamp file records what was installed; an environment whose stamp does not
match is made again.  A lock file serialises two processes making the same environment.

On each release (:func:`run_on`):

* a **repro script** (``repro.py``: tvm and numpy only) runs as a maintainer would run it,
  ``python -I repro.py``: exit 1 reproduces, 0 fixed (correct, or the schedule refused with a
  ScheduleError), 2 something else (e.g. that release cannot run the script);
* a **case** (``case.json``) runs in a worker process of the harness under that release's
  interpreter (:mod:`fuzzharness.core.interpreter`, with :mod:`fuzzharness.core.tvm_compat`): its
  verdict, output digest and whether the schedule preserves every element's operation
  order.

:func:`summarize` turns the outcomes into a line for an issue ("reproduces on 0.25.0.post1 /
0.26.0 / 0.27.0.post1 → introduced in 0.25.0.post1 or earlier") and finds **cross-release
findings**: an order-preserving case (its output must not depend on how TVM schedules it)
whose output bits differ between releases.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fuzzharness.core.interpreter import cache_dir


@dataclasses.dataclass(frozen=True)
class Release:
    version: str  # apache-tvm's version, as pip and tvm.__version__ spell it
    ffi: str  # the apache-tvm-ffi version that works with it

    @property
    def requirements(self) -> list[str]:
        return [f"apache-tvm=={self.version}", f"apache-tvm-ffi=={self.ffi}", *WORKER_NEEDS]


#: oldest first (the order "introduced in" reads them in)
RELEASES: tuple[Release, ...] = (
    Release("0.25.0.post1", "0.1.12"),
    Release("0.26.0", "0.1.14.post1"),
    Release("0.27.0.post1", "0.1.14.post1"),
)
#: what a worker imports besides TVM (pyproject.toml's pins for these)
#: (pyopencl: OpenCL and Adreno cases run there too, on the runtimes the driver found)
WORKER_NEEDS = ("numpy>=1.26,<3", "ml_dtypes>=0.5", "hypothesis>=6.150,<6.160", "pyopencl>=2024.1")
STAMP = "fuzzharness-env.json"
PIP_TIMEOUT = 1800.0

Say = Callable[[str], None]


class ReleaseEnvError(RuntimeError):
    """An environment could not be made (no registry, no such release): one line."""


def find(names: Sequence[str] | None) -> list[Release]:
    """The releases named (``0.26`` matches ``0.26.0``; None: all), oldest first."""
    if not names:
        return list(RELEASES)
    out = []
    for name in names:
        hits = [r for r in RELEASES if r.version == name or r.version.startswith(name + ".")
                or r.version.startswith(name + "post")]
        if not hits:
            raise ValueError(f"unknown release {name!r}; known: "
                             f"{', '.join(r.version for r in RELEASES)}")
        out += [h for h in hits if h not in out]
    return sorted(out, key=RELEASES.index)


def env_dir(release: Release) -> Path:
    py = f"py{sys.version_info.major}{sys.version_info.minor}"
    return cache_dir() / "releases" / f"tvm-{release.version}-{py}"


def python_of(d: Path) -> Path:
    return d / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ready(release: Release) -> Path | None:
    """The interpreter of the release's environment when it is made and complete."""
    d = env_dir(release)
    try:
        stamp = json.loads((d / STAMP).read_text())
    except (OSError, ValueError):
        return None
    if stamp.get("requirements") != release.requirements or not python_of(d).exists():
        return None
    return python_of(d)


def environment(release: Release, *, say: Say = lambda _: None) -> Path:
    """The interpreter of ``release``'s environment, made first when needed (see above)."""
    if (py := ready(release)) is not None:
        return py
    d = env_dir(release)
    d.parent.mkdir(parents=True, exist_ok=True)
    with open(d.parent / f".{d.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (py := ready(release)) is not None:  # made by another process meanwhile
            return py
        say(f"making the TVM {release.version} environment in {d} (pip, once)")
        shutil.rmtree(d, ignore_errors=True)
        _run([sys.executable, "-m", "venv", str(d)], "python -m venv")
        _run([str(python_of(d)), "-m", "pip", "install", "--disable-pip-version-check",
              "--no-input", *release.requirements], "pip install")
        _run([str(python_of(d)), "-c", "import tvm, tvm_ffi, numpy, ml_dtypes, hypothesis"],
             f"importing TVM {release.version}")
        stamp = {"release": release.version, "requirements": release.requirements,
                 "python": sys.version.split()[0]}
        (d / STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
    return python_of(d)


def _run(cmd: list[str], what: str) -> None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise ReleaseEnvError(f"{what} ran past {PIP_TIMEOUT:g} s") from None
    if p.returncode != 0:
        tail = [ln for ln in (p.stderr or p.stdout).splitlines() if ln.strip()]
        raise ReleaseEnvError(f"{what} failed (exit {p.returncode}): "
                              f"{tail[-1].strip() if tail else '?'}")


# -- running on a release -------------------------------------------------------------------
@dataclasses.dataclass
class Outcome:
    """What one release did with one case or repro (plain data)."""

    release: str
    repro: str | None = None  # reproduces | fixed | other | None (no repro.py)
    repro_exit: int | None = None
    repro_line: str = ""  # the script's RESULT line (or its last line)
    status: str | None = None  # the case's verdict status (None: no case.json run)
    digest: str | None = None
    order_preserved: bool | None = None
    message: str = ""
    worker_tvm: str = ""  # the TVM the harness worker reported importing (the case run)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def run_on(release: str, python: str | Path, repro: Path | None, case: Any | None, *,
           timeout: float = 600.0) -> Outcome:
    """Run the repro script and/or the case under ``python`` (see the module docstring)."""
    out = Outcome(release)
    if repro is not None:
        from fuzzharness.repro.verify import run_script

        run = run_script(repro, python=str(python), timeout=timeout)
        out.repro_exit = run.status
        out.repro = {1: "reproduces", 0: "fixed"}.get(run.status, "other")
        lines = [ln for ln in run.output.splitlines() if ln.strip()]
        result = [ln for ln in lines if ln.startswith("RESULT")]
        out.repro_line = (result or lines or [""])[-1].strip()[:300]
    if case is not None:
        verdict, out.worker_tvm = run_case(python, case, timeout)
        out.status, out.digest, out.message = verdict.status.value, verdict.digest, verdict.message[:300]
        order = (verdict.details or {}).get("order") or {}
        out.order_preserved = order.get("preserved")
    return out


def run_case(python: str | Path, case: Any, timeout: float):
    """``(verdict, TVM version the worker reported)`` of the case, from a worker process
    under ``python``."""
    from fuzzharness.core.interpreter import WORKER_PYTHON_ENV
    from fuzzharness.engine.pool import WorkerPool

    env = {**os.environ, WORKER_PYTHON_ENV: str(python)}
    with WorkerPool(1, timeout=timeout, env=env) as pool:
        (result,) = list(pool.run([{"task": 0, "case": case.to_dict()}]))
    return result.verdict, ",".join(sorted(pool.tvm_versions))


# -- what the outcomes say ------------------------------------------------------------------
def introduced(outcomes: Sequence[Outcome]) -> str:
    """``present in A / B / C → introduced in A or earlier`` and its variants (outcomes
    oldest first; judged by the repro script's exit status, else by the case's status).

    "Introduced in R" needs the release before R to give a correct result; when that one
    could not run the repro at all (status 2: e.g. an API it lacks), it is "R or earlier".
    """
    states = [(o.release, state_of(o)) for o in outcomes]
    present = [r for r, s in states if s == "reproduces"]
    if not present:
        return "present in none of " + " / ".join(r for r, _ in states) + _others(states)
    text = "present in " + " / ".join(present)
    if states[-1][1] != "reproduces":
        return text + f"; not in {states[-1][0]} ({states[-1][1]})" + _others(states)
    fixed = [i for i, (_, st) in enumerate(states) if st == "fixed"]
    if not fixed:  # nothing older gave a correct result
        first = next(r for r, st in states if st == "reproduces")
        return text + f" → introduced in {first} or earlier" + _others(states)
    f = fixed[-1]
    first = next(i for i in range(f + 1, len(states)) if states[i][1] == "reproduces")
    if first == f + 1:
        return text + f" → introduced in {states[first][0]} ({states[f][0]}: correct)"
    return (text + f" → introduced after {states[f][0]}, by {states[first][0]}"
            + _others(states))


def state_of(o: Outcome) -> str:
    """What an entry does on one release: its repro's verdict, else reproduces, fixed or other."""
    if o.repro is not None:
        return o.repro
    from fuzzharness.core.verdict import Status

    finding = {s.value for s in Status if s.value not in ("pass", "inconclusive",
                                                          "schedule_rejected", "harness_error")}
    if o.status in finding:
        return "reproduces"
    return "fixed" if o.status in ("pass", "schedule_rejected") else "other"


def _others(states: list[tuple[str, str]]) -> str:
    other = [r for r, s in states if s == "other"]
    return f" ({', '.join(other)} could not run it)" if other else ""


def cross_release(outcomes: Sequence[Outcome]) -> str | None:
    """A cross-release finding, or None: the schedule keeps every element's operations and
    their order on every release, yet the output bits differ between two of them."""
    ran = [o for o in outcomes if o.digest and o.order_preserved is not None]
    if len(ran) < 2 or not all(o.order_preserved for o in ran):
        return None
    groups: dict[str, list[str]] = {}
    for o in ran:
        groups.setdefault(o.digest, []).append(o.release)
    if len(groups) < 2:
        return None
    return ("order-preserving schedule, different output bits across releases: "
            + " vs ".join("/".join(rs) for rs in groups.values()))


def summarize(outcomes: Sequence[Outcome]) -> str:
    line = introduced(outcomes)
    if (finding := cross_release(outcomes)) is not None:
        line += f"; cross-release finding: {finding}"
    return line

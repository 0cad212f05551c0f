"""The TVM under test is a choice: worker processes under another Python interpreter.

``fuzzharness run --tvm-python PATH`` (settings key ``tvm_python``) runs every worker — and
the minimizer, whose repro scripts must be verified against the same TVM — under the
interpreter at ``PATH`` and whatever TVM it imports: a developer's source build, a nightly,
an older release (``fuzzharness releases`` makes environments for those).  The driver
itself needs no TVM: it stores, buckets and reports plain data.

How: the campaign puts the interpreter in ``$FUZZHARNESS_WORKER_PYTHON`` for its executor
(the Ray executor forwards ``FUZZHARNESS_*`` variables to its nodes); a process that starts
workers asks :func:`command_env` for the interpreter and the environment to start them with.
Under another interpreter, ``PYTHONPATH`` names a directory that holds *only* this
harness's packages (symlinks, :func:`harness_path`), never this environment's
site-packages: the other interpreter must not import this environment's TVM.  That
interpreter needs the harness's own dependencies — numpy, ml_dtypes, hypothesis (an
environment :mod:`fuzzharness.releases.check` creates has them).  Differences in TVM's Python API
between releases are handled in one place, :mod:`fuzzharness.core.tvm_compat`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

WORKER_PYTHON_ENV = "FUZZHARNESS_WORKER_PYTHON"
#: the checkout's folders that setup.py installs as subpackages of ``fuzzharness``
MAPPED = ("generators", "oracles", "reports")
#: what a worker needs besides TVM (imported by the check below)
NEEDS = ("numpy", "ml_dtypes", "hypothesis", "tvm", "tvm_ffi")
CHECK_TIMEOUT = 120.0


def cache_dir() -> Path:
    """``$FUZZHARNESS_CACHE`` or ``~/.cache/tvm-fuzzharness`` (release environments live here)."""
    base = os.environ.get("FUZZHARNESS_CACHE") or Path.home() / ".cache" / "tvm-fuzzharness"
    return Path(base)


def harness_path() -> Path:
    """A directory with only this harness in it, for PYTHONPATH: ``fuzzharness/`` made of
    symlinks to this checkout's ``fuzzharness/*`` and to the folders setup.py maps into the
    namespace (``generators`` → ``fuzzharness.generators``, ...), as an install lays it out."""
    root = Path(__file__).resolve().parents[2]
    key = hashlib.sha256(str(root).encode()).hexdigest()[:12]
    d = cache_dir() / "pythonpath" / key
    pkg = d / "fuzzharness"
    if pkg.is_symlink():  # the layout before one namespace: a link to the whole package
        pkg.unlink()
    pkg.mkdir(parents=True, exist_ok=True)
    wanted = {p.name: p for p in (root / "fuzzharness").iterdir() if p.name != "__pycache__"}
    wanted.update({name: root / name for name in MAPPED if (root / name / "__init__.py").is_file()})
    for name, target in wanted.items():
        link = pkg / name
        if not link.is_symlink() or link.resolve() != target:
            tmp = pkg / f".{name}.{os.getpid()}"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(target, target_is_directory=target.is_dir())
            os.replace(tmp, link)  # atomic: concurrent workers never see a half-made link
    return d


def resolve(python: str) -> str:
    """An absolute path to the interpreter (``python3.11`` is looked up on PATH); symlinks
    are kept: a virtual environment is known by its own ``bin/python``."""
    path = shutil.which(python) if os.sep not in python else python
    if not path or not os.access(path, os.X_OK):
        raise ValueError(f"{python}: no such executable")
    return os.path.abspath(path)


def environment(python: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a process of this harness under ``python``."""
    env = dict(os.environ if base is None else base)
    env.pop("PYTHONHOME", None)
    env["PYTHONPATH"] = str(harness_path())
    # no current directory on sys.path: from a checkout's root it would shadow the harness
    # path with the source tree, where generators/oracles/reports are not subpackages
    env["PYTHONSAFEPATH"] = "1"
    env.pop("VIRTUAL_ENV", None)
    return env


def command_env(env: dict[str, str] | None = None) -> tuple[str, dict[str, str]]:
    """``(interpreter, environment)`` to start a harness process (a worker, the minimizer)
    with: ``$FUZZHARNESS_WORKER_PYTHON`` of ``env`` when set, else this interpreter."""
    env = dict(os.environ if env is None else env)
    other = env.get(WORKER_PYTHON_ENV, "")
    # not realpath: a virtual environment's python is a symlink to the same binary as
    # another's; the environment is what differs
    if not other or os.path.abspath(other) == os.path.abspath(sys.executable):
        return sys.executable, env
    return other, environment(other, env)


@functools.cache
def check_interpreter(python: str) -> str:
    """The resolved interpreter, after checking that it imports TVM and the harness's
    dependencies with the harness from this checkout; ValueError says what is missing."""
    path = resolve(python)
    code = ("import importlib, sys\n"
            f"missing = [m for m in {NEEDS!r} if importlib.util.find_spec(m) is None]\n"
            "print(' '.join(missing)); sys.exit(3 if missing else 0)")
    try:
        p = subprocess.run([path, "-c", "import importlib.util\n" + code],
                           env=environment(path), capture_output=True, text=True,
                           timeout=CHECK_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ValueError(f"{path} does not run: {e}") from None
    if p.returncode == 3:
        raise ValueError(f"{path} cannot import {', '.join(p.stdout.split())} (the workers "
                         "need TVM, numpy, ml_dtypes and hypothesis)")
    if p.returncode != 0:
        raise ValueError(f"{path} failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return path


@functools.cache
def versions_of(python: str) -> dict[str, str]:
    """:func:`fuzzharness.core.tvm_support.versions` as seen by ``python`` (for the campaign's
    database, known-bug matching and repro headers)."""
    code = ("import json, tvm\nfrom fuzzharness.core import tvm_compat\ntvm_compat.install()\n"
            "from fuzzharness.core.tvm_support import versions\nprint(json.dumps(versions()))")
    p = subprocess.run([python, "-c", code], env=environment(python), capture_output=True,
                       text=True, timeout=CHECK_TIMEOUT)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["?"])[-1]
        raise ValueError(f"{python}: cannot read its TVM version: {last}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def campaign_env(settings: dict) -> dict[str, str]:
    """This process's environment with the worker interpreter of a campaign's stored
    settings (``tvm_python``), for processes started on the campaign's behalf."""
    env = {k: v for k, v in os.environ.items() if k != WORKER_PYTHON_ENV}
    if settings.get("tvm_python"):
        env[WORKER_PYTHON_ENV] = settings["tvm_python"]
    return env


def no_tvm_here() -> str | None:
    """Why this interpreter cannot run the workers itself (None: it can)."""
    import importlib.util

    if importlib.util.find_spec("tvm") is None:
        return ("no TVM in this Python environment: install the tested release with "
                "pip install 'tvm-fuzzharness[tvm]', or run the workers under another "
                "interpreter with --tvm-python PATH (a source build, a nightly; "
                "`fuzzharness releases --prepare` makes environments of TVM releases)")
    return None

"""Find the OpenCL runtimes installed in this environment and point the ICD loader at them.

pyopencl talks to OpenCL through an ICD loader (ocl-icd), which finds vendor runtimes through
``.icd`` files in ``/etc/OpenCL/vendors`` — or in the folder ``$OCL_ICD_VENDORS`` names.  A
runtime installed with pip (Intel's CPU runtime, ``intel-opencl-rt``: fp16 and images, what
the ``opencl`` extra brings on x86-64 Linux) has no ``.icd`` file anywhere, so it is never
found on its own.  :func:`configure` makes a folder under the harness's cache holding an
``.icd`` file for each runtime library installed in this Python environment
(``<sys.prefix>/lib/libintelocl.so``) plus the system's own ``.icd`` files (PoCL, a GPU vendor's) — or those of the folder
the user's ``OCL_ICD_VENDORS`` already names — and sets ``OCL_ICD_VENDORS`` to it, before
pyopencl first asks for platforms.  Processes started afterwards (workers, repro scripts)
inherit it.  No apt, no sudo, no variable to export by hand.

The library's own ``RUNPATH`` (``$ORIGIN``) finds its dependencies beside it, so no
``LD_LIBRARY_PATH`` is needed.  ``FUZZHARNESS_OPENCL_ICD=0`` switches the discovery off.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

#: runtime libraries pip installs into an environment's lib/ (name → .icd file name)
PIP_RUNTIMES = {"libintelocl.so": "intel-cpu.icd"}
SYSTEM_VENDORS = Path("/etc/OpenCL/vendors")
OFF_ENV = "FUZZHARNESS_OPENCL_ICD"
_MARK = "FUZZHARNESS_OPENCL_ICD_DIR"  # the folder this process (or its parent) made


def pip_runtimes() -> list[Path]:
    """Runtime libraries installed by pip in this environment (a virtual environment's own
    prefix, then the interpreter's)."""
    dirs = [Path(sys.prefix) / "lib", Path(sys.base_prefix) / "lib"]
    found = []
    for d in dict.fromkeys(dirs):
        for name in PIP_RUNTIMES:
            lib = d / name
            if lib.is_file() and lib.resolve() not in [f.resolve() for f in found]:
                found.append(lib)
    return found


def configure() -> str | None:
    """Set ``OCL_ICD_VENDORS`` to a folder with the pip-installed runtimes and the others;
    the folder, or None when there is nothing to add (no pip runtime, switched off)."""
    if os.environ.get(OFF_ENV) == "0":
        return None
    if os.environ.get(_MARK) and os.environ.get("OCL_ICD_VENDORS") == os.environ[_MARK]:
        return os.environ[_MARK]  # done by this process or the one that started it
    libs = pip_runtimes()
    if not libs:
        return None
    from fuzzharness.core.interpreter import cache_dir

    base = Path(os.environ["OCL_ICD_VENDORS"]) if os.environ.get("OCL_ICD_VENDORS") else SYSTEM_VENDORS
    others = sorted(p for p in base.glob("*.icd")) if base.is_dir() else []
    lines = {f"{PIP_RUNTIMES[lib.name]}": f"{lib}\n" for lib in libs}
    for icd in others:
        try:
            text = icd.read_text()
        except OSError:
            continue
        if not any(Path(text.strip()).name == lib.name for lib in libs):
            lines.setdefault(icd.name, text if text.endswith("\n") else text + "\n")
    key = hashlib.sha256(repr(sorted(lines.items())).encode()).hexdigest()[:12]
    folder = cache_dir() / "opencl" / f"vendors-{key}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in lines.items():
            path = folder / name
            if not path.is_file() or path.read_text() != text:
                tmp = folder / f".{name}.{os.getpid()}"
                tmp.write_text(text)
                os.replace(tmp, path)
    except OSError:
        return None  # a read-only cache: the system's runtimes only
    os.environ["OCL_ICD_VENDORS"] = os.environ[_MARK] = str(folder)
    return str(folder)

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Campaigns started by the tests do not minimize their new buckets at the end unless a test
# asks for it (--minimize-budget): that would add up to two minutes to every campaign test.
os.environ.setdefault("FUZZHARNESS_MINIMIZE_BUDGET", "0")


def _plugin_installed() -> bool:
    """Is fuzzharness.pytest_plugin registered through its pytest11 entry point?"""
    from importlib.metadata import entry_points

    return any(ep.value == "fuzzharness.pytest_plugin" for ep in entry_points(group="pytest11"))


# An editable install made before the entry point existed does not load the plugin: load it
# here then (loading it twice would be an error).
if not _plugin_installed():
    pytest_plugins = ["fuzzharness.pytest_plugin"]


def need(reason: str | None) -> None:
    """Skip this test with ``reason`` when something it needs is missing (a runtime, an
    extra) — but under CI (``CI=true``, which .ci/run sets after installing all of them) fail:
    CI must not go green by skipping what it installed."""
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI installs this (.ci/run), yet: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def plugin_env(monkeypatch):
    """Make worker processes import the test plugins (and find the tests package)."""
    monkeypatch.setenv("FUZZHARNESS_PLUGINS", "fuzzharness.testing.wrong_programs")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return dict(os.environ)


def run_cli(*args, env=None, timeout=600):
    """Run the real `fuzzharness` CLI in a subprocess; return CompletedProcess."""
    import subprocess

    return subprocess.run([sys.executable, "-m", "fuzzharness.cli", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)


def repro_of(out, case, verdict, **kw):
    """The repro package of ``case`` (whose verdict is ``verdict``) written under ``out`` and
    verified, as a campaign writes it: keyed by its signature, without the pass probe."""
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.core.tvm_support import versions
    from fuzzharness.repro.package import write_repro

    sig = signature(case.to_dict(), verdict)
    return write_repro(out, case, verdict, bucket=sig.key, signature=sig, versions=versions(),
                       triage=False, **kw)

"""tvm-fuzzharness: numerical-correctness fuzzing and differential testing for Apache TVM.

Public API (the rest is internal and may change):

* :class:`Case` — one test as plain data; :class:`Verdict`, :class:`Status`, :class:`Stage`
* :func:`execute` — run a case end to end and judge it
* :func:`generate_case` — a case from (campaign seed, index)
"""

from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Stage, Status, Verdict
from fuzzharness.core.version import __version__


def execute(case, on_stage=None):
    from fuzzharness.execution.stages import execute as _execute

    return _execute(case, on_stage)


def generate_case(seed, index, settings=None):
    from fuzzharness.generators.cases import GenSettings
    from fuzzharness.generators.cases import generate_case as _generate

    return _generate(seed, index, settings or GenSettings())


__all__ = ["Case", "Stage", "Status", "Verdict", "execute", "generate_case", "__version__"]

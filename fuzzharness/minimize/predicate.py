"""What "the same bug" means while minimizing: the interestingness predicate.

A candidate is interesting when its verdict is a TVM finding and its bucket signature
(:func:`fuzzharness.buckets.signatures.signature`) is the target's:

* a failure **with error text** (compile errors, crashes with a fatal message, exceptions
  from generated code): the bucket keys are equal.  The key of such a failure ignores the
  workload, dtype and schedule, so the minimizer may change all of them;
* a failure **without text** (wrong answer, nan/inf, a bare signal or hang) is keyed by
  symptom, kind, stage, workload, dtype, primitives and facts.  The primitives of the first
  case include bystanders — exactly what minimization removes — and the dtype is one of the
  things minimization simplifies, so here a candidate counts when the symptom *class*, kind,
  stage, workload and facts are equal and its primitives are a *subset* of the target's (any
  dtype of the workload).  The symptom class folds ``nan_inf`` into ``wrong_result``
  (:func:`fuzzharness.buckets.root_causes.symptom_class`): a kernel that reads unwritten
  memory shows nan or garbage depending on what the memory held, one bug either way; and
  a kernel that corrupts memory is one class whichever check caught it (out_of_bounds in a
  guard zone, SIGSEGV, SIGBUS, SIGABRT from glibc's heap checks), in any stage from the run on.  The minimized case then lands in a bucket whose primitive set is
  the bug's smallest known trigger; the repro records both keys.  With ``strict=True`` the
  key must be equal in this case too.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fuzzharness.buckets.root_causes import MEMORY_CRASH, symptom_class
from fuzzharness.buckets.signatures import Signature, signature
from fuzzharness.core.verdict import Verdict


@dataclasses.dataclass(frozen=True)
class SameBug:
    target: Signature
    strict: bool = False

    def signature_of(self, case: dict[str, Any] | None, verdict: Verdict) -> Signature | None:
        if not verdict.is_finding:
            return None
        return signature(case, verdict)

    def __call__(self, case: dict[str, Any] | None, verdict: Verdict) -> bool:
        sig = self.signature_of(case, verdict)
        return sig is not None and self.matches(sig)

    def matches(self, sig: Signature) -> bool:
        t = self.target
        if sig.key == t.key:
            return True
        if self.strict or t.has_text or sig.has_text:
            return False
        same = ("workload", "facts")  # the crash kind is in the symptom class
        return (symptom_class(sig) == symptom_class(t)
                and all(getattr(sig, f) == getattr(t, f) for f in same)
                and (sig.stage == t.stage or _heap_stages(sig, t))
                and set(sig.primitives) <= set(t.primitives))


def _heap_stages(a: Signature, b: Signature) -> bool:
    """A kernel that corrupts memory is caught wherever a check notices — a guard zone or
    the MMU while it runs, glibc at the next allocation while its output is judged or the
    baseline is built: for a memory crash those stages are one."""
    return symptom_class(a) == symptom_class(b) == MEMORY_CRASH

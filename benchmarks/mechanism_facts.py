"""Is a mechanism fact decisive?  How often it holds on cases that pass, and on cases that fail.

    python benchmarks/mechanism_facts.py [--cases 400] [--seed 11] [--workers 2]

A root cause keyed by a mechanism fact (:data:`fuzzharness.buckets.root_causes.MECHANISM_FACTS`)
merges every failure that has the fact into one bug.  That is right only if the fact *is* the
bug: a program with the fact should (nearly) always compute a wrong answer.  This draws the
default campaign's llvm TIR cases for a seed, runs each (worker processes: a crash is a
verdict), computes the schedule facts of every case — passing ones too — and the located
facts (:func:`fuzzharness.execution.facts.located_facts`), and prints, per fact, how many
cases have it and their statuses.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def facts_of(case) -> tuple[str, ...]:
    from fuzzharness.core.tvm_support import replay_trace
    from fuzzharness.execution.facts import located_facts, schedule_facts
    from fuzzharness.kinds.tir.reference import expectation

    try:
        mod = replay_trace(expectation(case).func, case.trace).mod
    except Exception:  # noqa: BLE001 - a schedule that does not replay has no facts
        return ()
    return tuple(schedule_facts(mod)) + tuple(located_facts(mod))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    from fuzzharness.buckets.root_causes import LOCATED_MECHANISMS, MECHANISM_FACTS
    from fuzzharness.core.case import Case
    from fuzzharness.core.kinds import kind_name
    from fuzzharness.engine.pool import WorkerPool
    from fuzzharness.generators.cases import GenSettings, generate_case

    settings = GenSettings()
    cases = []
    for i in range(args.cases):
        try:
            c = generate_case(args.seed, i, settings.at(args.seed, i))
        except Exception:  # noqa: BLE001 - a failure while drawing: no case to judge
            continue
        if kind_name(c) == "tir" and c.target.get("kind") == "llvm":
            cases.append(c)
    by_fact: dict[str, Counter] = defaultdict(Counter)
    with WorkerPool(args.workers, timeout=60) as pool:
        for res in pool.run([{"task": i, "case": c.to_dict()} for i, c in enumerate(cases)]):
            case = Case.from_dict(res.case) if res.case else cases[res.task["task"]]
            for f in facts_of(case) or ("(none)",):
                by_fact[f][res.verdict.status.value] += 1
    print(f"seed {args.seed}: {len(cases)} llvm TIR cases")
    for f, counts in sorted(by_fact.items()):
        total = sum(counts.values())
        failing = sum(n for s, n in counts.items() if s in ("wrong_result", "nan_inf", "crash"))
        tag = " (mechanism)" if f in MECHANISM_FACTS else \
            " (mechanism, keyed with the step that made it)" if f in LOCATED_MECHANISMS else ""
        print(f"  {f}{tag}: {total} cases, wrong/nan/crash {failing} ({failing / total:.0%}); "
              + ", ".join(f"{s} {n}" for s, n in counts.most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

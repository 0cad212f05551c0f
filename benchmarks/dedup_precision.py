"""How well root causes match real bugs, on a hand-labelled benchmark.

    python benchmarks/dedup_precision.py [--cases benchmarks/dedup/cases.json]
        [--labels benchmarks/dedup/labels.json] [--workers 2] [--show]

``cases.json`` holds verified, minimized repros of real campaigns and the buckets those
campaigns attached to a root cause without minimizing them (``benchmarks/dedup/collect.py``); ``labels.json`` says, for each, which real TVM bug it is and why (read from the
repro's IR), and which seeds are **held out** (never looked at while the identity rules were
tuned: reported apart).  Each case is run again with the current code (in worker processes:
a crash is a verdict), keyed by :func:`fuzzharness.buckets.root_causes.root_cause` and
classified against today's known bugs, then per seed group:

* root causes per real bug (goal ≤ 1.25) and the real bugs split over several root causes;
* false merges: root causes holding more than one real bug (goal 0), and how many pairs of
  *different* bugs that share a primitive or a culprit pass the benchmark holds (so that 0
  false merges means something);
* known bugs reported NEW: repros labelled with a known-bug id that no entry recognizes
  (goal 0), and repros of new bugs that an entry claims;
* culprits, as stored: how many repros named a culprit pass, and how many a fix test confirmed (the
  campaign's ``finding.json``: ``culprit_confirmed``);
* evidence types of the root causes (error text, IR shape, step and site, trigger).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
HERE = ROOT / "benchmarks" / "dedup"


def rekey(records: list[dict], workers: int) -> dict[str, dict]:
    """id → {verdict, signature, root cause, known} with the current code."""
    from fuzzharness.buckets.known_bugs import KnownBugs
    from fuzzharness.buckets.root_causes import RootCause, mechanism_key, root_cause, symptom_class
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.core.verdict import Verdict
    from fuzzharness.engine.pool import WorkerPool

    known = KnownBugs.load()
    out = {}
    tasks = [{"task": i, "case": r["case"]} for i, r in enumerate(records)]
    with WorkerPool(workers, timeout=60) as pool:
        for res in pool.run(tasks):
            r = records[res.task["task"]]
            v = res.verdict
            failing = (r["case"].get("origin") or {}).get("failing_verdict")
            if failing:  # a failure while the schedule was drawn: the case holds the trace
                v = Verdict.from_dict(failing)  # before the failing call (its script makes it)
            sig = signature(r["case"], v) if v.is_finding else None
            rc = root_cause(r["case"], sig, "") if sig is not None else None
            attached = bool(r.get("attached_to") and sig is not None and mechanism_key(sig))
            if attached:
                # attached unminimized: the raw case counts by its mechanism, as the lanes do
                rc = RootCause(symptom_class(sig), sig.stage, facts=tuple(sig.facts))
            m = known.classify(sig, None, rc) if sig is not None else None
            out[r["id"]] = {"status": v.status.value, "line": v.line()[:160], "sig": sig, "rc": rc,
                            "known": m.bug.id if m is not None else None,
                            # attached by an older rule the current code refuses (a shape
                            # another bug leaves): a campaign minimizes it now, not counted
                            "to_minimize": bool(r.get("attached_to")) and not attached}
        _culprit_steps(records, out, pool)  # as the campaign's triage does
    for r in records:  # classify with the step, as a verified repro's root cause carries it
        n = out[r["id"]]
        if n["rc"] is not None and n.get("step"):
            n["rc"] = root_cause(r["case"], n["sig"], "", n["step"], n["step_facts"],
                                 n.get("step_site", ()))
            m = known.classify(n["sig"], None, n["rc"])
            n["known"] = m.bug.id if m is not None else None
    return out


def _culprit_steps(records: list[dict], now: dict[str, dict], pool) -> None:
    """The first schedule step after which each minimized case fails (step_bisect: a TIR
    case's trace, a graph's one scheduled function's, or the one that fails alone's)."""
    from fuzzharness.core.case import Case
    from fuzzharness.core.traces import primitive_sequence
    from fuzzharness.minimize.step_bisect import (
        conclude,
        culprit_step,
        one_function_cases,
        prefixes,
        probed_trace,
    )

    jobs = []
    for r in records:
        n = now[r["id"]]
        if n["rc"] is None or n["rc"].evidence != "trigger" or r.get("attached_to"):
            continue
        c = dict(r["case"])
        c.pop("id", None)
        case = Case.from_dict(c)
        probed = probed_trace(case)
        if probed and primitive_sequence(probed[1]):
            jobs.append((r["id"], case, prefixes(case)))
        elif one_function_cases(case):  # a graph with several scheduled functions: rare, alone
            step, facts, site = culprit_step(case, n["sig"])
            now[r["id"]].update(step=step, step_facts=facts, step_site=site)
    tasks = [{"task": f"{k}:{j}", "case": c.to_dict()} for k, (_, _, cands) in enumerate(jobs)
             for j, (_, c) in enumerate(cands)]
    verdicts = {res.task["task"]: res.verdict for res in pool.run(tasks)}
    for k, (rid, case, cands) in enumerate(jobs):
        vs = [verdicts.get(f"{k}:{j}") for j in range(len(cands))]
        step, facts, site = conclude(case, now[rid]["sig"], cands, vs)  # as culprit_step
        now[rid].update(step=step, step_facts=facts, step_site=site)


def step_key(n: dict) -> str:
    """The variant identity measured with --steps: a trigger keyed by its culprit step (and
    symptom class, facts, options) instead of its whole primitive set."""
    rc = n["rc"]
    if rc.evidence not in ("trigger", "step_site") or not n.get("step"):
        return rc.key
    return "step:" + json.dumps([rc.symptom, n["step"], list(rc.facts), list(rc.options)])


def report(name: str, ids: list[str], records: dict[str, dict], labels: dict[str, dict],
           now: dict[str, dict], show: bool, key=lambda n: n["rc"].key) -> None:
    ids = [i for i in ids if i in labels]
    pending = [i for i in ids if now[i].get("to_minimize")]
    ids = [i for i in ids if i not in pending]
    fails = [i for i in ids if now[i]["rc"] is not None]
    gone = [i for i in ids if now[i]["rc"] is None]
    bugs: dict[str, set[str]] = defaultdict(set)
    keys: dict[str, set[str]] = defaultdict(set)
    for i in fails:
        bugs[labels[i]["bug"]].add(key(now[i]))
        keys[key(now[i])].add(labels[i]["bug"])
    merges = {k: sorted(b) for k, b in keys.items() if len(b) > 1}
    split = {b: len(k) for b, k in bugs.items() if len(k) > 1}
    ratio = len(keys) / max(1, len(bugs))
    print(f"== {name}: {len(ids)} labelled repros ({len(gone)} no longer fail: {gone[:5]})")
    if pending:
        print(f"   raw cases the current code minimizes instead of attaching: {len(pending)} "
              f"(not counted: no minimized repro here): {pending[:8]}")
    print(f"   real bugs {len(bugs)}, root causes {len(keys)}: {ratio:.2f} root causes per real bug"
          f" (goal <= 1.25)")
    for b, n in sorted(split.items(), key=lambda kv: -kv[1]):
        members = [i for i in fails if labels[i]["bug"] == b]
        print(f"   split: {b} -> {n} root causes over {len(members)} repros")
        if show:
            for i in members:
                print(f"      {key(now[i])[:16]} {now[i]['rc'].evidence:<10} {now[i].get('step', '')} | "
                      f"{now[i]['rc'].title()[:100]}")
    print(f"   false merges: {len(merges)} (goal 0)" + "".join(f"\n      {k}: {b}" for k, b in merges.items()))
    # pairs of different bugs that share a primitive or a culprit: what 0 false merges covers
    by_bug = {b: [i for i in fails if labels[i]["bug"] == b] for b in bugs}
    share_prim = share_culprit = 0
    for a, b in itertools.combinations(sorted(by_bug), 2):
        pa = {p for i in by_bug[a] for p in now[i]["rc"].primitives}
        pb = {p for i in by_bug[b] for p in now[i]["rc"].primitives}
        ca = {records[i].get("culprit") for i in by_bug[a]} - {"", None}
        cb = {records[i].get("culprit") for i in by_bug[b]} - {"", None}
        share_prim += bool(pa & pb)
        share_culprit += bool(ca & cb)
    print(f"   pairs of different bugs sharing a primitive: {share_prim}, a culprit pass: {share_culprit}")
    def known_ids(i):  # a label may name several entries of one bug (a wrong-value, a nan one)
        k = labels[i].get("known")
        return set(k) if isinstance(k, list) else {k} if k else set()

    known_new = [i for i in fails if known_ids(i) and now[i]["known"] is None]
    wrong_known = [i for i in fails if now[i]["known"] and now[i]["known"] not in known_ids(i)]
    print(f"   known bugs reported NEW: {len(known_new)} of {sum(bool(known_ids(i)) for i in fails)}"
          f" (goal 0){(': ' + ', '.join(known_new[:8])) if known_new else ''}")
    print(f"   repros claimed by another known bug than their label: {len(wrong_known)}"
          + "".join(f"\n      {i}: label {labels[i].get('known')}, matched {now[i]['known']}" for i in wrong_known))
    named = [i for i in ids if records[i].get("culprit") not in ("", None, "schedule")]
    confirmed = [i for i in named if records[i].get("culprit_confirmed")]
    recorded = [i for i in named if "culprit_confirmed" in records[i]]
    print(f"   culprit passes named by the probe when the labelled campaigns ran: {len(named)}; fix "
          f"test recorded for {len(recorded)}, confirmed {len(confirmed)} (today's probe on a "
          f"campaign's repros: benchmarks/culprit_confirmation.py)")
    print(f"   evidence: {dict(Counter(now[i]['rc'].evidence for i in fails))}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=Path, default=HERE / "cases.json")
    ap.add_argument("--labels", type=Path, default=HERE / "labels.json")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--show", action="store_true", help="list the root causes of split bugs")
    ap.add_argument("--steps", action="store_true",
                    help="also measure keying triggers by their culprit step alone (rejected: merges bugs)")
    ap.add_argument("--dump", type=Path, help="write each repro's verdict and root cause here "
                    "(JSON), to try identity rules without running the cases again")
    args = ap.parse_args(argv)
    records = {r["id"]: r for r in json.loads(args.cases.read_text())}
    doc = json.loads(args.labels.read_text())
    labels, held_out = doc["labels"], {int(s) for s in doc.get("held_out_seeds", [])}
    missing = sorted(set(labels) - set(records))
    if missing:
        print(f"labels without a case: {missing[:5]}", file=sys.stderr)
        return 2
    todo = [records[i] for i in labels]
    now = rekey(todo, args.workers)
    if args.dump:
        args.dump.write_text(json.dumps({i: {"status": n["status"], "known": n["known"],
                                             "sig": n["sig"].to_dict() if n["sig"] else None,
                                             "rc": n["rc"].to_dict() if n["rc"] else None}
                                         for i, n in now.items()}, indent=0))
    tuned = [i for i in labels if records[i]["seed"] not in held_out]
    kept = [i for i in labels if records[i]["seed"] in held_out]
    print(f"{len(labels)} labelled repros, {len({v['bug'] for v in labels.values()})} real bugs; "
          f"seeds {sorted({records[i]['seed'] for i in labels})}, held out {sorted(held_out)}")
    report("tuning seeds", tuned, records, labels, now, args.show)
    if kept:
        report(f"held-out seeds {sorted(held_out)}", kept, records, labels, now, args.show)
    report("all", list(labels), records, labels, now, args.show)
    # what the summary counts as distinct bugs: a known bug is one bug whichever root cause
    # its repros have (known-bug identity), the rest by root cause
    by_known = lambda n: f"known:{n['known']}" if n["known"] else n["rc"].key  # noqa: E731
    for name, group in (("tuning seeds", tuned), (f"held-out seeds {sorted(held_out)}", kept)):
        if group:
            report(f"{name}, distinct bugs (known bugs grouped by entry)", group, records, labels,
                   now, args.show, by_known)
    if args.steps:
        for name, group in (("tuning seeds", tuned), (f"held-out seeds {sorted(held_out)}", kept)):
            if group:
                report(f"{name}, culprit-step identity", group, records, labels, now, args.show, step_key)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What a campaign gives its user per CPU-hour: cases, buckets, verified repros, root causes.

    python benchmarks/root_causes_per_hour.py [--minutes 10] [--workers 2] [--seed 7]
        [--minimize-budget SECONDS] [--python PYTHON] [--out DIR] [--keep]

One fixed-seed campaign of ``--minutes`` (default generation settings, llvm), run as a user
runs it — ``python -m fuzzharness run --seed S --time-budget T --workers W
--minimize-budget M`` in a fresh process — including its minimization of new buckets
(during the campaign and up to ``M`` seconds after it; default ``M`` = the campaign's time,
capped at 120 s like the CLI's default, so a short run is not all minimization).  Then,
from its database:

* cases and cases/s (of the campaign's own time);
* buckets: all findings, new (no known-bug match), probably known;
* new buckets by severity class (wrong output / crash of the kernel, hang, compile error,
  reference mismatch) and how many of each were minimized and verified;
* minimized buckets (a repro was written), verified repros (it reproduced in a fresh
  process), root causes (verified repros by root-cause key) and **distinct bugs** (root
  causes with known bugs grouped by entry: the count ``fuzzharness status`` prints, read
  with the harness's own ``read_status``), and for each distinct bug the time from the
  campaign's start to its first verified repro;
* the minimized schedule lengths (trace instructions without lookups: the ``sch`` calls a
  maintainer reads), and the share of repros whose schedule is Python calls and whose
  reference is the operator's numpy definition;
* each per CPU-hour — the CPU time of the whole process tree (driver, workers, lanes,
  verification processes: ``getrusage(RUSAGE_CHILDREN)``) and, for comparison, the nominal
  CPU time ``wall × workers``.

and the **program classes built** (:func:`fuzzharness.campaign.feedback.case_classes` over
every stored case: reach classes, workload × primitive, step pairs, graph operators, ...) and
how many cases were feedback mutants (``--feedback P`` runs the campaign with feedback).

``--analyse DIR [DIR ...]`` only reads campaigns (this benchmark's, with its ``bench.json``;
any other campaign directory with its wall time read from the sessions table and the
nominal CPU time).  Two campaigns of one seed run side by side (with and without feedback)
compare that way, one core each.

``--python`` runs the campaign with another interpreter (another checkout's venv), to compare
before and after a change on the same seed; a database without root-cause columns reports
them as n/a.  The machine may be shared: the 1-minute load average is printed before and
after, and only runs under the same load compare.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from fuzzharness import store

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: the comment a repro's reference carries when its values are numbers, not numpy source
EMBEDDED = "float64 reference for exactly these inputs, computed by tvm-fuzzharness"
CLASSES = ("wrong output / kernel crash", "hang / compiler crash", "compile error",
           "reference mismatch / divergence")


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}"


def run_campaign(python: str, out: Path, seed: int, seconds: float, workers: int,
                 minimize: float, feedback: float = 0.0) -> tuple[float, float, int]:
    """Run the campaign; (wall seconds, CPU seconds of the process tree, exit status)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    env = dict(os.environ, FUZZHARNESS_MINIMIZE_BUDGET=f"{minimize:g}")
    p = subprocess.run([python, "-m", "fuzzharness", "run", "--seed", str(seed), "--time-budget",
                        f"{seconds:g}", "--workers", str(workers), "--minimize-budget",
                        f"{minimize:g}", "--no-progress", "--target", "llvm", "--out", str(out)]
                       + (["--feedback", f"{feedback:g}"] if feedback else []),
                       capture_output=True, text=True, env=env,
                       cwd=out)  # not this checkout: `-m` would import its package, not --python's
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    (out / "stdout.txt").write_text(p.stdout)
    (out / "stderr.txt").write_text(p.stderr)
    return wall, cpu, p.returncode


def analyse(out: Path, known_file: str | None = None) -> dict:
    """Counts from the campaign database (read-only; plain SQL plus the harness's own known-
    bug matcher, so an older database reads too)."""
    from fuzzharness.buckets.known_bugs import KnownBugs
    from fuzzharness.buckets.priority import severity
    from fuzzharness.buckets.signatures import Signature
    from fuzzharness.core.traces import primitive_sequence

    con = sqlite3.connect(f"file:{out / 'results.sqlite'}?mode=ro", uri=True)
    campaign = store.campaign_row(con) or {}
    stored = campaign.get("settings") or {}
    cases = store.count_results(con)
    finished = [f for (f,) in store.result_rows(con, ("finished",)) if f is not None]
    first, last = (min(finished), max(finished)) if finished else (None, None)
    tvm = (campaign.get("versions") or {}).get("tvm")
    known = KnownBugs.load(known_file or stored.get("known_bugs") or None)
    buckets = []
    for b in store.bucket_rows(con):
        key, count = b["key"], b["count"]
        sig = Signature.from_dict(b["signature"])
        if sig.is_finding:
            buckets.append((key, sig, count))
    records = store.repro_rows(con)
    has_rc = "root_cause" in store.columns(con, "repros")
    repros = {b: {"reproduced": bool(r["reproduced"]), "path": r.get("path"),
                  "case": r.get("case_json"), "rc": r.get("root_cause")} for b, r in records.items()}
    from fuzzharness.buckets.root_causes import RootCause

    fields = {b: (Signature.from_dict(json.loads(r["signature"])),
                  RootCause.from_dict(json.loads(r["root_cause_fields"])))
              for b, r in records.items()
              if r["reproduced"] and r.get("root_cause_fields") and r.get("signature")}
    new, probable, raw_new = [], [], 0
    for key, sig, _ in buckets:
        m = known.classify(sig, tvm)  # the raw bucket
        raw_new += m is None
        if key in fields:  # what its verified, minimized case is (as the summary says)
            m = known.classify(fields[key][0], tvm, fields[key][1])
        if m is None:
            new.append((key, sig))
        elif not m.confirmed:
            probable.append((key, sig))
    by_class = {c: [0, 0, 0] for c in CLASSES}  # new buckets, minimized, verified
    for key, sig in new:
        row = by_class[CLASSES[severity(sig)]]
        row[0] += 1
        row[1] += key in repros
        row[2] += bool(repros.get(key, {}).get("reproduced"))
    verified = [r for r in repros.values() if r["reproduced"]]
    lengths, python_calls, numpy_ref, single = [], 0, 0, 0
    for r in verified:
        case = json.loads(r["case"]) if r["case"] else {}
        single_kernel = (case.get("workload") or {}).get("name") != "graph"
        if single_kernel:  # a graph case's schedules are per fused function
            lengths.append(len(primitive_sequence((case.get("schedule") or {}).get("trace"))))
        text = (Path(r["path"]) / "repro.py").read_text() if r["path"] and (Path(r["path"]) / "repro.py").exists() else ""
        python_calls += "apply_json_to_schedule" not in text
        if single_kernel:
            single += 1
            numpy_ref += bool(text) and EMBEDDED not in text
    from fuzzharness.campaign.feedback import case_classes

    classes: set[str] = set()
    mutants = 0
    for (case_json,) in store.result_rows(con, ("case_json",)):
        if case_json is None:
            continue
        case = json.loads(case_json)
        classes |= case_classes(case)
        mutants += "mutant_of" in (case.get("origin") or {})
    distinct, to_first = None, []
    try:  # the harness's own grouping (an older database or checkout may not have it)
        from fuzzharness.campaign.status import read_status

        distinct = read_status(out, known_file)["distinct_bugs"]
        start = min((s for _, s, _, _ in store.session_rows(con)), default=None)
        created = {b: r.get("created") for b, r in records.items() if r["reproduced"]}
        for bug in distinct["bugs"]:
            times = [created[b] for b in bug["buckets"] if created.get(b) is not None]
            if times and start is not None:
                to_first.append(round(min(times) - start, 1))
    except Exception as e:  # noqa: BLE001 - reported as n/a
        print(f"(distinct bugs n/a: {type(e).__name__}: {e})")
    return {
        "distinct": distinct, "to_first": sorted(to_first), "classes": len(classes),
        "mutants": mutants,
        "cases": cases, "span": (last - first) if first is not None else 0.0,
        "buckets": len(buckets), "new": len(new), "probably_known": len(probable),
        "raw_new": raw_new,
        "by_class": by_class, "minimized": len(repros), "verified": len(verified),
        "root_causes": len({r["rc"] for r in verified if r["rc"]}) if has_rc else None,
        "lengths": lengths, "python_calls": python_calls, "numpy_reference": numpy_ref,
        "single_kernel": single,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--minimize-budget", type=float, help="seconds after the campaign")
    ap.add_argument("--python", default=sys.executable, help="interpreter of the checkout to run")
    ap.add_argument("--out", type=Path, help="campaign directory (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary campaign directory")
    ap.add_argument("--feedback", type=float, default=0.0, help="the campaign's --feedback share")
    ap.add_argument("--analyse", type=Path, nargs="+", metavar="DIR",
                    help="only analyse campaigns (this benchmark's, or any campaign directory)")
    args = ap.parse_args()
    for d in args.analyse or ():
        print(f"== {d}")
        report(analyse(d), *_run_of(d), d)
    if args.analyse:
        return 0
    seconds = args.minutes * 60
    minimize = args.minimize_budget if args.minimize_budget is not None else min(seconds, 120.0)
    tmp = None
    if args.out is None:
        tmp = tempfile.mkdtemp(prefix="rcph-")
        out = Path(tmp) / "campaign"
    else:
        out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    print(f"campaign: seed {args.seed}, {args.minutes:g} min, {args.workers} workers, minimize "
          f"≤ {minimize:g} s after, python {args.python}; {load()}", flush=True)
    wall, cpu, rc = run_campaign(args.python, out, args.seed, seconds, args.workers, minimize,
                                 args.feedback)
    (out / "bench.json").write_text(json.dumps({"wall": wall, "cpu": cpu, "rc": rc,
                                                "workers": args.workers, "python": args.python}))
    report(analyse(out), wall, cpu, rc, args.workers, out)
    print(f"campaign directory: {out}" + ("" if (args.keep or tmp is None) else " (removed)"))
    if tmp is not None and not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _run_of(out: Path) -> tuple[float, float | None, int | None, int]:
    """(wall, CPU or None, exit status or None, workers) of a campaign: from this benchmark's
    bench.json, else from the campaign's sessions and settings."""
    if (out / "bench.json").exists():
        run = json.loads((out / "bench.json").read_text())
        return run["wall"], run["cpu"], run["rc"], run["workers"]
    con = sqlite3.connect(f"file:{out / 'results.sqlite'}?mode=ro", uri=True)
    wall = sum(e - s for _, s, e, _ in store.session_rows(con) if e is not None)
    workers = (store.campaign_row(con) or {})["settings"]["workers"]
    con.close()
    return wall, None, None, workers


def report(a: dict, wall: float, cpu: float | None, rc: int | None, workers: int, out: Path) -> None:
    hours, nominal = (cpu or 0.0) / 3600, wall * workers / 3600
    print(f"done in {wall:.0f} s wall, " + (f"{cpu:.0f} s CPU (process tree)" if cpu else "CPU n/a")
          + f"; exit {rc if rc is not None else 'n/a'}; {load()}")
    print(f"program classes built {a['classes']:>6}   ({a['mutants']} of the cases were feedback mutants)")
    print(f"cases                 {a['cases']:>6}   {a['cases'] / max(a['span'], 1e-9):.1f}/s over the campaign's "
          f"{a['span']:.0f} s")
    print(f"finding buckets       {a['buckets']:>6}   new {a['new']} (raw, before minimization: "
          f"{a['raw_new']}), probably known {a['probably_known']}")
    for c, (n, m, v) in a["by_class"].items():
        if n:
            print(f"  new: {c:<34} {n:>3} buckets, {m} minimized, {v} verified")
    rcs = a["root_causes"]
    print(f"minimized buckets     {a['minimized']:>6}")
    print(f"verified repros       {a['verified']:>6}")
    print(f"root causes           {rcs if rcs is not None else 'n/a':>6}")
    d = a.get("distinct")
    if d is not None:
        print(f"distinct bugs         {d['count']:>6}   ({d['root_causes']} root causes, from {d['buckets']} "
              f"buckets, {d['verified_repros']} verified repros, {d['attached']} attached unminimized)")
    if a.get("to_first"):
        t = a["to_first"]
        print(f"time to the first verified repro of each distinct bug (s from the start): median "
              f"{statistics.median(t):g}, first {t[0]:g}, last {t[-1]:g}; " + ", ".join(f"{x:g}" for x in t))
    if a["lengths"]:
        dist = Counter(min(n, 9) for n in a["lengths"])
        print("minimized schedule length (single-kernel repros; sch calls, lookups excluded): median "
              f"{statistics.median(a['lengths']):g}; ≤ 5: {sum(n <= 5 for n in a['lengths'])}/"
              f"{len(a['lengths'])}; " + ", ".join(f"{'9+' if k == 9 else k}: {v}" for k, v in sorted(dist.items())))
        print(f"repros with the schedule as sch calls: {a['python_calls']}/{a['verified']}; "
              f"single-kernel repros with a numpy-definition reference: "
              f"{a['numpy_reference']}/{a['single_kernel']}")
    for label, h in (("CPU-hour (process tree)", hours), ("nominal CPU-hour (wall × workers)", nominal)):
        def per(x, h=h):
            return f"{x / h:.1f}" if h > 0 else "n/a"
        print(f"per {label}: {per(a['cases'])} cases, {per(a['new'])} new buckets, "
              f"{per(a['minimized'])} minimized, {per(a['verified'])} verified repros, "
              + (f"{per(rcs)} root causes" if rcs is not None else "root causes n/a")
              + (f", {per(d['count'])} distinct bugs" if d is not None else ""))


if __name__ == "__main__":
    sys.exit(main())

"""Do findings hold up alone, and does a seed give the same verdicts twice?  At what cost?

    python benchmarks/verdict_stability.py [--cases 600] [--seed 20261124] [--workers 2]
        [--passing 300] [--out DIR] [--steps a,off,b,findings,passing]

The campaign is the one of issue 15, ``fuzzharness run --seed 20261124 --max-cases 600
--time-budget 0 --workers 2 --no-minimize``, run as the CLI runs it:

``a``         with confirmation and heap hygiene (the defaults)          → ``DIR/a``
``off``       the same stream with ``--no-confirm --no-hygiene``         → ``DIR/off``
``b``         ``a`` again (same seed, same settings)                      → ``DIR/b``
``findings``  every finding stored by ``a`` (and by ``off``, for comparison) re-run alone, each
              in a new worker process (what ``fuzzharness replay --db DIR IDX`` does; a case
              that failed while its schedule was drawn is drawn again from seed and index)
``passing``   ``--passing`` of ``a``'s passing cases (evenly spread over the indices) re-run
              alone, each in a fresh worker (forked from a zygote that has run nothing:
              :mod:`fuzzharness.engine.fresh`; a fresh process each would cost a TVM import)

``parts``     what each part costs per case, interleaved so that load changes hit all alike:
              the first ``--parts-cases`` cases of the stream, each run in turn by three
              one-worker pools — no hygiene; glibc's malloc checks without guard zones; both —
              summing the workers' own per-case times (worker start-up excluded)

and reports, with the issue's goals:

* findings of ``a`` that replay alone to their stored status (goal 100 %) — and, apart, the
  ``heap_damage`` findings blamed by replaying a worker's cases (they pass alone by
  definition; their pair probe is stored with them);
* findings of ``a`` that do not reproduce alone at all (goal 0);
* passing cases of ``a`` that fail alone (goal 0);
* cases whose status differs between ``a`` and ``b`` (goal 0);
* throughput cost of confirmation + hygiene: ``a`` against ``off``, cases/s end to end from
  each campaign's own summary (goal ≤ 10 %).  ``a`` and ``off`` run one after the other; the
  1-minute load average before and after each is printed, since the machine may be shared.

Runnable in pieces: a step whose campaign directory already holds all its cases is not run
again, so ``--steps a`` today and ``--steps off,findings`` tomorrow add up (same ``--out``).
Numbers also go to ``DIR/verdict_stability.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from fuzzharness import store

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STEPS = ("a", "off", "b", "findings", "passing", "parts")


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}"


def rows(out: Path) -> dict[int, dict]:
    """idx → status, bucket, confirmation, case, verdict of a campaign directory."""
    con = sqlite3.connect(f"file:{out / 'results.sqlite'}?mode=ro", uri=True)
    try:
        conf = "confirmation" in store.columns(con, "results")
        got = store.result_rows(con, ("idx", "status", "bucket", "case_json", "verdict_json",
                                      *(("confirmation",) if conf else ()))).fetchall()
    finally:
        con.close()
    return {r[0]: {"status": r[1], "bucket": r[2], "confirmation": r[5] if conf else None,
                   "case": json.loads(r[3]) if r[3] else None, "verdict": json.loads(r[4])}
            for r in got}


def done(out: Path, cases: int) -> bool:
    try:
        return len(rows(out)) >= cases
    except sqlite3.Error:
        return False


def campaign(out: Path, args, *extra: str) -> dict:
    """Run (or find already run) one campaign; its rate from its own summary."""
    record = out / "run.json"
    if done(out, args.cases) and record.exists():
        print(f"  {out.name}: already run ({json.loads(record.read_text())['summary']})")
        return json.loads(record.read_text())
    if out.exists():
        import shutil

        shutil.rmtree(out)  # a partial run: start over, so that its timing is whole
    cmd = [sys.executable, "-m", "fuzzharness", "run", "--seed", str(args.seed), "--max-cases",
           str(args.cases), "--time-budget", "0", "--workers", str(args.workers),
           "--no-minimize", "--no-progress", "--target", args.target, "--out", str(out), *extra]
    before = load()
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - t0
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("campaign seed"))
    m = re.search(r": (\d+) cases in ([\d.]+) s", line)
    confirmations = next((ln for ln in p.stdout.splitlines() if ln.startswith("failures re-run")), "")
    result = {"command": " ".join(cmd[1:]), "summary": line, "cases": int(m.group(1)),
              "seconds": float(m.group(2)), "wall": round(wall, 1), "load_before": before,
              "load_after": load(), "confirmations": confirmations}
    record.write_text(json.dumps(result, indent=1))
    print(f"  {out.name}: {line}  [{before} → {result['load_after']}]"
          + (f"\n      {confirmations}" if confirmations else ""))
    return result


def replay_alone(out_dir: Path, stored: dict[int, dict], indices: list[int], *,
                 fresh_fork: bool, timeout: float) -> dict[int, dict]:
    """Each case alone in a fresh worker: idx → verdict dict.  A case that failed while its
    schedule was drawn (none stored) is drawn again from the campaign's seed and index."""
    from fuzzharness.campaign.db import ResultsDB
    from fuzzharness.engine.pool import WorkerPool

    db = ResultsDB(out_dir)
    stored_campaign = db.campaign()
    db.close()
    gen = stored_campaign["settings"]["generation"]

    def task(i: int) -> dict:
        if stored[i]["case"]:
            return {"task": i, "case": stored[i]["case"], "fresh": fresh_fork}
        return {"task": i, "fresh": fresh_fork,
                "generate": {"seed": stored_campaign["seed"], "index": i, "settings": gen}}

    out: dict[int, dict] = {}
    if fresh_fork:
        with WorkerPool(1, timeout=timeout) as pool:
            for r in pool.run([task(i) for i in indices]):
                out[r.task["task"]] = r.verdict.to_dict()
        return out
    for i in indices:  # a new process each, as `fuzzharness replay` does
        with WorkerPool(1, timeout=timeout) as pool:
            (r,) = list(pool.run([task(i)]))
        out[i] = r.verdict.to_dict()
    return out


def judge_findings(name: str, out_dir: Path, timeout: float) -> dict:
    from fuzzharness.campaign.confirm import status_class
    from fuzzharness.core.verdict import Status

    stored = rows(out_dir)
    findings = [i for i, r in stored.items() if Status(r["status"]).is_finding and r["bucket"]]
    blamed = [i for i in findings if stored[i]["verdict"]["details"].get("victim") is not None]
    plain = [i for i in findings if i not in blamed]
    print(f"  {name}: {len(findings)} findings ({len(blamed)} blamed by replaying a worker's "
          f"cases); replaying {len(plain)} alone, each in a fresh worker process ...")
    again = replay_alone(out_dir, stored, plain, fresh_fork=False, timeout=timeout)
    same_status = [i for i in plain if again.get(i, {}).get("status") == stored[i]["status"]]
    same_bits = [i for i in same_status if again[i].get("digest") == stored[i]["verdict"].get("digest")]
    gone = [i for i in plain if i in again and (
        not Status(again[i]["status"]).is_finding
        or status_class(Status(again[i]["status"])) != status_class(Status(stored[i]["status"])))]
    other = {i: f"{stored[i]['status']} → {again[i]['status']}" for i in plain
             if i in again and again[i]["status"] != stored[i]["status"]}
    result = {"findings": len(findings), "blamed_heap_damage": len(blamed), "replayed": len(plain),
              "same_status": len(same_status), "same_bits": len(same_bits),
              "not_reproduced_alone": gone, "status_changed": other}
    pct = 100 * len(same_status) / len(plain) if plain else 100.0
    print(f"    replay alone to their stored status: {len(same_status)}/{len(plain)} ({pct:.0f} %; "
          f"goal 100 %), same output bits: {len(same_bits)}")
    print(f"    do not reproduce alone at all: {len(gone)} (goal 0) {gone or ''}")
    if other:
        print(f"    status changed: {other}")
    return result


def parts(args) -> dict:
    """Per-case cost of the malloc checks and of the guard zones (see the module doc)."""
    from fuzzharness.campaign.settings import CampaignSettings
    from fuzzharness.core.hygiene import GUARD_ZONES_ENV
    from fuzzharness.engine.pool import WorkerPool

    gen = CampaignSettings().generation.to_dict()
    configs = {"none": (False, "0"), "malloc checks": (True, "0"), "malloc checks + zones": (True, "1")}
    pools = {name: WorkerPool(1, timeout=args.timeout, hygiene=h,
                              env={**os.environ, GUARD_ZONES_ENV: z})
             for name, (h, z) in configs.items()}
    seconds = dict.fromkeys(configs, 0.0)
    counted = 0
    try:
        for i in range(args.parts_cases):
            task = {"task": i, "generate": {"seed": args.seed, "index": i, "settings": gen}}
            names = list(configs)
            names = names[i % 3:] + names[: i % 3]  # rotate who goes first
            got = {n: next(iter(pools[n].run([task]))) for n in names}
            if len({r.verdict.status for r in got.values()}) == 1:  # the same work in each
                counted += 1
                for n, r in got.items():
                    seconds[n] += r.elapsed
    finally:
        for pool in pools.values():
            pool.close()
    base = seconds["none"] / max(1, counted)
    result = {"cases": counted, "ms_per_case": {n: round(1000 * t / max(1, counted), 1)
                                                 for n, t in seconds.items()}}
    print(f"  parts: {counted} cases (same status in all three), ms per case: " + ", ".join(
        f"{n} {1000 * t / max(1, counted):.0f}" + (f" ({100 * (t / max(1, counted) / base - 1):+.1f} %)"
                                                    if n != "none" and base else "")
        for n, t in seconds.items()) + f"  ({load()})")
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=600)
    ap.add_argument("--seed", type=int, default=20261124)
    ap.add_argument("--target", default="llvm",
                    help="the issue's campaign is llvm (the default campaign mixes in OpenCL "
                         "and Adreno cases where an OpenCL runtime is found)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--passing", type=int, default=300, help="passing cases replayed alone")
    ap.add_argument("--timeout", type=float, default=120.0, help="per replayed case")
    ap.add_argument("--parts-cases", type=int, default=150, help="cases of the parts step")
    ap.add_argument("--out", type=Path, default=Path("fuzz-runs/verdict-stability"))
    ap.add_argument("--steps", default=",".join(STEPS),
                    help=f"comma-separated, any of {', '.join(STEPS)} (default: all)")
    args = ap.parse_args()
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    if bad := set(steps) - set(STEPS):
        ap.error(f"unknown steps {sorted(bad)}")
    args.out.mkdir(parents=True, exist_ok=True)
    report_path = args.out / "verdict_stability.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    report["settings"] = {"cases": args.cases, "seed": args.seed, "workers": args.workers,
                          "target": args.target}
    print(f"verdict stability: seed {args.seed}, {args.cases} cases, {args.workers} workers, "
          f"out {args.out}  ({load()})")
    a, off, b = args.out / "a", args.out / "off", args.out / "b"
    if "a" in steps:
        report["a"] = campaign(a, args)
    if "off" in steps:
        report["off"] = campaign(off, args, "--no-confirm", "--no-hygiene")
    if "b" in steps:
        report["b"] = campaign(b, args)
    if "findings" in steps and done(a, args.cases):
        report["findings_a"] = judge_findings("a (confirmation + hygiene)", a, args.timeout)
        if done(off, args.cases):
            report["findings_off"] = judge_findings("off (neither)", off, args.timeout)
    if "passing" in steps and done(a, args.cases):
        stored = rows(a)
        passing = [i for i, r in stored.items() if r["status"] == "pass" and r["case"]]
        step = max(1, len(passing) / max(1, args.passing))
        sample = sorted({passing[int(k * step)] for k in range(min(args.passing, len(passing)))})
        print(f"  passing: replaying {len(sample)} of {len(passing)} passing cases of a alone ...")
        again = replay_alone(a, stored, sample, fresh_fork=True, timeout=args.timeout)
        from fuzzharness.core.verdict import Status

        failing = {i: again[i]["status"] for i in sample
                   if i in again and Status(again[i]["status"]).is_finding}
        report["passing"] = {"replayed": len(sample), "fail_alone": failing}
        print(f"    fail alone: {len(failing)} (goal 0) {failing or ''}")

    if "parts" in steps:
        report["parts"] = parts(args)

    # from what is there, whichever steps ran now
    if done(a, args.cases) and done(b, args.cases):
        ra, rb = rows(a), rows(b)
        differ = {i: f"{ra[i]['status']} / {rb[i]['status']}" for i in ra
                  if i in rb and ra[i]["status"] != rb[i]["status"]}
        report["a_vs_b"] = {"differ": differ}
        print(f"  status differs between two runs of the seed: {len(differ)} of {len(ra)} "
              f"(goal 0) {differ or ''}")
    if "a" in report and "off" in report:
        ra_, ro = report["a"], report["off"]
        rate_a, rate_off = ra_["cases"] / ra_["seconds"], ro["cases"] / ro["seconds"]
        cost = 100 * (1 - rate_a / rate_off)
        report["cost_percent"] = round(cost, 1)
        print(f"  throughput: {rate_a:.2f} cases/s with confirmation + hygiene, {rate_off:.2f} "
              f"without: {cost:.1f} % slower (goal ≤ 10 %; loads {ra_['load_before']} → "
              f"{ra_['load_after']} and {ro['load_before']} → {ro['load_after']})")
    report_path.write_text(json.dumps(report, indent=1, default=str))
    print(f"numbers: {report_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

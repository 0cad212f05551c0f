"""What mixing whole-graph (Relax) cases into a campaign costs in throughput.

    python benchmarks/graph_mix.py [--cases 120] [--seed 1] [--workers 2] [--fractions 0,0.2]

Runs one real campaign per ``graph_fraction`` (same seed, same number of cases, worker
processes, SQLite — everything a campaign does) and prints the steady cases/s (from the
stored commit times, worker start-up excluded), the share of graph cases, and the mean
worker-side seconds of a graph case and of a single-PrimFunc case, each split by stage.
The machine may be shared: the 1-minute load average is printed before and after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from fuzzharness import store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}"


def run(seed: int, n: int, workers: int, fraction: float, out: Path) -> dict:
    from fuzzharness.campaign.driver import Campaign
    from fuzzharness.campaign.settings import CampaignSettings
    from fuzzharness.generators.cases import GenSettings

    settings = CampaignSettings(seed=seed, time_budget=0.0, max_cases=n, workers=workers,
                                generation=GenSettings(graph_fraction=fraction))
    t0 = time.perf_counter()
    Campaign(out, settings, progress=False).run()
    wall = time.perf_counter() - t0
    con = sqlite3.connect(out / "results.sqlite")
    rows = store.result_rows(con, ("finished", "case_json", "verdict_json")).fetchall()
    con.close()
    finished = sorted(r[0] for r in rows)
    steady = (len(finished) - workers) / (finished[-1] - finished[workers - 1])
    kinds: dict[str, dict[str, float]] = {"graph": {}, "tir": {}}
    counts = {"graph": 0, "tir": 0}
    statuses: dict[str, dict[str, int]] = {"graph": {}, "tir": {}}
    for _, case_json, verdict_json in rows:
        kind = "graph" if case_json and json.loads(case_json)["workload"]["name"] == "graph" else "tir"
        counts[kind] += 1
        v = json.loads(verdict_json)
        statuses[kind][v["status"]] = statuses[kind].get(v["status"], 0) + 1
        for k, s in v.get("timings", {}).items():
            kinds[kind][k] = kinds[kind].get(k, 0.0) + s
    return {"wall": wall, "rate": steady, "counts": counts, "statuses": statuses,
            "per_case": {k: {s: t / max(counts[k], 1) for s, t in sorted(v.items())}
                         for k, v in kinds.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=120)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--fractions", default="0,0.2")
    args = ap.parse_args()
    fractions = [float(f) for f in args.fractions.split(",")]
    print(f"graph mix: {args.cases} cases of seed {args.seed}, {args.workers} workers, {load()}")
    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        for f in fractions:
            before = load()
            r = run(args.seed, args.cases, args.workers, f, Path(tmp) / f"f{f}")
            rates[f] = r["rate"]
            print(f"graph_fraction {f:<4} {r['rate']:6.2f} cases/s steady ({r['wall']:.1f} s wall; "
                  f"{r['counts']['graph']} graph + {r['counts']['tir']} TIR cases; {before} → {load()})")
            for kind in ("graph", "tir"):
                if r["counts"][kind]:
                    total = sum(r["per_case"][kind].values())
                    stages = ", ".join(f"{k} {v * 1000:.0f}" for k, v in r["per_case"][kind].items())
                    print(f"    {kind:<5} {total:.3f} s/case worker-side (ms: {stages}); "
                          f"{r['statuses'][kind]}")
    base = rates.get(0.0)
    if base:
        for f, rate in rates.items():
            if f:
                print(f"  throughput at graph_fraction {f}: {rate / base:.3f} of graph_fraction 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())

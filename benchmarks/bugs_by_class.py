"""Each distinct bug of a campaign with the program classes its repro needs.

    python benchmarks/bugs_by_class.py DIR [DIR ...] [--new-only]

For every distinct bug (``fuzzharness status DIR``'s grouping: verified repros by root cause,
known bugs by entry) of each campaign: known or new, its title, and what built it —

* the steps of its bucket's first case that were **illegal proposals** (a primitive proposed
  without its legality filter: ``generators/schedules/base.py`` ILLEGAL_PERCENT) and whose
  call the minimized repro's trace still makes, with their reach classes (``method @ site
  class``) — a hint to read the repro by, not a proof;
* whether the first case of any of its buckets was a **feedback mutant** (and of which edit);
* the reach classes of those of its accepted steps the minimized trace still makes.

It reads the campaign database only (read-only), through the harness's own status reader.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

from fuzzharness import store

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def bugs(out: Path) -> list[dict]:
    from fuzzharness.campaign.reach import step_reach
    from fuzzharness.campaign.status import read_status
    from fuzzharness.core.traces import primitive_sequence

    status = read_status(out)
    con = sqlite3.connect(f"file:{out / 'results.sqlite'}?mode=ro", uri=True)
    repro_case = {b: json.loads(r["case_json"]) for b, r in store.repro_rows(con).items()
                  if r.get("reproduced") and r.get("case_json")}
    case_of = dict(store.result_rows(con, ("idx", "case_json")))
    example = {}
    for key, idx in ((b["key"], b["example_idx"]) for b in store.bucket_rows(con)):
        row = (case_of[idx],) if idx in case_of else None
        example[key] = json.loads(row[0]) if row and row[0] else None
    con.close()
    out_rows = []
    for bug in status["distinct_bugs"]["bugs"]:
        members = list(bug["buckets"]) + list(bug.get("attached") or ())
        case = next((repro_case[b] for b in bug["buckets"] if b in repro_case), None)
        # a minimized case records its trace, not its steps: the steps of its bucket's first
        # (raw) case whose first call the minimized trace still makes
        kept = set(primitive_sequence(((case or {}).get("schedule") or {}).get("trace")))
        raw = next((example[b] for b in bug["buckets"] if example.get(b)), None)
        steps = [s for s in ((raw or {}).get("origin") or {}).get("steps") or []
                 if s.get("outcome") == "accepted" and (s.get("calls") or [None])[0] in kept]
        illegal = sorted({f"{s['primitive']}: " + ", ".join(step_reach(s.get("calls") or [],
                                                                        s.get("site") or [],
                                                                        s["primitive"]))
                          for s in steps if s.get("illegal")})
        reach = sorted({r for s in steps for r in step_reach(s.get("calls") or [],
                                                             s.get("site") or [], s["primitive"])})
        mutants = sorted({(example[b]["origin"]["mutant_of"]["op"]) for b in members
                          if (example.get(b) or {}).get("origin", {}).get("mutant_of")})
        out_rows.append({"known": bug["known"], "title": bug["title"], "cases": bug["cases"],
                         "illegal": illegal, "mutant": mutants, "reach": reach,
                         "workload": ((case or {}).get("workload") or {}).get("name", "?"),
                         "repro": bug["repro"]})
    return out_rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--new-only", action="store_true", help="leave the known bugs out")
    args = ap.parse_args()
    for d in args.dirs:
        rows = bugs(d)
        new = [r for r in rows if not r["known"]]
        print(f"== {d}: {len(rows)} distinct bugs, {len(new)} new; "
              f"{sum(bool(r['illegal']) for r in rows)} need an illegal proposal, "
              f"{sum(bool(r['mutant']) for r in rows)} first seen in a feedback mutant")
        for r in new if args.new_only else rows:
            tag = "NEW  " if not r["known"] else "known"
            print(f"{tag} {r['cases']:>4} cases  {r['workload']:<18} {r['title'][:110]}")
            if r["illegal"]:
                print(f"        illegal proposal: {'; '.join(r['illegal'])}")
            if r["mutant"]:
                print(f"        first seen in a mutant ({', '.join(r['mutant'])})")
            print(f"        reach: {', '.join(r['reach']) or '(no accepted step)'}")
            print(f"        repro: {r['repro']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The feature census of campaigns, side by side: what steering (generators/steering.py) buys.

    python benchmarks/census.py DIR [DIR ...]                 # stored campaigns
    python benchmarks/census.py --run OUT --cases 600 [--seed S]   # run a default campaign first

For each campaign directory: per target, the lowered cases and the share of them with each
goal feature of :data:`fuzzharness.execution.census.GOALS` (flagged below 2 %), and — the goal for
Adreno texture placement — the share of *all* the campaign's cases whose lowered program has
a buffer in a texture scope (flagged below 10 %).  Numbers come from the campaign's coverage
table (fuzzharness/campaign/census_table.py).
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
from pathlib import Path

from fuzzharness import store

GOAL_SHARE, TEXTURE_GOAL = 0.02, 0.10


def census(d: Path) -> tuple[int, dict[str, int], dict[tuple[str, str], int]]:
    con = sqlite3.connect(f"file:{d / 'results.sqlite'}?mode=ro", uri=True)
    try:
        total = store.count_results(con)
        lowered, feats = {}, {}
        for axis, value, drawn, _, accepted, _, _ in store.coverage_rows(con):
            if axis == "census":
                lowered[value] = accepted
            elif axis == "feature":
                target, feature = value.split(" ", 1)
                feats[(target, feature)] = drawn
        return total, lowered, feats
    finally:
        con.close()


def main() -> int:
    from fuzzharness.execution.census import GOALS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", type=Path)
    ap.add_argument("--run", type=Path, metavar="OUT", help="run a default campaign into OUT first")
    ap.add_argument("--cases", type=int, default=600)
    ap.add_argument("--seed", type=int, default=20261124)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    dirs = list(args.dirs)
    if args.run is not None:
        cmd = [sys.executable, "-m", "fuzzharness", "run", "--seed", str(args.seed),
               "--max-cases", str(args.cases), "--workers", str(args.workers), "--out",
               str(args.run), "--no-minimize", "--no-progress"]
        print("$ " + " ".join(cmd), flush=True)
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
        dirs.append(args.run)
    if not dirs:
        ap.error("name campaign directories or --run OUT")
    data = [(d, *census(d)) for d in dirs]
    targets = sorted({t for *_, lowered, _ in data for t in lowered})
    names = [d.name[-28:] for d in dirs]
    for target in targets:
        print(f"\n{target}: lowered cases " + "  ".join(
            f"{n}: {lowered.get(target, 0)}" for n, (_, _, lowered, _) in zip(names, data, strict=True)))
        print(f"  {'feature':<38}" + "".join(f"{n[-16:]:>18}" for n in names))
        for f in GOALS:
            cells = []
            for _, _, lowered, feats in data:
                n = lowered.get(target, 0)
                share = feats.get((target, f), 0) / n if n else 0.0
                flag = " <" if n and share < GOAL_SHARE else "  "
                cells.append(f"{feats.get((target, f), 0):>6} {100 * share:6.1f} %{flag}")
            print(f"  {f:<38}" + "".join(f"{c:>18}" for c in cells))
    print("\ntexture scope in the lowered program, share of all cases (goal ≥ 10 %):")
    for n, (_, total, _, feats) in zip(names, data, strict=True):
        tex = sum(c for (t, f), c in feats.items() if f == "scope:texture")
        flag = "" if total and tex / total >= TEXTURE_GOAL else "  (under the goal)"
        print(f"  {n}: {tex} of {total} cases = {100 * tex / max(total, 1):.1f} %{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Collect the verified repros of campaigns into the dedup benchmark's case list.

    python benchmarks/dedup/collect.py CAMPAIGN_DIR [CAMPAIGN_DIR ...] [--out cases.json]

For every verified repro (``repros/<bucket>/finding.json`` + ``case.json``), and every bucket
attached to a root cause unminimized (its raw first case, ``attached_to`` its root cause's
bucket), of each campaign directory (as ``fuzzharness run`` or ``benchmarks/root_causes_per_hour.py --out`` leaves it),
one record: an id (``seed<S>/<bucket>``), the seed, the minimized case (plain JSON), the
signature and culprit the campaign recorded, and the repro's schedule calls — what a person
labels by reading the repro's IR (``labels.json`` beside this file: id → bug and reason).
The records are plain data; ``benchmarks/dedup_precision.py`` re-runs each case with the
current code to key it.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

from fuzzharness import store

HERE = Path(__file__).resolve().parent


def schedule_lines(script: str) -> list[str]:
    """The schedule calls (a graph's: each fused function's, after its ``def``)."""
    out = []
    for ln in script.splitlines():
        if ln.startswith("def ") and ln.rstrip().endswith("(sch):") and ln[4:].split("(")[0] != "schedule":
            out.append("# " + ln[4:].split("(")[0])
        elif ln.startswith("    ") and ("sch." in ln or "s_tir.Trace" in ln) and "def " not in ln:
            out.append(ln.strip())
    return out


def records(campaign: Path) -> list[dict]:
    conn = sqlite3.connect(f"file:{campaign / 'results.sqlite'}?mode=ro", uri=True)
    seed = int(store.campaign_row(conn)["seed"])
    out = []
    for d in sorted((campaign / "repros").iterdir()):
        finding = d / "finding.json"
        if not finding.is_file():
            continue  # not verified (NOT-REPRODUCED.md)
        f = json.loads(finding.read_text())
        script = (d / "repro.py").read_text() if (d / "repro.py").is_file() else ""
        out.append({
            "id": f"seed{seed}/{d.name}", "seed": seed, "bucket": d.name,
            "case": json.loads((d / "case.json").read_text()),
            "signature": f.get("signature"), "culprit": f.get("culprit", ""),
            **({"culprit_confirmed": f["culprit_confirmed"]} if "culprit_confirmed" in f else {}),
            "title": f.get("title", ""), "schedule": schedule_lines(script),
        })
    buckets = {b["key"]: b for b in store.bucket_rows(conn)}
    case_of = dict(store.result_rows(conn, ("idx", "case_json")))
    # buckets attached unminimized: their raw first case
    for bucket, via in sorted(store.attachment_sources(conn).items()):
        b = buckets.get(bucket)
        case_json = case_of.get(b["example_idx"]) if b else None
        if case_json:
            out.append({"id": f"seed{seed}/{bucket}", "seed": seed, "bucket": bucket,
                        "case": json.loads(case_json), "signature": b["signature"],
                        "culprit": "", "title": "", "schedule": [], "attached_to": via})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("campaigns", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=HERE / "cases.json")
    args = ap.parse_args(argv)
    old = json.loads(args.out.read_text()) if args.out.is_file() else []
    have = {r["id"] for r in old}
    new = [r for c in args.campaigns for r in records(c) if r["id"] not in have]
    args.out.write_text(json.dumps(old + new, indent=1, sort_keys=True) + "\n")
    print(f"{len(new)} new records, {len(old) + len(new)} in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

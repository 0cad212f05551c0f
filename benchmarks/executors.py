"""Cases/s of the same campaign on each executor and device path, on this machine.

    python benchmarks/executors.py [--cases 120] [--seed 1] [--workers 2] [--ray-address ADDR]
                                   [--rounds 2]

The stream: cases ``0 .. N-1`` of one campaign seed (default generation settings, llvm), run
as real campaigns (``fuzzharness.campaign.driver.Campaign``) by

*local*     the embedded process pool;
*ray*       Ray actors (``--executor ray``) — on the cluster at ``--ray-address`` when given,
            else on a private Ray instance that the run starts (its start-up is part of the
            end-to-end time, not of the steady rate);
*rpc*       the local pool, kernels run on a TVM RPC server on 127.0.0.1
            (``python -m fuzzharness.backends.rpc_server``), one session per case.

Rates are steady-state, from the commit times stored in the database (after the first result
of each worker, so that worker start-up — importing TVM, starting actors — is excluded); the
end-to-end rate includes everything.  The variants run in turn, ``--rounds`` times, with the
1-minute load average printed before each: the machine may be shared, and only rates taken
under the same load compare.  Every variant must store the same case ids and verdicts.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fuzzharness import store

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}"


def run(out: Path, seed: int, n: int, workers: int, **settings) -> dict:
    from fuzzharness.campaign.driver import Campaign
    from fuzzharness.campaign.settings import CampaignSettings

    s = CampaignSettings(seed=seed, time_budget=0.0, max_cases=n, workers=workers, **settings)
    t0 = time.perf_counter()
    Campaign(out, s, progress=False).run()
    wall = time.perf_counter() - t0
    con = sqlite3.connect(out / "results.sqlite")
    rows = store.result_rows(con, ("finished", "case_id", "status", "digest")).fetchall()
    con.close()
    finished = sorted(r[0] for r in rows)
    steady = (len(finished) - workers) / (finished[-1] - finished[workers - 1])
    return {"wall": wall, "rate_e2e": n / wall, "rate": steady,
            # a failing case's output bits may differ run to run (a kernel that reads memory
            # it never wrote): compare them for passing cases only
            "verdicts": [(cid, st, dg if st == "pass" else None) for _, cid, st, dg in rows]}


def differences(a: list, b: list, limit: int = 4) -> str:
    """The first differing results, as ``#idx status/digest → status/digest``."""
    diff = [f"#{i} {x[1]}/{(x[2] or '')[:8]} → {y[1]}/{(y[2] or '')[:8]}"
            + ("" if x[0] == y[0] else " (other case)")
            for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y]
    if len(a) != len(b):
        diff.append(f"{len(a)} vs {len(b)} results")
    return f"{len(diff)}: " + "; ".join(diff[:limit])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=120)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ray-address", default="")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-rpc", action="store_true")
    args = ap.parse_args()

    port = free_port()
    server = None
    if not args.no_rpc:
        server = subprocess.Popen(
            [sys.executable, "-m", "fuzzharness.backends.rpc_server", "--host", "127.0.0.1",
             "--port", str(port), "--port-end", str(port + 1)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            env=dict(os.environ, PYTHONPATH=str(ROOT)))
        time.sleep(3)
    variants = {"local": {}, "ray": {"executor": "ray", "ray_address": args.ray_address}}
    if server is not None:
        variants["rpc"] = {"rpc": {"server": f"127.0.0.1:{port}"}}
    reference = None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for rnd in range(args.rounds):
                for name, extra in variants.items():
                    before = load()
                    r = run(Path(tmp) / f"{name}-{rnd}", args.seed, args.cases, args.workers,
                            **extra)
                    same = "" if reference is None or r["verdicts"] == reference else \
                        "  VERDICTS DIFFER: " + differences(reference, r["verdicts"])
                    reference = reference or r["verdicts"]
                    print(f"{name:<6} round {rnd}: {r['rate']:.2f} cases/s steady, "
                          f"{r['rate_e2e']:.2f} end to end ({r['wall']:.1f} s for {args.cases})"
                          f"  [{before} → {load()}]{same}", flush=True)
    finally:
        if server is not None:
            os.killpg(server.pid, 9)
    print(json.dumps({"cases": args.cases, "workers": args.workers, "seed": args.seed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

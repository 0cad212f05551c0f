"""Run a fuzz campaign: generate cases from a seed, build and run them with TVM in worker
processes, judge them against float64 references, and store every case and verdict in
DIR/results.sqlite.

Settings come from the embedded defaults, then --config FILE (TOML), then flags.
Exit status: 0 no findings, 1 findings, 2 usage/configuration error.
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
from pathlib import Path

HELP = "run a fuzz campaign"


def add_arguments(p) -> None:
    p.add_argument("--seed", type=int, help="campaign seed (default: random, printed)")
    p.add_argument("--time-budget", type=float, metavar="SECONDS",
                   help="stop handing out cases after this long (default 120; 0 = no limit)")
    p.add_argument("--max-cases", type=int, metavar="N", help="stop after N cases (0 = no limit)")
    p.add_argument("--workers", type=int, metavar="N", help="worker processes (default: CPU count)")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="per-case timeout (default 30)")
    p.add_argument("--memory-mb", type=int, metavar="MB",
                   help="address-space limit per worker (default 4096; 0 = none)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="campaign directory (default: fuzz-runs/<timestamp>-seed<seed>)")
    p.add_argument("--resume", type=Path, metavar="DIR",
                   help="continue the campaign stored in DIR (its stored settings are used)")
    p.add_argument("--config", type=Path, metavar="FILE", help="TOML settings file")
    p.add_argument("--workloads", help="comma-separated workload names (default: all)")
    p.add_argument("--dtypes", help="comma-separated dtype labels (default: all)")
    p.add_argument("--primitives", help="comma-separated schedule primitives (default: all)")
    p.add_argument("--max-steps", type=int, metavar="N", help="max schedule steps per case")
    p.add_argument("--target", metavar="NAME",
                   help="target preset: llvm (default), cuda (nvcc compile; runs on a GPU host), "
                        "opencl or adreno (run by pyopencl on an OpenCL CPU runtime)")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")


def _csv(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _target(name: str | None) -> dict | None:
    from fuzzharness.settings import SettingsError
    from generators.cases import TARGET_PRESETS

    if name is None:
        return None
    if name not in TARGET_PRESETS:
        raise SettingsError(f"unknown target {name!r}; known: {', '.join(TARGET_PRESETS)}")
    return dict(TARGET_PRESETS[name])


def settings_from_args(args):
    from fuzzharness.settings import CampaignSettings, load_toml

    s = load_toml(args.config) if args.config else CampaignSettings()
    over = {k: v for k, v in {
        "seed": args.seed, "time_budget": args.time_budget, "max_cases": args.max_cases,
        "workers": args.workers, "timeout": args.timeout, "memory_mb": args.memory_mb,
    }.items() if v is not None}
    if args.max_cases and args.time_budget is None and not (args.config and "time_budget" in open(args.config).read()):
        over["time_budget"] = 0.0  # --max-cases alone means "run exactly N"
    s = dataclasses.replace(s, **over)
    gen = {k: v for k, v in {
        "workloads": _csv(args.workloads), "dtypes": _csv(args.dtypes),
        "primitives": _csv(args.primitives), "max_steps": args.max_steps,
        "target": _target(args.target),
    }.items() if v is not None}
    return dataclasses.replace(s, generation=dataclasses.replace(s.generation, **gen))


def main(args, argv) -> int:
    from fuzzharness.engine.campaign import Campaign, format_summary
    from fuzzharness.errors import EXIT_FINDINGS, EXIT_OK, UsageError

    if args.resume is not None:
        if args.out is not None and args.out != args.resume:
            raise UsageError("--resume DIR already names the campaign directory; drop --out")
        campaign = Campaign(args.resume, resume=True, argv=["run", *argv],
                            progress=not args.no_progress)
    else:
        settings = settings_from_args(args).validate()
        if settings.seed is None:
            import random

            settings.seed = random.randrange(2**31)
        out = args.out or Path("fuzz-runs") / (
            datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + f"-seed{settings.seed}")
        campaign = Campaign(out, settings, argv=["run", *argv], progress=not args.no_progress)
    s = campaign.settings
    limit = []
    if s.time_budget:
        limit.append(f"{s.time_budget:g} s")
    if s.max_cases:
        limit.append(f"{s.max_cases} cases")
    print(f"fuzzharness: seed {campaign.seed}, {s.workers} workers, "
          f"{' or '.join(limit)}, target {s.generation.target.get('kind')}, out {campaign.out}",
          file=sys.stderr)
    summary = campaign.run()
    print(format_summary(summary))
    return EXIT_FINDINGS if summary.findings else EXIT_OK

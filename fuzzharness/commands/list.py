"""What a campaign can be made of: workloads (with their dtypes), dtype labels, schedule
primitives, targets (and whether this machine runs them), known bugs.

  fuzzharness list [workloads|dtypes|primitives|targets|known-bugs ...] [--json]

Read from the registries at run time, plugins included ($FUZZHARNESS_PLUGINS), so the
names are exactly what --workloads, --dtypes, --primitives and --target accept.

Exit status: 0, or 2 for an unknown section or an unreadable --known-bugs file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fuzzharness.commands.common import add_output_flags

HELP = "list workloads, dtypes, schedule primitives, targets and known bugs"
SECTIONS = ("workloads", "dtypes", "primitives", "targets", "known-bugs")


def add_arguments(p) -> None:
    p.add_argument("sections", nargs="*", metavar="SECTION",
                   help=f"what to list: {', '.join(SECTIONS)} (default: all)")
    p.add_argument("--known-bugs", type=Path, metavar="FILE",
                   help="known-bugs file (default: the packaged one)")
    add_output_flags(p, quiet=False, json_help="print the lists as JSON")


def collect(sections: list[str], known_bugs: str | None) -> dict[str, Any]:
    from fuzzharness.backends import backends
    from fuzzharness.buckets.known_bugs import KnownBugs
    from fuzzharness.generators.cases import TARGET_PRESETS
    from fuzzharness.generators.schedules import primitives
    from fuzzharness.generators.workloads import workloads
    from fuzzharness.generators.workloads.base import DTYPE_LABELS

    out: dict[str, Any] = {}
    if "workloads" in sections:
        out["workloads"] = [{"name": n, "dtypes": list(w.dtype_labels), "default": bool(w.default)}
                            for n, w in sorted(workloads.items())]
    if "dtypes" in sections:
        labels = dict(DTYPE_LABELS)
        for _, w in workloads.items():
            for d in w.dtype_labels:
                labels.setdefault(d, None)
        out["dtypes"] = [{"label": d, "input": (v or (None,) * 3)[0], "accumulate":
                          (v or (None,) * 3)[1], "output": (v or (None,) * 3)[2]}
                         for d, v in labels.items()]
    if "primitives" in sections:
        out["primitives"] = sorted(primitives.names())
    if "targets" in sections:
        rows = []
        for name, target in TARGET_PRESETS.items():
            try:
                why = backends[target["kind"]].unavailable(target)
            except Exception as e:  # noqa: BLE001 - say why, do not fail the listing
                why = f"{type(e).__name__}: {e}"
            rows.append({"name": name, "target": target, "runs_here": why is None,
                         "why_not": why or ""})
        out["targets"] = rows
        from fuzzharness.backends.opencl import device_descriptions

        out["opencl_devices"] = device_descriptions()  # or the one reason there is none
    if "known-bugs" in sections:
        bugs = KnownBugs.load(known_bugs)
        out["known_bugs"] = {"file": bugs.source, "bugs": [
            {"id": b.id, "title": b.title, "link": b.link, "status": b.status,
             "symptom": b.match.get("symptom")} for b in bugs.bugs]}
    return out


def render(data: dict[str, Any]) -> str:
    lines: list[str] = []
    if "workloads" in data:
        lines.append("workloads (--workloads; * = only when named):")
        for w in data["workloads"]:
            mark = " " if w["default"] else "*"
            lines.append(f" {mark}{w['name']:<22} {', '.join(w['dtypes'])}")
    if "dtypes" in data:
        lines.append("dtypes (--dtypes): label = inputs / accumulation / output")
        for d in data["dtypes"]:
            if d["input"]:
                lines.append(f"  {d['label']:<22} {d['input']} / {d['accumulate']} / {d['output']}")
            else:
                lines.append(f"  {d['label']}")
    if "primitives" in data:
        lines.append("schedule primitives (--primitives):")
        names = data["primitives"]
        for i in range(0, len(names), 5):
            lines.append("  " + "  ".join(f"{n:<22}" for n in names[i:i + 5]).rstrip())
    if "targets" in data:
        lines.append("targets (--target):")
        for t in data["targets"]:
            here = "runs here" if t["runs_here"] else f"not here: {t['why_not'][:100]}"
            lines.append(f"  {t['name']:<10} {json.dumps(t['target'])[:60]:<62} {here}")
        lines.append("OpenCL devices found (opencl and adreno run on the first that can run "
                     "a kernel: fp16 needs cl_khr_fp16, textures need images):")
        lines += [f"  {d}" for d in data.get("opencl_devices", [])]
    if "known_bugs" in data:
        kb = data["known_bugs"]
        lines.append(f"known bugs ({len(kb['bugs'])}, from {kb['file']}):")
        for b in kb["bugs"]:
            lines.append(f"  {b['id']:<48} {b['symptom']:<15} {b['link'] or b['status']}")
    return "\n".join(lines)


def main(args, argv) -> int:
    from fuzzharness.core.errors import EXIT_OK, UsageError

    bad = [s for s in args.sections if s not in SECTIONS]
    if bad:
        raise UsageError(f"unknown section {bad[0]!r}; known: {', '.join(SECTIONS)}")
    data = collect(args.sections or list(SECTIONS),
                   str(args.known_bugs) if args.known_bugs else None)
    print(json.dumps(data, indent=1) if args.json else render(data))
    return EXIT_OK

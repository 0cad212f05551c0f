"""Campaign reports (`fuzzharness report`): tables checked against the database, the HTML
self-contained, known vs new buckets, repro links, read-only access, one-line errors.

Two real campaigns (real TVM, worker processes) with a deliberately wrong program mixed in,
so that there are failures, buckets and passes to report on.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.slow  # campaigns, subprocesses, clusters


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    base = tmp_path_factory.mktemp("campaigns")
    env = dict(os.environ, FUZZHARNESS_PLUGINS="fuzzharness.testing.wrong_programs",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    dirs = []
    # random schedules; then two nights of unscheduled cases, whose wrong-program failures
    # land in the same bucket in both (buckets merge across campaigns)
    no_steps = ["--max-steps", 0, "--primitives", "split"]
    for seed, n, wls, extra in [(3, 12, "matmul,test_matmul_off_by_one", []),
                                (4, 6, "row_sum,test_matmul_off_by_one", no_steps),
                                (5, 6, "row_sum,test_matmul_off_by_one", no_steps)]:
        d = base / f"nightly-{seed}"
        r = run_cli("run", "--seed", seed, "--max-cases", n, "--workers", 2, "--workloads", wls,
                    "--dtypes", "float32,float16", "--out", d, "--no-progress", "--target",
                    "llvm", *extra, env=env)
        assert r.returncode in (0, 1), r.stderr
        dirs.append(d)
    return dirs


def db_rows(d, sql, params=()):
    con = sqlite3.connect(f"file:{d / 'results.sqlite'}?mode=ro", uri=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def fingerprint(d):
    """The campaign's stored data: the database and any WAL content.  SQLite's shared-memory
    index (-shm) and an empty WAL are what any reader of a WAL database may create (a
    read-only one too): no data, so not counted — whether they exist depends on which test
    opened the database first."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.glob("results.sqlite*"))
            if not p.name.endswith("-shm") and not (p.name.endswith("-wal") and not p.stat().st_size)}


def test_tables_agree_with_the_database(campaigns):
    from fuzzharness.reports import tables, triage_tables
    from fuzzharness.reports.load import load_campaigns

    data = load_campaigns(campaigns)
    total = sum(db_rows(d, "SELECT COUNT(*) FROM results")[0][0] for d in campaigns)
    assert len(data.results) == total

    m = tables.verdict_matrix(data)
    assert m["cases"].sum() == total
    for d in campaigns:
        for wl, dtype, target, status, n in db_rows(
                d, "SELECT workload, dtype, target, status, COUNT(*) FROM results "
                   "WHERE workload IS NOT NULL GROUP BY 1, 2, 3, 4"):
            assert m.loc[(wl, dtype, target), status] >= n
    # (an fp16-accumulated off-by-one can hide under the a-priori bound at large K: ≥ 1, not all)
    assert m.loc["test_matmul_off_by_one", "findings"].sum() >= 1

    # failure rate of one primitive, recounted from the stored cases
    rates = tables.failure_rate_by_primitive(data)
    prim = rates.index[0]
    used = [r for r in data.results.itertuples() if prim in r.primitives]
    findings = sum(r.status in tables.FINDING_VALUES for r in used)
    assert rates.loc[prim, "cases"] == len(used) and rates.loc[prim, "findings"] == findings

    # passing ratios are within the bound; the table's max is the largest stored ratio
    ratios = tables.ratio_distribution(data)
    stored = [r for d in campaigns for (r,) in db_rows(
        d, "SELECT ratio FROM results WHERE status = 'pass' AND ratio IS NOT NULL")]
    assert ratios.loc["(all)", "passes"] == len(stored)
    assert ratios.loc["(all)", "max"] == pytest.approx(max(stored)) and max(stored) <= 1

    # throughput integrates back to the number of cases
    tp = tables.throughput(data)
    for name, g in tp.groupby("campaign"):
        width = float(np.diff(g["t"]).min()) if len(g) > 1 else 1.0
        n = len(data.results[data.results["campaign"] == name])
        assert (g["cases_per_s"] * width).sum() == pytest.approx(n)

    # buckets: merged across campaigns, counts as stored, wrong programs are new
    b = tables.bucket_list(data)
    stored_counts = {}
    for d in campaigns:
        for key, count in db_rows(d, "SELECT key, count FROM buckets"):
            stored_counts[key] = stored_counts.get(key, 0) + count
    assert dict(zip(b["key"], b["count"], strict=True)) == stored_counts
    shared = b[b["campaigns"].str.contains(", ")]
    assert len(shared) >= 1 and (shared["count"] >= 2).all()
    assert (b[b["title"].str.contains("test_matmul_off_by_one")]["known"] == "new").all()

    # the feature census: lowered cases per target and shares, from the coverage tables
    census = triage_tables.feature_census(data)
    lowered: dict[str, int] = {}
    for d in campaigns:
        for target, n in db_rows(d, "SELECT value, accepted FROM coverage WHERE axis = 'census'"):
            lowered[target] = lowered.get(target, 0) + n
    assert {t: int(census.loc["lowered cases", t]) for t in census.columns} == lowered
    with_feature: dict[tuple[str, str], int] = {}
    for d in campaigns:
        for value, n in db_rows(d, "SELECT value, drawn FROM coverage WHERE axis = 'feature'"):
            target, feature = value.split(" ", 1)
            with_feature[(feature, target)] = with_feature.get((feature, target), 0) + n
    assert with_feature
    for (feature, target), n in with_feature.items():
        assert census.loc[feature, target] == pytest.approx(n / lowered[target])


def test_html_and_markdown(campaigns, tmp_path):
    before = [fingerprint(d) for d in campaigns]
    out = tmp_path / "site" / "report.html"
    r = run_cli("report", *campaigns, "--out", out)
    assert r.returncode == 0, r.stderr
    assert [fingerprint(d) for d in campaigns] == before  # read-only
    page = out.read_text()
    # self-contained: no scripts, no external resources; plots inline
    assert "<script" not in page and not re.search(r'(src|href)="(https?:)?//', page)
    assert page.count("<svg") == 5  # history, throughput, verdicts, failure rates, ratios
    # findings first: new findings, known bugs, trends, then coverage, then the campaigns
    headings = ["New findings", "Known bugs seen", "Trends", "Throughput", "Coverage",
                "Verdicts by workload × dtype × target", "Failure rate by schedule primitive",
                "Error/bound ratios of passing cases", "Campaigns"]
    where = [page.index(f">{h}") for h in headings]
    assert where == sorted(where), list(zip(headings, where, strict=True))
    new = page[page.index(">New findings"):page.index(">Known bugs seen")]
    assert "test_matmul_off_by_one" in new and ">NEW<" in new and ">high<" in new
    assert "not minimized" in new  # a finding without a repro says why
    # every verdict status has a colour; badges do not wrap; no pseudo-primitives
    from fuzzharness.core.verdict import Status
    from fuzzharness.reports.plots import STATUS_COLORS

    assert set(STATUS_COLORS) == {s.value for s in Status}
    assert ".b{display:inline-block;white-space:nowrap" in page
    assert "(case not recorded)" not in page and "(no schedule step)" not in page
    assert "Feature census of the lowered programs" in page
    md = (tmp_path / "site" / "report.md").read_text()
    total = sum(db_rows(d, "SELECT COUNT(*) FROM results")[0][0] for d in campaigns)
    assert md.startswith("## tvm-fuzzharness: ") and f", {total} cases," in md.splitlines()[0]
    status = {}
    for d in campaigns:
        for s, n in db_rows(d, "SELECT status, COUNT(*) FROM results GROUP BY status"):
            status[s] = status.get(s, 0) + n
    line = next(ln for ln in md.splitlines() if ln.startswith("verdicts: "))
    assert dict((k, int(v)) for k, v in re.findall(r"(\w+) (\d+)", line)) == status
    assert md.index("### New findings") < md.index("### Trends") < md.index("### Campaigns")
    assert "Full report with plots: `report.html`" in md
    assert "### Feature census" in md and "| lowered cases |" in md


def test_known_bugs_and_repro_links(campaigns, tmp_path):
    """A finding the known-bugs file matches is listed under the known bugs with its link; a
    new finding's repro is linked relative to the HTML, with what the repro table recorded."""
    d = tmp_path / "camp"
    shutil.copytree(campaigns[0], d)
    key = db_rows(d, "SELECT key FROM buckets WHERE title LIKE '%test_matmul_off_by_one%' "
                     "ORDER BY count DESC")[0][0]
    repro = d / "repros" / key
    repro.mkdir(parents=True)
    (repro / "repro.py").write_text("print('repro')\n")
    from fuzzharness.campaign.db import ResultsDB

    db = ResultsDB(d)  # the campaign's own repros table, as the minimizer fills it
    db.add_repro({"bucket": key, "path": str(repro), "reproduced": True, "runs": 1})
    db.close()

    out = tmp_path / "out"
    r = run_cli("report", d, "--out", out)
    assert r.returncode == 0, r.stderr
    page = (out / "report.html").read_text()
    new = page[page.index(">New findings"):page.index(">Known bugs seen")]
    row = next(tr for tr in new.split("<tr>") if key in tr)
    assert f'href="../camp/repros/{key}/repro.py"' in row and ">reproduced<" in row
    assert (out / f"../camp/repros/{key}/repro.py").resolve().exists()
    assert "fuzzharness replay ../camp " in row  # the first case, relative to the report
    md = (out / "report.md").read_text()
    assert f"| ../camp/repros/{key}/repro.py | reproduced |" in md

    bugs = tmp_path / "known.toml"
    bugs.write_text('[[bug]]\nid = "off-by-one"\ntitle = "test program"\n'
                    'link = "https://example.org/tvm/issues/42"\n'
                    '[bug.match]\nsymptom = "wrong_result"\nworkloads = ["test_matmul_off_by_one"]\n')
    r = run_cli("report", d, "--out", out, "--known-bugs", bugs, "--markdown", "-")
    assert r.returncode == 0, r.stderr
    page = (out / "report.html").read_text()
    known = page[page.index(">Known bugs seen"):page.index(">Trends")]
    assert "off-by-one" in known and 'href="https://example.org/tvm/issues/42"' in known
    assert key not in page[page.index(">New findings"):page.index(">Known bugs seen")]
    assert "### Known bugs seen" in r.stdout and "off-by-one" in r.stdout  # markdown on stdout


@pytest.mark.parametrize("kind", ["missing", "empty_dir", "foreign", "text", "out_under_a_file"])
def test_bad_input_is_one_line_exit_2(campaigns, tmp_path, kind):
    target = tmp_path / "x"
    out = tmp_path / "r.html"
    if kind == "empty_dir":
        target.mkdir()
    elif kind == "foreign":
        target.mkdir()
        con = sqlite3.connect(target / "results.sqlite")
        con.execute("CREATE TABLE users(name TEXT)")
        con.commit()
        con.close()
    elif kind == "text":
        target.mkdir()
        (target / "results.sqlite").write_text("hello")
    elif kind == "out_under_a_file":
        (tmp_path / "afile").write_text("x")
        target, out = campaigns[0], tmp_path / "afile" / "r.html"
    r = run_cli("report", campaigns[0], target, "--out", out)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr and lines[0].startswith("fuzzharness: error: ")
    assert not out.exists()


def test_report_without_matplotlib(campaigns, tmp_path):
    """matplotlib is optional: without it every table is there and the page says why no plot."""
    out = tmp_path / "r.html"
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from fuzzharness.cli import main\n"
            f"sys.exit(main(['report', {str(campaigns[0])!r}, '--out', {str(out)!r}]))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert "<svg" not in page and page.count("plots need matplotlib") == 4
    assert "<table" in page and "test_matmul_off_by_one" in page

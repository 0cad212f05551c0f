"""Known bugs as executable witnesses: ``fuzzharness known check`` runs each entry's stored
minimized case on the real TVM; it must fail and be recognized as its entry.  Both sides: the
packaged entries know their own witnesses; an entry whose rules miss its witness, and a
witness that no longer fails, are reported and exit 1."""

from __future__ import annotations

import json
import tomllib

import pytest

from fuzzharness.buckets.known_bugs import KnownBugs, default_known_bugs_path
from tests.conftest import need, run_cli

pytestmark = pytest.mark.slow


def test_every_packaged_witness_fails_and_is_recognized_as_its_entry():
    known = KnownBugs.load()
    # a hang's witness costs the whole time limit (minutes): the nightly `known check` runs it
    with_witness = [b for b in known.bugs if b.witness and b.match["symptom"] != "timeout"]
    assert len(with_witness) >= 25
    r = run_cli("known", "check", *[b.id for b in with_witness])
    assert r.returncode == 0, r.stdout + r.stderr
    for b in with_witness:
        if f"not run here    {b.id}" in r.stdout:  # an OpenCL witness without an OpenCL device
            need(f"known check could not run {b.id}'s witness here:\n{r.stdout}")
        assert f"recognized      {b.id}" in r.stdout, r.stdout


def test_an_entry_too_narrow_for_its_witness_and_a_fixed_witness_fail_the_check(tmp_path):
    doc = tomllib.loads(default_known_bugs_path().read_text())
    entry = next(b for b in doc["bug"] if b["id"] == "read-at-padding-block-unclamped-region")
    (tmp_path / "w").mkdir()
    src = default_known_bugs_path().parent / entry["witness"]
    case = json.loads(src.read_text())
    case.pop("root_cause", None)  # no recorded identity: the entry's rules alone decide
    (tmp_path / "w" / "read_at.json").write_text(json.dumps(case))
    # the same case with its schedule dropped: the unscheduled pad is correct
    case["schedule"] = {"source": "none", "trace": None}
    (tmp_path / "w" / "passes.json").write_text(json.dumps(case))
    (tmp_path / "known.toml").write_text(
        'format = 1\n'
        '[[bug]]\nid = "narrow"\ntitle = "read_at, but only with a fuse"\n'
        'witness = "w/read_at.json"\n'
        '[bug.match]\nsymptom = "nan_inf"\nstage = "verify"\nprimitives = ["read_at", "fuse"]\n'
        '[[bug]]\nid = "gone"\ntitle = "a bug this TVM no longer has"\n'
        'witness = "w/passes.json"\n'
        '[bug.match]\nsymptom = "nan_inf"\nstage = "verify"\n')
    r = run_cli("known", "check", "--file", tmp_path / "known.toml")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "not recognized  narrow" in r.stdout, r.stdout
    assert "fixed?          gone" in r.stdout, r.stdout
    r = run_cli("known", "check", "nope", "--file", tmp_path / "known.toml")
    assert r.returncode == 2 and "no entry nope" in r.stderr


def test_a_recorded_witness_identity_recognizes_its_bug_and_no_other(tmp_path):
    """``known check --record`` writes the witness's root cause into it; the entry then
    knows its bug by that identity though its rules are too narrow, and a minimized failure
    of another bug (pad_einsum's out-of-bounds stores) is still not that entry."""
    from fuzzharness.buckets.known_bugs import KnownBugs
    from fuzzharness.buckets.root_causes import RootCause
    from fuzzharness.buckets.signatures import Signature

    doc = tomllib.loads(default_known_bugs_path().read_text())
    witnesses = {b["id"]: default_known_bugs_path().parent / b["witness"] for b in doc["bug"]
                 if b.get("witness")}
    case = json.loads(witnesses["read-at-padding-block-unclamped-region"].read_text())
    case.pop("root_cause", None)
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "read_at.json").write_text(json.dumps(case))
    (tmp_path / "known.toml").write_text(
        'format = 1\n[[bug]]\nid = "narrow"\ntitle = "read_at, but only with a fuse"\n'
        'witness = "w/read_at.json"\n'
        '[bug.match]\nsymptom = "nan_inf"\nstage = "verify"\nprimitives = ["read_at", "fuse"]\n')
    r = run_cli("known", "check", "--record", "--file", tmp_path / "known.toml")
    assert r.returncode == 0 and "recognized      narrow" in r.stdout, r.stdout + r.stderr
    recorded = json.loads((tmp_path / "w" / "read_at.json").read_text())["root_cause"]
    r = run_cli("known", "check", "--file", tmp_path / "known.toml")  # read back from the file
    assert r.returncode == 0 and "recognized      narrow" in r.stdout, r.stdout + r.stderr
    known = KnownBugs.load(tmp_path / "known.toml", corpus=False)
    rc = RootCause.from_dict(recorded)
    sig = Signature("crash", "run", kind="SIGSEGV", workload="pad", primitives=tuple(rc.primitives))
    assert known.classify(sig, "0.27.0", rc).bug.id == "narrow"
    other = json.loads(witnesses["pad-einsum-enlarges-shared-loop"].read_text())["root_cause"]
    other_sig = Signature("crash", "run", kind="SIGSEGV", workload="dense", primitives=("pad_einsum",))
    assert known.classify(other_sig, "0.27.0", RootCause.from_dict(other)) is None

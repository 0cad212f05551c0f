"""Feedback (campaign/feedback.py, generators/mutate.py): mutants of the cases that built a new
program class, with the corpus a function of (seed, index) — in any worker count and across
``--resume`` — and nothing changed when feedback is off."""

import json
import random
import sqlite3

import pytest

from fuzzharness.campaign.db import ResultsDB
from fuzzharness.campaign.feedback import Feedback, case_classes, checkpoint
from fuzzharness.generators import draw as draws
from fuzzharness.generators.cases import GenSettings, draw_case, generate_case
from fuzzharness.generators.mutate import OPS, plan
from tests.conftest import run_cli

SETTINGS = GenSettings()


def _case(seed, index):
    return generate_case(seed, index, SETTINGS)


def test_a_mutant_is_one_case_per_spec_and_replays_from_its_own_choices():
    parent, donor = _case(7, 5), _case(7, 9)
    seen_ops, differs = set(), 0
    for k in range(12):
        spec = dict(plan(random.Random(k), parent.origin["choices"], donor.origin["choices"]),
                    parent=5)
        seen_ops.add(spec["op"])
        mutant = generate_case(7, 1000 + k, SETTINGS, spec)
        assert generate_case(7, 1000 + k, SETTINGS, spec).id == mutant.id  # deterministic
        assert mutant.origin["mutant_of"] == {"index": 5, "op": spec["op"]}
        # the minimizer replays a case from its recorded choices alone: a mutant too
        replayed = draw_case(draws.from_choices(mutant.origin["choices"]), SETTINGS.at(7, 1000 + k))
        assert replayed.id == mutant.id
        differs += mutant.id not in (parent.id, _case(7, 1000 + k).id)
    assert seen_ops == set(OPS)
    assert differs >= 10, differs  # an edit changes the case (a rare one lands where nothing differs)


def test_case_classes_name_what_generation_built():
    case = _case(7, 5).to_dict()
    base = case_classes(case)
    assert any(c.startswith("workload ") for c in base)
    step = {"primitive": "split", "outcome": "accepted", "calls": ["split"], "site": []}
    more = json.loads(json.dumps(case))
    more["origin"]["steps"] = list(more["origin"]["steps"]) + [step]
    assert case_classes(more) - base  # one more accepted step: something new
    refused = json.loads(json.dumps(case))
    refused["origin"]["steps"] = list(refused["origin"]["steps"]) + [dict(step, outcome="rejected")]
    assert case_classes(refused) == base  # a step TVM refused built nothing


def test_checkpoints_lag_a_period():
    assert [checkpoint(i, 10) for i in (0, 9, 10, 19, 20, 29, 30)] == [0, 0, 0, 0, 10, 10, 20]


def _ids(out):
    con = sqlite3.connect(out / "results.sqlite")
    got = {i: (json.loads(c) if c else None) for i, c in
           con.execute("SELECT idx, case_json FROM results ORDER BY idx")}
    con.close()
    return got


def _run(out, config, *extra):
    r = run_cli("run", "--seed", "12", "--no-progress", "--no-minimize", "--out", out,
                "--config", config, *extra)
    assert r.returncode in (0, 1), r.stderr
    return r


@pytest.mark.slow
def test_feedback_campaign_is_the_same_in_any_worker_count_and_across_resume(tmp_path):
    config = tmp_path / "feedback.toml"
    config.write_text("[generation]\nfeedback = 1.0\nfeedback_period = 1\n")
    _run(tmp_path / "two", config, "--workers", "2", "--max-cases", "40")
    _run(tmp_path / "one", config, "--workers", "1", "--max-cases", "22")
    r = run_cli("run", "--resume", tmp_path / "one", "--max-cases", "40", "--no-progress",
                "--no-minimize")
    assert r.returncode in (0, 1), r.stderr
    two, one = _ids(tmp_path / "two"), _ids(tmp_path / "one")
    assert sorted(two) == sorted(one) == list(range(40))
    for i in range(40):
        assert (two[i] or {}).get("origin") == (one[i] or {}).get("origin"), i

    # every case from index 2 on is a mutant (feedback 1.0) of a corpus entry below its
    # checkpoint, and the corpus read afresh from the final database names the same mutation
    # (a period of 1 makes case i wait for case i - 2, which is still running when two
    # workers ask for case i: without that wait the corpus would depend on timing)
    db = ResultsDB(tmp_path / "two")
    try:
        gen = GenSettings.from_dict(db.campaign()["settings"]["generation"])
        fb = Feedback(db, 12, 1.0, 1)
        entries = {e.index for e in fb.corpus(39)}
        mutants = 0
        for i in range(2, 40):
            of = (two[i] or {}).get("origin", {}).get("mutant_of")
            if two[i] is None:
                continue  # the schedule draw failed: nothing stored to compare
            assert of is not None, i
            assert of["index"] < checkpoint(i, 1) and of["index"] in entries, (i, of)
            spec = fb.mutation_for(i)
            assert generate_case(12, i, gen, spec).origin["choices"] == two[i]["origin"]["choices"]
            mutants += 1
        assert mutants >= 30
        assert all(two[i] is None or "mutant_of" not in two[i]["origin"] for i in range(2))
    finally:
        db.close()

    # feedback off: the plain case stream, untouched
    plain = tmp_path / "plain"
    config.write_text("[generation]\nfeedback = 0.0\n")
    _run(plain, config, "--workers", "2", "--max-cases", "20")
    for i, case in _ids(plain).items():
        if case is not None:
            assert case["origin"]["choices"] == generate_case(12, i, gen).origin["choices"]
            assert "mutant_of" not in case["origin"]


def test_with_feedback_off_no_case_waits(tmp_path):
    """Off, every case is ready at once (an executor that cannot wait, Ray's, never sees a
    pause); on, a case waits for the cases below its checkpoint."""
    db = ResultsDB(tmp_path / "c", create=True)
    try:
        assert Feedback(db, 1, 0.0, 10).ready(500)
        assert not Feedback(db, 1, 0.5, 10).ready(500)
        assert Feedback(db, 1, 0.5, 10).ready(19)  # checkpoint 0: nothing to wait for
    finally:
        db.close()

"""The Case: JSON round trip, stable ids, readable errors."""

import json

import pytest

from fuzzharness.core.case import Case, CaseFormatError
from fuzzharness.generators.cases import GenSettings, generate_case


def small_case(**over):
    base = dict(workload={"name": "matmul", "params": {"M": 4, "N": 5, "K": 6, "dtype": "float32"}},
                inputs={"distribution": "uniform", "seed": 7})
    base.update(over)
    return Case(**base)


def test_round_trip_preserves_everything_and_the_id():
    case = generate_case(3, 5, GenSettings())
    back = Case.from_json(case.to_json())
    assert back == case
    assert back.id == case.id
    assert back.origin == case.origin
    assert json.loads(back.to_json()) == json.loads(case.to_json())


def test_id_depends_on_content_not_on_origin():
    a = small_case()
    assert a.id == small_case(origin={"seed": 1, "index": 2}).id
    assert a.id != small_case(inputs={"distribution": "uniform", "seed": 8}).id
    assert a.id != small_case(target={"kind": "llvm", "mcpu": "x86-64"}).id
    assert a.id != small_case(pass_config={"tirx.disable_vectorize": True}).id


@pytest.mark.parametrize("text, needle", [
    ("not json", "not valid JSON"),
    ("[1, 2]", "JSON object"),
    ('{"inputs": {}}', "lacks workload"),
    ('{"workload": {}, "inputs": {}}', "'name'"),
    ('{"format": 99, "workload": {"name": "x"}, "inputs": {}}', "unsupported case format"),
])
def test_malformed_case_json_is_a_format_error(text, needle):
    with pytest.raises(CaseFormatError, match=needle):
        Case.from_json(text)


def test_edited_case_is_detected_by_its_id():
    d = json.loads(small_case().to_json())
    d["inputs"]["seed"] = 999
    with pytest.raises(CaseFormatError, match="does not match its content"):
        Case.from_dict(d)


def test_the_oracle_is_part_of_the_case_id():
    """Two cases that differ only in how they are judged are different cases: the minimizer's
    verdict cache is keyed by the id, and its inputs pass turns the bound oracle into the
    exact one — with the oracle outside the id that candidate would look already tried."""
    bound = small_case(oracle={"mode": "bound"})
    exact = small_case(oracle={"mode": "exact"})
    assert bound.id != exact.id
    assert bound.id == small_case(oracle={"mode": "bound"}).id
    assert Case.from_json(exact.to_json()).oracle == {"mode": "exact"}

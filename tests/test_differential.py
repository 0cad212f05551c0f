"""``pytest -m differential``: the seeded differential sample and the regression corpus.

Deselected in ordinary runs; the plugin (:mod:`fuzzharness.pytest_plugin`) parametrizes
both tests.  Options: ``--fuzz-seed N``, ``--fuzz-cases N``, ``--fuzz-profile ci|nightly``
(``pytest --help``, group "fuzzharness").
"""

import pytest

pytestmark = pytest.mark.differential


def test_case(differential_case):
    differential_case.check()


def test_corpus(corpus_entry):
    corpus_entry.check()

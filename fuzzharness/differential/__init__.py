"""What ``pytest -m differential`` does, apart from pytest's hooks (those are
:mod:`fuzzharness.pytest_plugin`): the plan of the sample (:mod:`~.plan`), the worker pool
that runs it (:mod:`~.runner`), and how a verdict or a corpus entry becomes a test outcome
(:mod:`~.outcomes`)."""

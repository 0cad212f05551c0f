"""The campaign database's readers: every query a tool outside the writer makes, in one place.

``results.sqlite`` (documented table by table in ``docs/campaign-format.md``) is written by
:class:`fuzzharness.campaign.db.ResultsDB`; everything that only reads it — the findings
list, ``status``, the coverage table, the report — asks these functions, which take an open
``sqlite3`` connection (read-only is enough) and return plain Python data.  They tolerate
databases written by older versions of the harness: a table that does not exist yet reads as
empty, a column that does not exist yet is left out.

This package sits just above ``fuzzharness.core``: it knows the tables, not what their rows
mean (signatures, known bugs and root causes are the callers' business).
"""

from fuzzharness.store.readers import (
    COVERAGE_COLUMNS,
    attachment_sources,
    baseline_outcomes,
    bucket_rows,
    campaign_row,
    columns,
    confirmation_count,
    count_results,
    coverage_rows,
    last_finished,
    last_session_argv,
    meta,
    repro_rows,
    result_rows,
    session_rows,
    tables,
    write_coverage,
)

__all__ = [
    "COVERAGE_COLUMNS", "attachment_sources", "baseline_outcomes", "bucket_rows", "campaign_row",
    "columns", "confirmation_count", "count_results", "coverage_rows", "last_finished", "last_session_argv", "meta",
    "repro_rows", "result_rows", "session_rows", "tables", "write_coverage",
]

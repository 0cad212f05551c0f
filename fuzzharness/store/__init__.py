"""The campaign database: every SQL statement of the harness, in one place.

``results.sqlite`` (documented table by table in ``docs/campaign-format.md``):
``schema.py`` owns the tables, opening the file safely and migrating older versions;
``writers.py`` every statement that changes it (used by
:class:`fuzzharness.campaign.db.ResultsDB`, which knows what the rows mean and groups them
into transactions); the readers, exported here, are every query — the findings list,
``status``, the coverage table, the report and the writer itself ask these functions, which
take an open ``sqlite3`` connection (read-only is enough) and return plain Python data.  They tolerate
databases written by older versions of the harness: a table that does not exist yet reads as
empty, a column that does not exist yet is left out.

This package sits just above ``fuzzharness.core``: it knows the tables, not what their rows
mean (signatures, known bugs and root causes are the callers' business).
"""

from fuzzharness.store.readers import (
    COVERAGE_COLUMNS,
    attachment_rows,
    attachment_sources,
    baseline_outcomes,
    baseline_rows,
    bucket_counts,
    bucket_memberships,
    bucket_rows,
    campaign_row,
    cases,
    columns,
    confirmation,
    confirmation_count,
    confirmed_indices,
    count_results,
    coverage_rows,
    elapsed_before,
    last_finished,
    last_session_argv,
    meta,
    predecessors,
    repro_records,
    repro_rows,
    result_bucket,
    result_indices,
    result_rows,
    session_rows,
    status_counts,
    tables,
    with_confirmation,
    write_coverage,
)

__all__ = [
    "COVERAGE_COLUMNS", "attachment_rows", "attachment_sources", "baseline_outcomes",
    "baseline_rows", "bucket_counts", "bucket_memberships", "bucket_rows", "campaign_row",
    "cases", "columns", "confirmation", "confirmation_count", "confirmed_indices",
    "count_results", "coverage_rows", "elapsed_before", "last_finished", "last_session_argv",
    "meta", "predecessors", "repro_records", "repro_rows", "result_bucket", "result_indices",
    "result_rows", "session_rows", "status_counts", "tables", "with_confirmation",
    "write_coverage",
]

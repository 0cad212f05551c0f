"""Running cases: executors (a local pool of persistent, crash-isolated worker processes;
Ray for clusters), the worker and its protocol, what a worker does with one task
(``tasks.py``), fresh processes for confirmation, and why a worker died.  The results
database, buckets and known bugs live in ``fuzzharness.campaign`` and
``fuzzharness.buckets``; the campaign driver in ``fuzzharness.campaign``."""

"""Which TVM releases each corpus bug reproduces on (``fuzzharness releases``): ``check`` runs
the corpus under other TVM installs, ``report`` writes corpus/RELEASES.md."""

"""A campaign: the driver, its settings, the results database, coverage and progress, and the minimization of its buckets."""

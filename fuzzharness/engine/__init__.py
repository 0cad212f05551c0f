"""The campaign engine: executors and worker processes, the results database, buckets and known bugs, the campaign driver."""

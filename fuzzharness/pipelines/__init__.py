"""Execution paths other than the single-PrimFunc one of :mod:`fuzzharness.execute`.

``relax``: graph cases — a Relax program through TVM's whole pipeline
(:mod:`fuzzharness.pipelines.relax`).
"""

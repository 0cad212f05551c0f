"""The harness's version: recorded with every campaign, repro and corpus entry, so that a
database written by another version is recognised (its seeds generate other cases)."""

__version__ = "0.1.0"

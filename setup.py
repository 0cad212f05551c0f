"""Packaging: one import namespace over the repository's top-level folders.

The repository keeps its layout (``fuzzharness/``, ``generators/``, ``oracles/``,
``reports/``), but only ``fuzzharness`` is installed as a top-level package:
``generators/`` installs as ``fuzzharness.generators``, ``oracles/`` as
``fuzzharness.oracles`` and ``reports/`` as ``fuzzharness.reports`` (setuptools'
``package_dir`` mapping; editable installs map them the same way).  Nothing named
``generators`` or ``reports`` lands in site-packages, and a user's own folders of those
names cannot shadow ours.  Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

MAPPED = ("generators", "oracles", "reports")

packages = find_packages(include=["fuzzharness", "fuzzharness.*"])
package_dir = {}
for top in MAPPED:
    packages += [f"fuzzharness.{p}" for p in find_packages(include=[top, f"{top}.*"])]
    package_dir[f"fuzzharness.{top}"] = top

setup(packages=packages, package_dir=package_dir)

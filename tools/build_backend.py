"""The package's build backend: setuptools, with ingest's JVM reader compiled into every wheel.

The reader's Java sources ship in ``dlq_pipeline/ingest/jvm/``; a wheel carries the jar built
from them (javac ``--release 17`` against pyspark's jars, `dlq_pipeline.ingest.jvm_reader.build`),
so ``pip wheel .``, ``python -m build`` and ``make package`` give the same wheel, and nothing is
compiled where the package is installed. Building a wheel needs a JDK 17 (``javac`` on PATH or in
``JAVA_HOME``) and pyspark, which this backend asks the build environment for; an editable
install needs neither (``make jvm-reader`` builds the jar in a checkout).
"""

from __future__ import annotations

import sys
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401 - the rest of the PEP 517/660 interface, as setuptools gives it
    build_editable,
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

PROJECT = Path(__file__).resolve().parents[1]
# what javac compiles the reader against: the pyspark of the `spark` extra
PYSPARK = "pyspark>=3.5.3,<4.3"


def get_requires_for_build_wheel(config_settings=None):
    return [*_setuptools.get_requires_for_build_wheel(config_settings), PYSPARK]


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    sys.path.insert(0, str(PROJECT))
    try:
        from dlq_pipeline.ingest import jvm_reader
    finally:
        sys.path.remove(str(PROJECT))
    jvm_reader.build()
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)

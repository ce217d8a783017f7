"""Builds the compiled Example codec and resize kernel; everything else is in pyproject.toml."""

from setuptools import Extension, setup

_FLAGS = ["-O3", "-std=c99", "-Wall", "-Wextra", "-Wno-unused-parameter"]

setup(
    ext_modules=[
        Extension(
            "tfrecordkit.format._codec",
            ["src/tfrecordkit/format/_codec.c"],
            depends=["src/tfrecordkit/format/_crc32c.h", "src/tfrecordkit/format/_constants.h"],
            extra_compile_args=_FLAGS,
            # Without a compiler the install still succeeds: the pure-Python codec takes over.
            optional=True,
        ),
        Extension(
            "tfrecordkit.codecs._resample",
            ["src/tfrecordkit/codecs/_resample.c"],
            # No fused multiply-add: the kernel's float32 bits must equal NumPy's and TF's.
            extra_compile_args=[*_FLAGS, "-ffp-contract=off", "-fno-fast-math"],
            libraries=["m"],
            # Without a compiler the NumPy resize (codecs/_resize.py) takes over.
            optional=True,
        ),
    ]
)

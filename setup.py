"""Builds the compiled Example codec; everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tfrecordkit.format._codec",
            ["src/tfrecordkit/format/_codec.c"],
            extra_compile_args=["-O3", "-std=c99", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            # Without a compiler the install still succeeds: the pure-Python codec takes over.
            optional=True,
        )
    ]
)

"""Build the optional native core of storage_core (storage_core/native/*.c).

`pip install -e .` builds it when a C compiler is there; without one the extension is skipped
(`optional=True`) and storage_core runs its pure-Python twins (`logkeeper --version` says which).
Everything else about the package is in pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "storage_core.native._native",
            sources=[
                "storage_core/native/module.c",
                "storage_core/native/walk.c",
                "storage_core/native/frame.c",
                "storage_core/native/offset_map.c",
                "storage_core/native/crc32c.c",
                "storage_core/native/md5.c",
            ],
            depends=["storage_core/native/native.h"],
            define_macros=[("Py_LIMITED_API", "0x030B0000")],
            py_limited_api=True,
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        )
    ],
)

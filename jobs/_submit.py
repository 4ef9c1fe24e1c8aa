"""What `spark-submit.sh` ships to a cluster: logkeeper's code as a zip, and the Python environment.

    python -m jobs._submit code-zip OUT.zip       # storage_core, jobs, udfs: the --py-files zip
    python -m jobs._submit env-archive CACHE_DIR  # prints the path of the packed environment

The environment is packed the way Spark's "Python Package Management" guide recommends for
virtualenvs: `venv-pack` makes a `tar.gz` of this interpreter's venv, spark-submit ships it with
`--archives <file>#environment`, and executors run `./environment/bin/python` (`PYSPARK_PYTHON`),
so a worker needs no pre-installed Python packages, only the same base interpreter (`python3.11`
at the path the venv was made from; venv-pack does not pack the interpreter itself).

Layout of the archive: the venv's tree (`bin/`, `lib/python3.X/site-packages/...`, `pyvenv.cfg`)
without Spark's own jars (`pyspark/jars`, ~460 MB: every worker has its Spark install), without the
packages only the driver imports (:data:`_DRIVER_ONLY`) and without the editable-install hooks of a
checkout (the code goes in the zip). Archives are cached under
CACHE_DIR by a digest of the interpreter's version and `pip freeze`, so the ~1 minute of packing
happens once per set of installed packages; an archive is written as `.tmp` and renamed, so a
crash never leaves a half-written archive under the final name.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

PACKAGES = ("storage_core", "jobs", "udfs")
# Executors import storage_core, udfs and the jobs' executor functions: pyarrow, pandas, numpy and the
# codecs. The Delta writer (deltalake, imported inside functions only the driver calls), Great
# Expectations (the same) with scipy and altair, and the dev tools stay on the driver.
_DRIVER_ONLY = (
    "deltalake",
    "arro3",
    "great_expectations",
    "scipy",
    "altair",
    "ruff",
    "hypothesis",
    "pytest",
    "_pytest",
    "kafka",
    "aiokafka",
    "pip",
)
_EXCLUDE = (
    "lib/python*/site-packages/pyspark/jars/*",
    "lib/python*/site-packages/pyspark/examples/*",
    "lib/python*/site-packages/__editable__*",
    "lib/python*/site-packages/logkeeper-*",
    "bin/ruff",
    *(f"lib/python*/site-packages/{name}{suffix}" for name in _DRIVER_ONLY for suffix in ("/*", "[-.]*/*", ".libs/*")),
)


def source_root() -> Path:
    """The directory holding logkeeper's packages (a checkout, or site-packages when installed)."""
    return Path(__file__).resolve().parent.parent


def write_code_zip(out: Path) -> None:
    """Zip every `.py` file of logkeeper's packages, paths relative to :func:`source_root`."""
    root = source_root()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in PACKAGES:
            for path in sorted((root / package).rglob("*.py")):
                archive.write(path, path.relative_to(root))


def env_key() -> str:
    """A digest of what the packed environment holds: the interpreter and its installed packages."""
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable"], capture_output=True, text=True, check=True
    ).stdout
    digest = hashlib.sha256(f"{sys.version}\n{sys.prefix}\n{_EXCLUDE}\n{frozen}".encode())
    return digest.hexdigest()[:16]


def env_archive(cache_dir: Path) -> Path:
    """The packed environment of this interpreter's venv under `cache_dir`, packed now if absent.

    Raises:
        SystemExit: the interpreter is not a virtualenv, or venv-pack is not installed.
    """
    if sys.prefix == sys.base_prefix:
        raise SystemExit(f"{sys.executable} is not a virtualenv's interpreter: nothing to pack")
    try:
        import venv_pack
    except ImportError:
        raise SystemExit("venv-pack is not installed (pip install venv-pack)") from None
    out = cache_dir / f"logkeeper-env-{env_key()}.tar.gz"
    if out.is_file():
        return out
    cache_dir.mkdir(parents=True, exist_ok=True)
    temp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    venv_pack.pack(
        prefix=sys.prefix,
        output=str(temp),
        format="tar.gz",
        compress_level=1,  # the archive is rebuilt rarely but shipped per application: speed over size
        force=True,
        filters=[("exclude", pattern) for pattern in _EXCLUDE],
    )
    os.replace(temp, out)
    return out


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "code-zip":
        write_code_zip(Path(argv[1]))
        return 0
    if len(argv) == 2 and argv[0] == "env-archive":
        print(env_archive(Path(argv[1])))
        return 0
    print("usage: python -m jobs._submit code-zip OUT | env-archive CACHE_DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

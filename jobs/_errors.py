"""The job-side error every module of `jobs` may raise: bad arguments or configuration (exit 2)."""

from __future__ import annotations


class UsageError(Exception):
    """Bad arguments or configuration: one line on stderr, exit 2, nothing touched."""

"""Tiered storage (KIP-405) offline: `__remote_log_metadata` read into what remote storage holds per
partition, and the local retention that may only delete what is uploaded."""

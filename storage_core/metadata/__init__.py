"""PLACEHOLDER until branch i15-metadata lands (see image.py)."""

from storage_core.metadata.image import (
    BrokerImage,
    MetadataImage,
    PartitionImage,
    TopicImage,
    find_metadata_log_dir,
    load_metadata_image,
)

__all__ = [
    "BrokerImage",
    "MetadataImage",
    "PartitionImage",
    "TopicImage",
    "find_metadata_log_dir",
    "load_metadata_image",
]

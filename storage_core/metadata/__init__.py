"""The cluster metadata image of a KRaft broker, replayed offline from its `__cluster_metadata-0`."""

from storage_core.metadata.image import BrokerEndpoint, BrokerImage, MetadataImage, PartitionImage, TopicImage
from storage_core.metadata.loader import find_metadata_log_dir, load_metadata_image

__all__ = [
    "BrokerEndpoint",
    "BrokerImage",
    "MetadataImage",
    "PartitionImage",
    "TopicImage",
    "find_metadata_log_dir",
    "load_metadata_image",
]

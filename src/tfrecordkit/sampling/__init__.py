"""Framework-free sampling plans for metric learning: P×K class-balanced batches and triplets."""

from tfrecordkit.sampling._class_index import ClassIndex
from tfrecordkit.sampling._fetch import RecordFetcher
from tfrecordkit.sampling._plan import PKSampler, TripletSampler

__all__ = ["ClassIndex", "PKSampler", "RecordFetcher", "TripletSampler"]

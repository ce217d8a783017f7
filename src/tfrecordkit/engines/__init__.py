"""Engines run a :class:`~tfrecordkit.job.ConversionJob`: ``local`` (processes on this
machine, the default) and ``ray_data`` (a Ray cluster, extra ``ray``). Every engine orders by the
same seeded hash, cuts shards with :func:`~tfrecordkit.store.plan_split`, writes each with
:func:`~tfrecordkit.store.write_shard` and finishes with
:func:`~tfrecordkit.store.finalize_manifest`, so they write the same bytes. Import the engine
module itself; this package imports none of them."""

__all__: list[str] = []

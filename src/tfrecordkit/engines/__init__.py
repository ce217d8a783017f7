"""Engines run a :class:`~tfrecordkit.job.ConversionJob`: ``local`` (processes on this
machine, the default) and ``ray_data`` (a Ray cluster, extra ``ray``), both under one driver
(``_driver.drive``). An engine stages the job (encodes, holds records where it can order them by
the same seeded hash, tallies them) and writes the shards it is given with
:func:`~tfrecordkit.store.write_shard`; the driver plans them with
:func:`~tfrecordkit.store.plan_split` and writes the manifest with
:func:`~tfrecordkit.store.finalize_manifest`, so every engine writes the same bytes. Import the
engine module itself; this package imports none of them."""

__all__: list[str] = []

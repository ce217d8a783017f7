"""Images: encoded bytes as they came (or raw pixels), with their dimensions."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from tfrecordkit.codecs import (
    JPEG_MAGIC,
    PIL_MODE_CHANNELS,
    check_image_pixels,
    convert_channels,
    decode_image_bytes,
    image_header,
    load_pillow,
    png_bit_depth,
    sniff_bytes,
)
from tfrecordkit.errors import SchemaError
from tfrecordkit.format import (
    Column,
    EncColumn,
    KeySpec,
    bytes_column,
    int64_column,
)
from tfrecordkit.schema._base import (
    ColumnEncoder,
    DecodeContext,
    Entries,
    EntryEncoder,
    Feature,
    _bytes_scalar_encoder,
    _int_column,
    _int_scalar_encoder,
    _scalar,
)
from tfrecordkit.schema._layout import FeatureLayout, LayoutOptions, axes_of

__all__ = ["Image"]


@dataclass(frozen=True)
class Image(Feature):
    """An image: encoded bytes (``jpeg``, ``png``, or ``auto``: either, as they came) or ``raw``
    uint8 pixels, with per-record ``height``, ``width`` and ``channels``.

    ``channels`` is what readers decode to (None: as stored, which may vary per record).
    ``dims=False`` describes records that hold only the encoded bytes (files other tools
    wrote): nothing else is stored or read; not for ``raw``. ``size`` is the ``(height,
    width)`` of every image, when they all have one (conversion finds it); readers then
    batch images as plain arrays rather than padded ones with their lengths.
    """

    encoding: str = "auto"
    channels: int | None = None
    dims: bool = True
    size: tuple[int, int] | None = None
    kind: ClassVar[str] = "image"
    tf_decoder: ClassVar[str | None] = "tfrecordkit.readers.tf_data._ops:decode_image"

    def decodes_per_example(self) -> bool:
        return True

    _ENCODINGS: ClassVar[tuple[str, ...]] = ("auto", "jpeg", "png", "raw")

    def __post_init__(self) -> None:
        if self.encoding not in self._ENCODINGS:
            raise SchemaError("<image>", f"encoding must be one of {self._ENCODINGS}; "
                                         f"got {self.encoding!r}")
        if self.channels not in (None, 1, 2, 3, 4):
            raise SchemaError(
                "<image>", f"channels must be None, 1, 2, 3 or 4; got {self.channels}")
        if not self.dims and self.encoding == "raw":
            raise SchemaError("<image>", "raw pixels need their dims (height, width, channels)")
        if self.size is not None:
            size = tuple(self.size)
            if len(size) != 2 or not all(type(d) is int and d > 0 for d in size):
                raise SchemaError("<image>", f"size must be (height, width), two positive "
                                             f"ints; got {self.size!r}")
            object.__setattr__(self, "size", size)

    def layout(self, name: str, options: LayoutOptions) -> FeatureLayout:
        height, width = options.image_size or self.size or (None, None)
        shape = (height, width, self.channels)
        return FeatureLayout(name, "image", np.dtype(options.image_dtype), shape,
                             axes_of(shape[:2]))

    @classmethod
    def from_json(cls, params: dict[str, Any], rebuild: Callable[[Any], Feature]) -> Feature:
        size = params.get("size")
        return cls(**{**params, "size": tuple(size) if isinstance(size, list) else size})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "encoding": self.encoding,
                               "channels": self.channels}
        if not self.dims:
            out["dims"] = False
        if self.size is not None:
            out["size"] = list(self.size)
        return out

    def export_extension(self, data: bytes) -> str | None:
        if self.encoding == "raw":
            return None  # pixels: exported encoded as PNG
        return "png" if data[:8] == b"\x89PNG\r\n\x1a\n" else "jpg"

    def hf_feature(self) -> dict[str, Any] | None:
        return {"_type": "Image"}

    @property
    def fixed_shape(self) -> tuple[int, int, int] | None:
        """The decoded shape every image has (known size and channels), else None."""
        if self.size is None or self.channels is None:
            return None
        return (*self.size, self.channels)

    @property
    def _dim_names(self) -> tuple[str, ...]:
        return ("height", "width", "channels") if self.dims else ()

    def key_specs(self, name: str) -> list[KeySpec]:
        return [KeySpec(name, "string", ())] + [
            KeySpec(f"{name}/{d}", "int64", ()) for d in self._dim_names
        ]

    def encode_array(self, name: str, pixels: np.ndarray) -> bytes:
        """Encode uint8 pixels (HW or HWC) as this feature's encoding (PNG for ``auto``)."""
        if pixels.dtype != np.uint8 or pixels.ndim not in (2, 3):
            raise SchemaError(name, f"pixels must be uint8 HW or HWC, got {pixels.dtype} "
                                    f"{pixels.shape}")
        if self.encoding == "raw":
            return np.ascontiguousarray(pixels).tobytes()
        image = load_pillow().fromarray(pixels[:, :, 0] if pixels.ndim == 3 and pixels.shape[2] == 1
                                 else pixels)
        buffer = io.BytesIO()
        if self.encoding == "jpeg":
            image.save(buffer, format="JPEG", quality=95)
        else:
            image.save(buffer, format="PNG")
        return buffer.getvalue()

    def entry_encoder(self, name: str) -> EntryEncoder:
        encode_bytes = _bytes_scalar_encoder(name)
        dims = [_int_scalar_encoder(f"{name}/{d}") for d in ("height", "width", "channels")]
        if not self.dims:
            dims = []

        def encode(value: Any) -> Entries:
            if isinstance(value, np.ndarray):
                pixels = value
                data = self.encode_array(name, pixels)
                shape = pixels.shape if pixels.ndim == 3 else (*pixels.shape, 1)
            elif isinstance(value, Mapping):  # from sources: bytes, height, width, channels
                data = value["bytes"]
                shape = (value["height"], value["width"], value["channels"])
                self._check_encoding(name, data)
            elif isinstance(value, bytes):
                data = value
                shape = self._probe(name, data)
            else:
                raise SchemaError(name, f"expected encoded bytes or a uint8 array, got "
                                        f"{type(value).__name__}")
            if self.encoding != "raw" and not isinstance(value, np.ndarray):
                try:
                    check_image_pixels(int(shape[0]), int(shape[1]))
                except ValueError as err:
                    raise SchemaError(name, str(err)) from None
            if self.size is not None and tuple(int(d) for d in shape[:2]) != self.size:
                raise SchemaError(name, f"image is {shape[0]}x{shape[1]}; the feature's "
                                        f"size is {self.size[0]}x{self.size[1]}")
            return [*encode_bytes(data),
                    *(enc(int(d)) for enc, d in zip(dims, shape[: len(dims)], strict=True))]

        return encode

    def column_encoder(self, name: str) -> ColumnEncoder | None:
        if self.encoding == "raw" or self.size is not None:
            return None  # a fixed size is checked record by record
        dims = self._dim_names

        def encode(values: list[Any]) -> list[EncColumn] | None:
            # Values from sources: {"bytes", "height", "width", "channels"} dicts.
            if not all(type(v) is dict or isinstance(v, Mapping) for v in values):
                return None
            data = [v["bytes"] for v in values]
            if not all(type(d) is bytes for d in data):
                return None
            _check_pixels(name, values)
            if not (self.encoding in ("jpeg", "auto")
                    and all(d.startswith(JPEG_MAGIC) for d in data)):
                for item in data:
                    self._check_encoding(name, item)
            columns = [bytes_column(name, data)]
            for dim in dims:
                column = _int_column([v[dim] for v in values], -(2**63), 2**63 - 1)
                if column is None:
                    return None
                columns.append(int64_column(f"{name}/{dim}", column))
            return columns

        return encode

    def _check_encoding(self, name: str, data: bytes) -> str:
        found = sniff_bytes(data)
        allowed = {"auto": ("jpeg", "png"), "jpeg": ("jpeg",), "png": ("png",)}[self.encoding]
        if found not in allowed:
            raise SchemaError(name, f"bytes are {found}, feature expects {self.encoding}")
        if found == "png" and png_bit_depth(data) == 16:
            raise SchemaError(name, "a 16-bit PNG: readers give 8-bit pixels, so its values "
                                    "would be cut to their high byte; store an 8-bit "
                                    "reduction (ImageFolder(reduce_16bit=True) does, and "
                                    "records it) or the pixels as a Tensor")
        return found

    def _probe(self, name: str, data: bytes) -> tuple[int, int, int]:
        if self.encoding == "raw":
            raise SchemaError(name, "raw images need an array (or a dict with their shape)")
        self._check_encoding(name, data)
        header = image_header(data)
        if header is not None:
            return header
        try:
            with load_pillow().open(io.BytesIO(data)) as image:
                width, height = image.size
                channels = PIL_MODE_CHANNELS.get(image.mode, len(image.getbands()))
        except OSError as err:
            raise SchemaError(name, f"unreadable image: {err}") from None
        return height, width, channels

    def decode(self, name: str, features: Mapping[str, Any],
               min_size: tuple[int, int] | None = None) -> np.ndarray:
        """The pixels, uint8 ``[h, w, c]``; ``min_size`` lets JPEGs decode at 1/2, 1/4 or 1/8
        scale while staying at least that ``(height, width)``."""
        data = _scalar(features, name)
        if self.encoding == "raw":
            shape = tuple(int(_scalar(features, f"{name}/{d}")) for d in ("height", "width",
                                                                            "channels"))
            if min(shape) < 0 or int(np.prod(shape)) != len(data):
                raise SchemaError(name, f"{len(data)} raw bytes do not fit shape {shape}")
            return convert_channels(np.frombuffer(data, np.uint8).reshape(shape), self.channels)
        return decode_image_bytes(data, self.channels, min_size=min_size)

    def decode_in(self, name: str, features: Mapping[str, Any], context: DecodeContext,
                  row: int) -> np.ndarray:
        return self.decode(name, features, min_size=context.min_size)

    def decode_column(self, name: str, columns: Mapping[str, Column], n: int,
                      where: Callable[[int], Any], context: DecodeContext) -> Any:
        """Every record's pixels (a list of ``[h, w, c]`` arrays; ``context.min_size`` as
        :meth:`decode` takes it), or ``context.out[name]`` (``[n, h, w, c]`` uint8) with the
        pixels written into its rows when every image has a row's shape.
        ``context.finish[name](i, pixels)``, if given, turns record ``i``'s pixels into its
        value right after they are decoded, on the same thread (a resize into the batch,
        say); the pixels may then lie in a buffer the thread reuses, and ``out`` is not
        used."""
        min_size, out = context.min_size, context.out.get(name)
        finish = context.finish.get(name)
        column = columns[name]
        # Strict (a schema inferred from a sample): each image's header is checked as it is
        # decoded, against the channels the schema decodes to.
        strict = context.strict and self.channels is not None
        if self.encoding == "raw" or bool(column.missing.any()):
            images = super().decode_column(name, columns, n, where, context)
            return images if finish is None else [
                _finished(name, finish, i, image, where) for i, image in enumerate(images)]
        if finish is not None:
            return [_finished(name, finish, i, self._decode_one(
                name, data, min_size, row=None, transient=True, where=where, i=i,
                strict=strict), where) for i, data in enumerate(column.to_bytes())]
        rows = [None] * n if out is None else list(out)
        images = [self._decode_one(name, data, min_size, row=row, transient=False, where=where,
                                   i=i, strict=strict)
                  for i, (data, row) in enumerate(zip(column.to_bytes(), rows, strict=True))]
        if out is not None and all(image is row for image, row in zip(images, rows,
                                                                         strict=True)):
            return out
        return images

    def _decode_one(self, name: str, data: bytes, min_size: tuple[int, int] | None, *,
                    row: np.ndarray | None, transient: bool, where: Callable[[int], Any],
                    i: int, strict: bool = False) -> np.ndarray:
        if strict:  # more channels than the schema decodes to: colour or alpha would be lost
            header = image_header(data)
            if header is not None and self.channels is not None and header[2] > self.channels:
                raise SchemaError(name, f"an image with {header[2]} channels; the schema "
                                        f"decodes to {self.channels} (Image(channels="
                                        f"{header[2]}) reads it)", record=where(i))
        try:
            return decode_image_bytes(data, self.channels, min_size=min_size, out=row,
                                      transient=transient)
        except (OSError, ValueError, RuntimeError) as err:
            raise SchemaError(name, f"cannot decode: {err}", record=where(i)) from None


def _finished(name: str, finish: Callable[[int, np.ndarray], Any], i: int, pixels: np.ndarray,
              where: Callable[[int], Any]) -> Any:
    """Record ``i``'s ``finish``ed pixels; a ValueError names the record."""
    try:
        return finish(i, pixels)
    except ValueError as err:
        raise SchemaError(name, str(err), record=where(i)) from None


def _check_pixels(name: str, values: list[Any]) -> None:
    """Each source dict's ``height x width`` within the pixel limit (the largest checked when
    all are ints below 2**31, whose products int64 holds exactly; else one by one)."""
    heights = _int_column([v["height"] for v in values], 0, 2**31 - 1)
    widths = _int_column([v["width"] for v in values], 0, 2**31 - 1) if (
        heights is not None) else None
    if heights is not None and widths is not None and len(values):
        largest = int(np.argmax(heights[:, 0] * widths[:, 0]))
        checked = [values[largest]]
    else:
        checked = values
    for v in checked:
        try:
            check_image_pixels(int(v["height"]), int(v["width"]))
        except ValueError as err:
            raise SchemaError(name, str(err)) from None

"""Image decoding without a framework, pixel for pixel as TensorFlow's decoders: JPEG/PNG bytes
to uint8 pixels, channel conversions, float scaling."""

from __future__ import annotations

import functools
import io
import math
import threading
from typing import Any

import numpy as np

from tfrecordkit._constants import LUMA_SHIFT, LUMA_WEIGHTS
from tfrecordkit.codecs._sniff import image_header
from tfrecordkit.errors import MissingDependencyError

__all__ = ["MAX_IMAGE_PIXELS", "PIL_MODE_CHANNELS", "check_image_pixels", "convert_channels",
           "decode_image_bytes", "load_pillow", "scale_pixels"]

#: Pixels an encoded image may have (Pillow's own decompression-bomb threshold: a 0.25 GiB
#: RGBA image); conversion refuses larger ones and readers never decode them.
MAX_IMAGE_PIXELS = 89_478_485


def check_image_pixels(height: int, width: int, limit: int | None = None) -> None:
    """Refuse an image of more than ``limit`` pixels (default: the module's
    ``MAX_IMAGE_PIXELS``, which a program with the memory for larger images may raise).

    Raises:
        ValueError: naming its size and the limit.
    """
    limit = MAX_IMAGE_PIXELS if limit is None else limit
    if height * width > limit:
        raise ValueError(f"an image of {width}x{height} pixels is over the limit of {limit:,} "
                         "(a decompression bomb?)")


def load_pillow() -> Any:
    """Pillow's ``Image`` module, or an error naming the extra to install."""
    try:
        from PIL import Image as PILImage
    except ImportError as err:
        raise MissingDependencyError("pillow", "image", "encoding or decoding images") from err
    return PILImage


PIL_MODE_CHANNELS = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4, "P": 3, "1": 1, "I;16": 1, "CMYK": 3,
                 "YCbCr": 3, "I": 1, "F": 1}


def decode_image_bytes(data: bytes, channels: int | None = None, *,
                       min_size: tuple[int, int] | None = None,
                       out: np.ndarray | None = None,
                       transient: bool = False) -> np.ndarray:
    """Decode JPEG/PNG (or any Pillow format) bytes to uint8 ``[h, w, c]`` pixels.

    The pixels equal ``tf.io.decode_jpeg(data, channels, dct_method="INTEGER_ACCURATE")`` and
    ``tf.io.decode_png(data, channels)``: accurate integer DCT, fancy upsampling, grey taken
    from the JPEG's luma channel, channels converted as TensorFlow converts them.
    ``channels=None`` keeps the image's own. JPEGs go through libjpeg-turbo without the GIL
    (``simplejpeg``) where it is installed, else Pillow; both give the same pixels.
    ``min_size=(h, w)`` decodes a JPEG at 1/2, 1/4 or 1/8 scale (libjpeg's DCT scaling) when
    the result stays at least that size: faster, and close to but not equal to a full
    decode followed by a resize. ``out`` (a C-contiguous uint8 array, e.g. a batch's row)
    receives the pixels when they have its shape, and is returned; else a new array is.
    ``transient=True``: the caller is done with the pixels before its thread decodes again
    (e.g. it resizes them into a batch), so they may lie in a buffer the thread reuses.

    Raises:
        OSError, ValueError: the bytes are not a decodable image.
    """
    if data[:3] == b"\xff\xd8\xff":
        pixels = _decode_jpeg_turbo(data, channels, min_size, out, transient)
        if pixels is not None:
            return _into(convert_channels(pixels, channels), out)
    pil = load_pillow()
    try:
        opening = pil.open(io.BytesIO(data))
    except pil.DecompressionBombError:  # Pillow's own guard, at twice its limit
        header = image_header(data) or (0, 0, 0)
        check_image_pixels(header[0], header[1])
        raise ValueError("an image over the pixel limit (a decompression bomb?)") from None
    with opening as opened:
        check_image_pixels(opened.size[1], opened.size[0])
        if opened.format == "JPEG":
            grey = channels in (1, 2) and opened.mode != "L"
            scale = _dct_scale(opened.size[1], opened.size[0], min_size)
            if grey or scale > 1:  # libjpeg's own colour conversion: Y, as TF takes it
                # Pillow picks the scale from size // requested size.
                opened.draft("L" if grey else opened.mode,
                             (max(1, opened.size[0] // scale), max(1, opened.size[1] // scale)))
        mode = opened.mode
        if mode.startswith("I"):  # 16-bit grey: the high byte, as libpng strips it
            pixels = (np.asarray(opened).astype(np.uint32) >> 8).clip(0, 255).astype(np.uint8)
        elif mode == "P":
            pixels = np.asarray(opened.convert("RGBA" if "transparency" in opened.info
                                               else "RGB"))
        elif mode not in ("L", "LA", "RGB", "RGBA"):
            pixels = np.asarray(opened.convert("RGB" if mode in ("CMYK", "YCbCr") else "L"))
        else:
            pixels = np.asarray(opened)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    return _into(convert_channels(pixels, channels), out)


def _into(pixels: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """``pixels`` copied into ``out`` when it has their shape (and is not already them)."""
    if out is None or pixels is out or pixels.shape != out.shape:
        return pixels
    out[...] = pixels
    return out


def _dct_scale(height: int, width: int, min_size: tuple[int, int] | None) -> int:
    """The largest of 8, 4, 2 (else 1) that keeps a ``height × width`` JPEG at least
    ``min_size`` when decoded at that fraction."""
    if min_size is None:
        return 1
    for scale in (8, 4, 2):
        if -(-height // scale) >= min_size[0] and -(-width // scale) >= min_size[1]:
            return scale
    return 1


@functools.cache
def load_simplejpeg() -> Any:
    """The ``simplejpeg`` module (libjpeg-turbo, decoding with the GIL released), or None
    when it is not installed; imported once per process."""
    try:
        import simplejpeg
    except ImportError:
        return None
    return simplejpeg


_SCRATCH = threading.local()


def _scratch(nbytes: int) -> np.ndarray:
    """This thread's reusable decode buffer, of at least ``nbytes``."""
    buffer: np.ndarray | None = getattr(_SCRATCH, "buffer", None)
    if buffer is None or buffer.nbytes < nbytes:
        buffer = np.empty(max(nbytes, 1 << 20), np.uint8)
        _SCRATCH.buffer = buffer
    return buffer


def _decode_jpeg_turbo(data: bytes, channels: int | None,
                       min_size: tuple[int, int] | None,
                       out: np.ndarray | None = None,
                       transient: bool = False) -> np.ndarray | None:
    """Pixels through simplejpeg (GIL released), or None where Pillow must decide: not
    installed, not YCbCr/grey, or anything libjpeg warns about (Pillow then accepts or
    rejects exactly as before). Written straight into ``out`` (and it returned) when the
    decoded pixels need no conversion and have its shape."""
    simplejpeg = load_simplejpeg()
    if simplejpeg is None:
        return None
    try:
        height, width, space, _ = simplejpeg.decode_jpeg_header(data)
        if space not in ("Gray", "YCbCr"):
            return None
    except ValueError:
        return None  # Pillow decides (and checks the size)
    check_image_pixels(height, width)  # before any pixel is decoded
    try:
        grey = channels in (1, 2) or (channels is None and space == "Gray")
        scale = _dct_scale(height, width, min_size)
        shape = (-(-height // scale), -(-width // scale), 1 if grey else 3)
        direct = (out is not None and out.shape == shape and out.dtype == np.uint8
                  and out.flags.c_contiguous and channels in (None, shape[2]))
        pixels = simplejpeg.decode_jpeg(
            data, colorspace="GRAY" if grey else "RGB", fastdct=False, fastupsample=False,
            min_height=shape[0] if scale > 1 else 0, min_width=shape[1] if scale > 1 else 0,
            min_factor=scale, strict=True,
            buffer=out if direct else _scratch(math.prod(shape)) if transient else None)
    except ValueError:
        return None
    pixels = pixels if pixels.ndim == 3 else pixels[:, :, None]
    if direct and pixels.shape == shape:
        return out
    return pixels if not direct else pixels.copy()  # type: ignore[no-any-return]


def convert_channels(pixels: np.ndarray, channels: int | None) -> np.ndarray:
    """``[h, w, c]`` uint8 pixels with ``channels`` channels, converted as TensorFlow's
    decoders convert them (grey replicated, alpha dropped or added opaque)."""
    have = pixels.shape[2]
    if channels is None or have == channels:
        return pixels
    colour = pixels[:, :, :-1] if have in (2, 4) else pixels  # without alpha
    if channels in (1, 2) and colour.shape[2] == 3:
        # Rec. 601 luma in libpng's 15-bit fixed point; TF's PNG decoder can differ by one
        # level here (colour to grey is the one conversion that is not exact).
        rgb = colour.astype(np.uint32)
        red, green, blue = LUMA_WEIGHTS
        luma = (rgb[:, :, 0] * red + rgb[:, :, 1] * green + rgb[:, :, 2] * blue) >> LUMA_SHIFT
        colour = luma.astype(np.uint8)[:, :, None]
    elif channels in (3, 4) and colour.shape[2] == 1:
        colour = np.repeat(colour, 3, axis=2)
    if channels in (2, 4):
        alpha = pixels[:, :, -1:] if have in (2, 4) else np.full_like(colour[:, :, :1], 255)
        return np.concatenate([colour, alpha], axis=2)
    return colour


def scale_pixels(pixels: np.ndarray, dtype: str = "uint8",
                 mean: tuple[float, ...] | None = None,
                 std: tuple[float, ...] | None = None) -> np.ndarray:
    """Pixels as a model wants them: uint8 as they are, or float32 in [0, 1] normalised to
    ``(x - mean) / std`` (the float32 operations tf.data's twin runs)."""
    if dtype == "uint8":
        return pixels
    out: np.ndarray = pixels.astype(np.float32) / np.float32(255.0)
    if mean is not None:
        out = out - np.asarray(mean, dtype=np.float32)
    if std is not None:
        out = out / np.asarray(std, dtype=np.float32)
    return out

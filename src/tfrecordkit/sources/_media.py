"""Reading one image or audio file for conversion: keep its bytes, or decode and re-encode."""

from __future__ import annotations

import dataclasses
import io
import os
import warnings
from typing import Any, Literal

import numpy as np

from tfrecordkit.codecs import (
    MAX_IMAGE_PIXELS,
    PIL_MODE_CHANNELS,
    image_header,
    image_structure_problem,
    load_pillow,
    load_simplejpeg,
    png_bit_depth,
    sniff_bytes,
)
from tfrecordkit.errors import MissingDependencyError, OptionError, SourceError

IMAGE_EXTENSIONS = frozenset(
    {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm"}
)
AUDIO_EXTENSIONS = frozenset({".wav", ".flac", ".ogg", ".aif", ".aiff"})
# Pillow modes whose JPEG/PNG bytes are kept as they came (others are converted).
_KEPT_MODES = frozenset({"L", "LA", "RGB", "RGBA", "1"})  # 16-bit PNGs: see reduce_16bit
_MODE_FOR_CHANNELS = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def read_file(path: str) -> bytes:
    """A file's bytes, in one read when its size holds (a third of ``open().read()``'s cost
    per small file: no buffered file object)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            size = os.fstat(fd).st_size
            data = os.read(fd, size + 1)
            if len(data) == size:
                return data  # asked for one byte more than the size: at the end
            parts = [data]  # the file changed size, or a short read: read to the end
            while part := os.read(fd, 1 << 20):
                parts.append(part)
            return b"".join(parts)
        finally:
            os.close(fd)
    except OSError as err:
        raise SourceError(path, err.strerror or str(err)) from None


ImageCheck = Literal["structure", "decode", "none"]
IMAGE_CHECKS: tuple[str, ...] = ("structure", "decode", "none")


def _check_kept(path: str, data: bytes, kind: str, check: ImageCheck) -> None:
    """Check bytes stored as they are: their structure (segments, chunks and CRCs, the end
    marker), and with ``"decode"`` their pixel data too."""
    if check == "none":
        return
    problem = image_structure_problem(data, kind)
    if problem is not None:
        raise SourceError(path, problem)
    if check == "decode":
        _check_decodes(path, data, kind)


def check_option(check: str) -> ImageCheck:
    """``check`` if it names an image check.

    Raises:
        OptionError: it does not.
    """
    if check not in IMAGE_CHECKS:
        raise OptionError(f"check must be one of {IMAGE_CHECKS}; got {check!r}")
    return check  # type: ignore[return-value]


DEFAULT_MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS  # Pillow's own bomb threshold


def _check_size(path: str, width: int, height: int, max_pixels: int) -> None:
    if width <= 0 or height <= 0:
        raise SourceError(path, f"image has no pixels ({width}x{height})")
    if width * height > max_pixels:
        raise SourceError(path, f"image of {width}x{height} pixels is over the limit of "
                                f"{max_pixels} (max_image_pixels; a decompression bomb?)")


def _decodes_cleanly(data: bytes) -> bool:
    """True when simplejpeg (if installed) decodes the JPEG at 1/8 scale without a warning."""
    simplejpeg = load_simplejpeg()
    if simplejpeg is None:
        return False
    try:
        simplejpeg.decode_jpeg(data, min_height=1, min_width=1, min_factor=8, strict=True)
    except ValueError:
        return False
    return True


def _check_decodes(path: str, data: bytes, kind: str) -> None:
    """Decode the image, JPEG at 1/8 scale (cheap), so that corrupt pixel data fails at
    conversion, not in training."""
    if kind == "jpeg" and _decodes_cleanly(data):
        return  # libjpeg-turbo decoded it without a warning; anything else Pillow judges
    pil = load_pillow()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pil.DecompressionBombWarning)  # sizes checked
            with pil.open(io.BytesIO(data)) as image:
                if kind == "jpeg":
                    image.draft(image.mode, (max(1, image.width // 8),
                                             max(1, image.height // 8)))
                image.load()
    except (OSError, ValueError, SyntaxError, pil.DecompressionBombError) as err:
        raise SourceError(path, f"corrupt image data: {err}") from None


def load_image(
    path: str,
    *,
    encoding: str | None = None,
    channels: int | None = None,
    resize: tuple[int, int] | int | None = None,
    check: ImageCheck = "structure",
    max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
    reduce_16bit: bool = False,
    exif_transpose: bool = False,
) -> dict[str, Any]:
    """Read an image file as ``{"bytes", "height", "width", "channels"}``.

    JPEG and PNG bytes are kept as they are unless ``encoding`` differs, ``channels`` asks
    for a conversion or ``resize`` is set; other formats are re-encoded to PNG, and so are
    JPEGs whose pixels readers could not decode alike (CMYK/YCCK: Pillow's CMYK->RGB, then
    lossless). A 16-bit PNG is refused unless ``reduce_16bit`` (then its high byte, as
    PNG); the EXIF orientation is kept as stored (as TensorFlow does) unless
    ``exif_transpose`` (then applied to the pixels, stored as PNG).
    ``resize`` is ``(height, width)``, or an int bounding the longer side (aspect kept).
    Images with no pixels or more than ``max_pixels`` are refused; kept bytes have their
    structure checked (``check="structure"``: JPEG segments and end marker, PNG chunks and
    CRCs), with ``"decode"`` are also test-decoded (JPEG at 1/8 scale), with ``"none"``
    neither.

    Raises:
        SourceError: the file is unreadable, too large, empty or corrupt (names the file).
    """
    return image_from_bytes(read_file(path), path, encoding=encoding, channels=channels,
                            resize=resize, check=check, max_pixels=max_pixels,
                            reduce_16bit=reduce_16bit, exif_transpose=exif_transpose)


def image_from_bytes(
    data: bytes,
    path: str,
    *,
    encoding: str | None = None,
    channels: int | None = None,
    resize: tuple[int, int] | int | None = None,
    check: ImageCheck = "structure",
    max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
    reduce_16bit: bool = False,
    exif_transpose: bool = False,
) -> dict[str, Any]:
    """An encoded image (``path`` names it in errors) as :func:`load_image` gives it."""
    kind = sniff_bytes(data)
    deep = kind == "png" and png_bit_depth(data) == 16
    if deep and not reduce_16bit:
        raise SourceError(path, "a 16-bit PNG: readers give 8-bit pixels, so its values "
                                "would be cut to their high byte; pass reduce_16bit=True "
                                "(--reduce-16bit) to store that 8-bit reduction, recorded in "
                                "the manifest")
    wanted = _Wanted(encoding, channels, resize, check, max_pixels, exif_transpose)
    if (resize is None and encoding in (None, "auto", kind) and kind in ("jpeg", "png")
            and not deep and not (exif_transpose and kind == "jpeg")):
        # Fast path: read the size from the header; PIL only for anything unusual.
        header = image_header(data)
        if header is not None and (channels is None or channels == header[2]):
            height, width, stored = header
            _check_size(path, width, height, max_pixels)
            _check_kept(path, data, kind, check)
            return {"bytes": data, "height": height, "width": width, "channels": stored}
    pil = load_pillow()
    try:
        return _through_pillow(pil, data, path, kind, deep, wanted)
    except SourceError:
        raise
    except pil.UnidentifiedImageError:
        raise SourceError(path, f"unreadable image: not a known image format ({kind} bytes, "
                                "or the header is cut off)") from None
    except (OSError, ValueError, SyntaxError, pil.DecompressionBombError) as err:
        raise SourceError(path, f"unreadable image: {err}") from None  # PIL's bad-data errors


@dataclasses.dataclass(frozen=True)
class _Wanted:
    """What :func:`image_from_bytes` was asked for."""

    encoding: str | None
    channels: int | None
    resize: tuple[int, int] | int | None
    check: ImageCheck
    max_pixels: int
    exif_transpose: bool

    def keeps(self, kind: str, stored: int, mode: str, deep: bool, turn: Any) -> bool:
        """Whether the bytes are kept as they came (nothing asked of them changes them)."""
        return (kind in ("jpeg", "png")
                and (self.encoding is None or self.encoding in ("auto", kind))
                and (self.channels is None or self.channels == stored)
                and self.resize is None and mode in _KEPT_MODES and not deep
                and turn in (1, None))


def _through_pillow(pil: Any, data: bytes, path: str, kind: str, deep: bool,  # noqa: PLR0917
                    wanted: _Wanted) -> dict[str, Any]:
    """The image read with Pillow: kept as it came when nothing asked changes it, else
    decoded and re-encoded as asked (PNG for what was not asked to change)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pil.DecompressionBombWarning)  # sizes checked
        opened = pil.open(io.BytesIO(data))
    with opened as image:
        mode = image.mode
        width, height = image.size
        _check_size(path, width, height, wanted.max_pixels)
        stored = PIL_MODE_CHANNELS.get(mode, len(image.getbands()))
        turn = image.getexif().get(_ORIENTATION, 1) if wanted.exif_transpose else 1
        if wanted.keeps(kind, stored, mode, deep, turn):
            _check_kept(path, data, kind, wanted.check)
            return {"bytes": data, "height": height, "width": width, "channels": stored}
        image.load()  # decodes: raises on truncated or corrupt data
        return _reencoded(pil, _upright(pil, image, deep, turn), kind, wanted)


def _upright(pil: Any, image: Any, deep: bool, turn: Any) -> Any:
    """The decoded image in 8 bits (16-bit grey: its high byte), turned as EXIF says."""
    if deep and image.mode.startswith("I"):
        image = pil.fromarray((np.asarray(image).astype(np.uint32) >> 8).astype(np.uint8), "L")
    if turn not in (1, None):
        image = _pil_ops().exif_transpose(image)
    return image


def _reencoded(pil: Any, image: Any, kind: str, wanted: _Wanted) -> dict[str, Any]:
    """``image`` converted, resized and encoded as ``wanted`` says."""
    mode = image.mode
    target_mode = _MODE_FOR_CHANNELS.get(wanted.channels or 0) or (
        mode if mode in ("L", "LA", "RGB", "RGBA") else
        ("RGBA" if "A" in image.getbands() or "transparency" in image.info else "RGB"))
    converted = image.convert(target_mode) if image.mode != target_mode else image
    if wanted.resize is not None:
        width, height = image.size
        converted = converted.resize(_target_size(width, height, wanted.resize),
                                     pil.Resampling.BILINEAR)
    # What the user did not ask to change is stored losslessly (PNG).
    asked = wanted.channels is not None or wanted.resize is not None
    target = wanted.encoding if wanted.encoding in ("jpeg", "png") else (
        kind if kind in ("jpeg", "png") and asked else "png")
    if target == "jpeg" and target_mode in ("LA", "RGBA"):
        converted = converted.convert("RGB" if target_mode == "RGBA" else "L")
    buffer = io.BytesIO()
    converted.save(buffer, format="JPEG" if target == "jpeg" else "PNG",
                   **({"quality": 95} if target == "jpeg" else {}))
    width, height = converted.size
    return {"bytes": buffer.getvalue(), "height": height, "width": width,
            "channels": PIL_MODE_CHANNELS[converted.mode]}


_ORIENTATION = 0x0112  # the EXIF tag


def _pil_ops() -> Any:
    """Pillow's ImageOps."""
    from PIL import ImageOps

    return ImageOps


def _target_size(width: int, height: int, resize: tuple[int, int] | int) -> tuple[int, int]:
    if isinstance(resize, int):
        scale = resize / max(width, height)
        return max(1, round(width * scale)), max(1, round(height * scale))
    return resize[1], resize[0]


def load_audio(path: str, *, encoding: str | None = None) -> dict[str, Any]:
    """Read an audio file as ``{"bytes", "sample_rate", "num_samples", "channels"}``.

    WAV and FLAC bytes are kept; other formats (or a different ``encoding``) are re-encoded to
    FLAC. The file is decoded once to prove it is readable.
    """
    return audio_from_bytes(read_file(path), path, encoding=encoding)


def audio_from_bytes(data: bytes, path: str, *, encoding: str | None = None
                     ) -> dict[str, Any]:
    """Encoded audio (``path`` names it in errors) as :func:`load_audio` gives it."""
    try:
        import soundfile
    except ImportError as err:
        raise MissingDependencyError("soundfile", "audio", "reading audio") from err
    kind = sniff_bytes(data)
    try:
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except (RuntimeError, soundfile.LibsndfileError) as err:
        raise SourceError(path, f"unreadable audio: {err}") from None
    target = encoding or (kind if kind in ("wav", "flac") else "flac")
    if target != kind:
        buffer = io.BytesIO()
        soundfile.write(buffer, samples, rate, format=target.upper())
        data = buffer.getvalue()
    return {"bytes": data, "sample_rate": rate, "num_samples": samples.shape[0],
            "channels": samples.shape[1]}


def media_kind(path: str) -> str | None:
    """``"image"`` or ``"audio"`` from a file's extension, else None."""
    ext = os.path.splitext(path)[1].lower()
    if ext in IMAGE_EXTENSIONS:
        return "image"
    if ext in AUDIO_EXTENSIONS:
        return "audio"
    return None


Resize = tuple[int, int] | int | None


@dataclasses.dataclass(frozen=True)
class ImageOptions:
    """How an image source reads its images: every source holding images (an image folder, a
    table's image columns, COCO, a Hugging Face dataset) takes these keywords, with these
    defaults (:data:`IMAGE_OPTIONS` lists them for the CLI).

    Attributes:
        encoding: re-encode as ``"jpeg"`` or ``"png"`` (default: JPEG/PNG bytes kept).
        channels: convert to 1, 3 or 4 channels (default: as stored).
        resize: ``(height, width)``, or an int bounding the longer side.
        check: what is checked of bytes kept as they are: ``"structure"``, ``"decode"``,
            ``"none"``.
        max_image_pixels: images with more pixels are refused (a decompression bomb?).
        reduce_16bit: store 16-bit PNGs as their high byte (default: refuse them).
        exif_transpose: apply a JPEG's EXIF orientation to its pixels.
    """

    encoding: str | None = None
    channels: int | None = None
    resize: Resize = None
    check: ImageCheck = "structure"
    max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS
    reduce_16bit: bool = False
    exif_transpose: bool = False

    def __post_init__(self) -> None:
        check_option(self.check)
        if self.encoding not in (None, "auto", "jpeg", "png"):
            raise OptionError(f"encoding must be 'jpeg' or 'png' (or None: kept); got "
                              f"{self.encoding!r}")
        if self.channels not in (None, 1, 3, 4):
            raise OptionError(f"channels must be 1, 3 or 4 (or None: as stored); got "
                              f"{self.channels!r}")
        pixels = self.max_image_pixels
        if isinstance(pixels, bool) or not isinstance(pixels, int) or pixels < 1:
            raise OptionError(f"max_image_pixels must be a positive int; got {pixels!r}")

    @property
    def described(self) -> str:
        """The options that differ from the defaults, for a source's ``description`` (which
        must identify the records it yields: a killed conversion resumes only the same
        ones), or "" when there are none."""
        changed = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                   if getattr(self, f.name) != f.default]
        return f";image:{','.join(changed)}" if changed else ""

    @property
    def keeps_bytes(self) -> bool:
        """JPEG/PNG bytes are stored as they came (nothing asks for other pixels)."""
        return (self.encoding in (None, "auto") and self.channels is None
                and self.resize is None and not self.exif_transpose)

    def from_bytes(self, data: bytes, path: str) -> dict[str, Any]:
        """:func:`image_from_bytes` with these options."""
        return image_from_bytes(data, path, encoding=self.encoding, channels=self.channels,
                                resize=self.resize, check=self.check,
                                max_pixels=self.max_image_pixels,
                                reduce_16bit=self.reduce_16bit,
                                exif_transpose=self.exif_transpose)

    def load(self, path: str) -> dict[str, Any]:
        """:func:`load_image` with these options."""
        return self.from_bytes(read_file(path), path)


@dataclasses.dataclass(frozen=True)
class ImageOption:
    """One keyword of :class:`ImageOptions` as the CLI offers it."""

    name: str
    flag: str
    help: str
    argparse: dict[str, Any]

    def value(self, given: Any) -> Any:
        """The keyword's value from the parsed flag (``--image-size H W`` or ``N``)."""
        if self.name == "resize" and given is not None:
            return given[0] if len(given) == 1 else (given[0], given[1])
        return given


#: The image options every image source takes, in the CLI's words.
IMAGE_OPTIONS: tuple[ImageOption, ...] = (
    ImageOption("encoding", "--image-encoding",
                "re-encode images (default: keep JPEG/PNG bytes as they are)",
                {"choices": ("jpeg", "png")}),
    ImageOption("resize", "--image-size", "resize images: H W, or one N bounding the longer "
                "side", {"type": int, "nargs": "+", "metavar": "N"}),
    ImageOption("channels", "--channels", "convert images to 1, 3 or 4 channels (default: as "
                "stored; one RGBA file among RGB ones then makes every image 4-channel)",
                {"type": int, "choices": (1, 3, 4)}),
    ImageOption("check", "--check", "what is checked of each image kept as it is: its "
                "structure (default: segments, chunks and CRCs, end marker), also a test "
                "decode (catches damaged pixel data, ~100x slower), or nothing",
                {"choices": IMAGE_CHECKS}),
    ImageOption("max_image_pixels", "--max-image-pixels",
                f"refuse images with more pixels (default {DEFAULT_MAX_IMAGE_PIXELS:,})",
                {"type": int, "metavar": "N"}),
    ImageOption("reduce_16bit", "--reduce-16bit",
                "store 16-bit PNGs as their high byte (default: refuse them)",
                {"action": "store_const", "const": True}),
    ImageOption("exif_transpose", "--exif-transpose", "apply JPEGs' EXIF orientation to the "
                "pixels (default: keep as stored, as TensorFlow decodes them)",
                {"action": "store_const", "const": True}),
)

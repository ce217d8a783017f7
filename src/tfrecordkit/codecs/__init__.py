"""Media steps without a framework, each written once: image decoding and channel rules,
resizing with ``tf.image.resize``'s arithmetic, pixel scaling, crop windows and flips keyed by
(seed, epoch, record), the image transform a batch's images go through right after decoding,
audio decoding and resampling, and sniffing what encoded bytes hold. Schema, sources and
readers all use these; tf.data has in-graph twins of the image steps, tested equal to them."""

from tfrecordkit.codecs._audio import load_soundfile, resample_audio
from tfrecordkit.codecs._crop import (
    CROP_DRAWS,
    CROP_SALT,
    CROP_TRIES,
    EXP_TERMS,
    LN2_HI,
    LN2_LO,
    center_crop_box,
    center_crop_boxes,
    crop_draws,
    mix_keys,
    portable_exp,
    random_crop_box,
    random_crop_boxes,
    random_flips,
    splitmix,
)
from tfrecordkit.codecs._image import (
    MAX_IMAGE_PIXELS,
    PIL_MODE_CHANNELS,
    check_image_pixels,
    convert_channels,
    decode_image_bytes,
    load_pillow,
    load_simplejpeg,
    scale_pixels,
)
from tfrecordkit.codecs._placement import BOX_MIN_AREA, BOX_MIN_SIZE, Placement, place_boxes
from tfrecordkit.codecs._resize import (
    pad_window,
    resize_image,
    resize_image_with_pad,
    resize_into,
    resize_kernel_name,
)
from tfrecordkit.codecs._sniff import (
    JPEG_MAGIC,
    ContentType,
    image_header,
    png_bit_depth,
    sniff_bytes,
)
from tfrecordkit.codecs._structure import image_structure_problem
from tfrecordkit.codecs._transform import Finish, ImageOptions, ImageTransform, RecordKeys

__all__ = [
    "BOX_MIN_AREA",
    "BOX_MIN_SIZE",
    "CROP_DRAWS",
    "CROP_SALT",
    "CROP_TRIES",
    "EXP_TERMS",
    "JPEG_MAGIC",
    "LN2_HI",
    "LN2_LO",
    "MAX_IMAGE_PIXELS",
    "PIL_MODE_CHANNELS",
    "ContentType",
    "Finish",
    "ImageOptions",
    "ImageTransform",
    "Placement",
    "RecordKeys",
    "center_crop_box",
    "center_crop_boxes",
    "check_image_pixels",
    "convert_channels",
    "crop_draws",
    "decode_image_bytes",
    "image_header",
    "image_structure_problem",
    "load_pillow",
    "load_simplejpeg",
    "load_soundfile",
    "mix_keys",
    "pad_window",
    "place_boxes",
    "png_bit_depth",
    "portable_exp",
    "random_crop_box",
    "random_crop_boxes",
    "random_flips",
    "resample_audio",
    "resize_image",
    "resize_image_with_pad",
    "resize_into",
    "resize_kernel_name",
    "scale_pixels",
    "sniff_bytes",
    "splitmix",
]

"""Every decode checks list type and count, and every encode the value's type and range."""

from __future__ import annotations

import io

import numpy as np
import pytest

from tfrecordkit import SchemaError, decode_example, encode_example
from tfrecordkit.schema import ClassLabel, Image, Scalar, Schema, Sequence, Tensor, Text


def test_a_string_feature_holding_ints_is_refused():
    schema = Schema({"s": Scalar("string")})
    with pytest.raises(SchemaError, match=r"'s'.*int64 list.*expects string"):
        schema.decode(encode_example({"s": 5}))


def test_an_int_sequence_holding_bytes_is_refused():
    schema = Schema({"seq": Sequence(Scalar("int64"))})
    with pytest.raises(SchemaError, match=r"'seq'.*string list.*expects int64"):
        schema.decode(encode_example({"seq": [b"a", b"b"]}))


def test_a_scalar_with_four_values_is_refused_not_truncated():
    schema = Schema({"n": Scalar("int64")})
    with pytest.raises(SchemaError, match=r"'n'.*4 value\(s\).*expects 1"):
        schema.decode(encode_example({"n": [1, 2, 3, 4]}))


def test_a_missing_fixed_key_is_refused_and_named_with_the_record():
    schema = Schema({"n": Scalar("int64"), "label": ClassLabel(["a", "b"])})
    with pytest.raises(SchemaError, match=r"record 7 of f\.tfrecord: feature 'label'.*missing"):
        schema.decode(encode_example({"n": 1}), source="7 of f.tfrecord")


def test_a_missing_variable_key_reads_as_empty_as_tensorflow_does():
    schema = Schema({"seq": Sequence(Scalar("float32")), "n": Scalar("int64")})
    decoded = schema.decode(encode_example({"n": 3}))
    assert len(decoded["seq"]) == 0


def test_sequence_of_strings_refuses_ints_instead_of_storing_nul_bytes():
    feature = Schema({"words": Sequence(Scalar("string"))})
    with pytest.raises(SchemaError, match=r"'words'.*expected str or bytes, got int"):
        feature.encode({"words": [1, 2, 3]})


def test_none_writes_an_empty_list_of_the_schema_type():
    schema = Schema({"ids": Sequence(Scalar("int64")), "words": Sequence(Text())})
    record = schema.encode({"ids": None, "words": None})
    from tfrecordkit.format._example import messages

    parsed = messages["Example"].FromString(record).features.feature
    assert parsed["ids"].WhichOneof("kind") == "int64_list"
    assert parsed["words"].WhichOneof("kind") == "bytes_list"
    assert schema.decode(record)["words"] == []
    # Untyped: an empty Feature, as tf.train.Feature() is.
    assert decode_example(encode_example({"x": None})) == {"x": []}


@pytest.mark.parametrize(("dtype", "bad"), [("uint8", 256), ("uint8", -1), ("int8", 128),
                                             ("int16", 40000), ("bool", 2)])
def test_narrow_int_scalars_check_their_range_both_ways(dtype, bad):
    schema = Schema({"v": Scalar(dtype)})
    with pytest.raises(SchemaError, match=f"does not fit {dtype}"):
        schema.encode({"v": bad})
    with pytest.raises(SchemaError, match=f"does not fit {dtype}"):
        schema.decode(encode_example({"v": bad}))


def test_class_label_out_of_range_on_read_is_refused():
    schema = Schema({"label": ClassLabel(["a", "b"])})
    for bad in (-1, 2):
        with pytest.raises(SchemaError, match=r"outside 0\.\.1"):
            schema.decode(encode_example({"label": bad}))


def test_tensor_bytes_that_do_not_fit_the_shape_are_refused():
    schema = Schema({"t": Tensor((None, 2), "float32")})
    good = schema.encode({"t": np.zeros((3, 2), np.float32)})
    assert schema.decode(good)["t"].shape == (3, 2)
    wrong_shape = encode_example({"t": np.zeros(6, np.float32).tobytes(), "t/shape": [-1, 2]})
    with pytest.raises(SchemaError, match="do not fit"):
        schema.decode(wrong_shape)
    short = encode_example({"t": b"\x00" * 20, "t/shape": [3, 2]})
    with pytest.raises(SchemaError, match="do not fit"):
        schema.decode(short)


def test_undecodable_images_and_text_name_the_feature_and_record():
    schema = Schema({"image": Image("png"), "caption": Text()})
    bad_image = encode_example({"image": b"\x89PNG\r\n\x1a\nnot really", "image/height": 1,
                                "image/width": 1, "image/channels": 1, "caption": "ok"})
    with pytest.raises(SchemaError, match=r"record 3: feature 'image': cannot decode"):
        schema.decode(bad_image, source=3)
    from PIL import Image as PILImage

    buffer = io.BytesIO()
    PILImage.new("L", (2, 2)).save(buffer, format="PNG")
    bad_text = encode_example({"image": buffer.getvalue(), "image/height": 2,
                               "image/width": 2, "image/channels": 1, "caption": b"\xff\xfe"})
    with pytest.raises(SchemaError, match=r"feature 'caption': cannot decode"):
        schema.decode(bad_text)


def test_not_an_example_is_a_schema_error_naming_the_record():
    with pytest.raises(SchemaError, match=r"record 0 of x: .*not a serialized"):
        Schema({"n": Scalar()}).decode(b"\xff\xff\xff", source="0 of x")


def test_schema_errors_pickle_with_their_reason():
    import pickle

    err = SchemaError("f", "something: with a colon", record=4)
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err) and again.reason == err.reason


def test_a_feature_list_with_no_steps_does_not_make_the_others_vary():
    """A record whose feature list is present but empty has no steps to count: the steps of
    the other records still give one fixed step width (it was read as varying)."""
    from tfrecordkit.format import encode_sequence_example
    from tfrecordkit.schema import profile_records

    records = [encode_sequence_example({"id": [i]}, {"frames": [[t, -t] for t in range(i % 3)]})
               for i in range(6)]
    spec = profile_records(records).features["frames"].key_spec(6)
    assert spec.sequence and spec.shape == (2,)

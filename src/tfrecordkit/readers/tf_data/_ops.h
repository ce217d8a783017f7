// What every op of the library's TensorFlow kernels includes (_read_frames.cc,
// _crop_windows.cc): TensorFlow's op and kernel headers, the numbers shared with the Python
// twins (format/_constants.h, generated from tfrecordkit/_constants.py), and the names used.
#ifndef TFRECORDKIT_OPS_H
#define TFRECORDKIT_OPS_H

#include <cstdint>

#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/platform/errors.h"

extern "C" {
#include "_constants.h"
}

namespace tfrecordkit_ops {
using tensorflow::int64;
using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Status;
using tensorflow::Tensor;
}  // namespace tfrecordkit_ops

#endif

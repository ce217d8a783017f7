// TfrecordkitReadFrames: TFRecord frames read by offset, their CRCs checked, as a string
// tensor of the records' payloads. tf.data's step reader calls it once a step with the
// step's locations (file, byte offset, frame length), so a shuffled step is read without
// a Python call holding its bytes. Built on first use against the installed TensorFlow
// (readers/tf_data/_native.py); without a compiler the Python step reader reads instead.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/platform/env.h"
#include "tensorflow/core/platform/file_system.h"

extern "C" {
#include "_crc32c.h"
}

namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::RandomAccessFile;
using tensorflow::Status;
using tensorflow::Tensor;
using tensorflow::int64;

constexpr int64 kMergeGap = 16 << 10;  // records closer than this are read in one span
constexpr size_t kMaxOpen = 128;       // files kept open by one kernel

uint32_t LoadU32(const char* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

uint64_t LoadU64(const char* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

REGISTER_OP("TfrecordkitReadFrames")
    .Input("files: string")
    .Input("shards: int32")
    .Input("offsets: int64")
    .Input("lengths: int64")
    .Output("records: string")
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      c->set_output(0, c->input(2));
      return tensorflow::OkStatus();
    })
    .Doc("The payloads of the TFRecord frames at files[shards[i]], byte offsets[i], "
         "lengths[i] bytes long (header and footer included), their CRCs checked.");

class ReadFramesOp : public OpKernel {
 public:
  explicit ReadFramesOp(OpKernelConstruction* context) : OpKernel(context) {
    static std::once_flag once;
    std::call_once(once, [] { crc_setup(); });
  }

  void Compute(OpKernelContext* context) override {
    const Tensor& files = context->input(0);
    const Tensor& shards = context->input(1);
    const Tensor& offsets = context->input(2);
    const Tensor& lengths = context->input(3);
    OP_REQUIRES(context,
                files.dims() == 1 && shards.dims() == 1 && offsets.dims() == 1 &&
                    lengths.dims() == 1 && shards.NumElements() == offsets.NumElements() &&
                    lengths.NumElements() == offsets.NumElements(),
                tensorflow::errors::InvalidArgument(
                    "files, shards, offsets and lengths must be vectors; the last three of "
                    "one length"));
    const auto names = files.flat<tensorflow::tstring>();
    const auto shard = shards.flat<int32_t>();
    const auto offset = offsets.flat<int64>();
    const auto length = lengths.flat<int64>();
    const int64 n = offsets.NumElements();
    Tensor* out = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, offsets.shape(), &out));
    auto records = out->flat<tensorflow::tstring>();
    for (int64 i = 0; i < n; ++i) {
      OP_REQUIRES(context,
                  shard(i) >= 0 && shard(i) < names.size() && offset(i) >= 0 &&
                      length(i) >= 16 && offset(i) <= INT64_MAX - length(i),
                  tensorflow::errors::InvalidArgument("record ", i, ": no such location"));
    }
    // In file order, records close together read in one span.
    std::vector<int64> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int64 a, int64 b) {
      return shard(a) != shard(b) ? shard(a) < shard(b) : offset(a) < offset(b);
    });
    std::string scratch;
    for (int64 first = 0; first < n;) {
      const int32_t file = shard(order[first]);
      const int64 begin = offset(order[first]);
      int64 end = begin + length(order[first]);
      int64 last = first + 1;
      while (last < n && shard(order[last]) == file &&
             offset(order[last]) <= end + kMergeGap) {
        end = std::max(end, offset(order[last]) + length(order[last]));
        ++last;
      }
      const std::string name(names(file));
      Opened opened;
      OP_REQUIRES_OK(context, Open(name, &opened));
      // Locations come from index files (untrusted): none reaches past the file's end.
      for (int64 k = first; k < last; ++k) {
        const int64 i = order[k];
        OP_REQUIRES(context,
                    length(i) <= opened.size && offset(i) <= opened.size - length(i),
                    tensorflow::errors::DataLoss(name, ": truncated: record at byte ",
                                                 offset(i), " of ", length(i),
                                                 " bytes, the file has ", opened.size));
      }
      const std::shared_ptr<RandomAccessFile>& handle = opened.file;
      scratch.resize(end - begin);
      tensorflow::StringPiece got;
      Status read = handle->Read(begin, end - begin, &got, &scratch[0]);
      OP_REQUIRES(context, got.size() == static_cast<size_t>(end - begin),
                  tensorflow::errors::DataLoss(name, ": truncated: ", end - begin,
                                               " bytes wanted at byte ", begin, ", ",
                                               got.size(), " there (", read.ToString(), ")"));
      for (int64 k = first; k < last; ++k) {
        const int64 i = order[k];
        const char* frame = got.data() + (offset(i) - begin);
        const uint64_t size = LoadU64(frame);
        OP_REQUIRES(context,
                    size == static_cast<uint64_t>(length(i) - 16) &&
                        masked_crc(reinterpret_cast<const uint8_t*>(frame), 8) ==
                            LoadU32(frame + 8),
                    tensorflow::errors::DataLoss(name, ": record at byte ", offset(i),
                                                 ": corrupt length header (CRC mismatch or "
                                                 "not the indexed length)"));
        OP_REQUIRES(context,
                    masked_crc(reinterpret_cast<const uint8_t*>(frame + 12), size) ==
                        LoadU32(frame + 12 + size),
                    tensorflow::errors::DataLoss(name, ": record at byte ", offset(i),
                                                 ": data CRC mismatch"));
        records(i).assign(frame + 12, size);
      }
      first = last;
    }
  }

 private:
  struct Opened {
    std::shared_ptr<RandomAccessFile> file;
    int64 size = 0;  // when opened (shards are not written again once indexed)
  };

  Status Open(const std::string& name, Opened* opened) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto found = open_.find(name);
      if (found != open_.end()) {
        *opened = found->second;
        return tensorflow::OkStatus();
      }
    }
    tensorflow::Env* env = tensorflow::Env::Default();
    std::unique_ptr<RandomAccessFile> file;
    tensorflow::uint64 size = 0;
    Status status = env->NewRandomAccessFile(name, &file);
    if (status.ok()) status = env->GetFileSize(name, &size);
    if (!status.ok()) return status;
    opened->file = std::shared_ptr<RandomAccessFile>(std::move(file));
    opened->size = static_cast<int64>(size);
    std::lock_guard<std::mutex> lock(mu_);
    if (open_.size() >= kMaxOpen) open_.clear();  // those in use stay open until done
    open_.emplace(name, *opened);
    return tensorflow::OkStatus();
  }

  std::mutex mu_;
  std::unordered_map<std::string, Opened> open_;
};

REGISTER_KERNEL_BUILDER(Name("TfrecordkitReadFrames").Device(tensorflow::DEVICE_CPU),
                        ReadFramesOp);

}  // namespace

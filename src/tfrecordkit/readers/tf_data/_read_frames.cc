// TfrecordkitReadFrames, one of the library's TensorFlow kernels (built on first use
// against the installed TensorFlow with the other, _crop_windows.cc, into one library: see
// readers/tf_data/_kernels.py; without a compiler the pipelines read with a Python call
// instead, same values, slower): TFRecord frames read by offset, their CRCs checked, as a
// string tensor of the records' payloads. tf.data's step reader calls it once a step with
// the step's locations (file, byte offset, frame length): a shuffled step is read without a
// Python call holding its bytes. Each file is the one the dataset was made over (its inode,
// size and modification time, given as "stamps"): one replaced since is an error when
// opened, and one held open stays the file it was.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "_ops.h"

extern "C" {
#include "_crc32c.h"
}

namespace {

using namespace tfrecordkit_ops;  // NOLINT: the kernels' shared names (_ops.h)

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
    .Input("stamps: int64")
    .Input("shards: int32")
    .Input("offsets: int64")
    .Input("lengths: int64")
    .Output("records: string")
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      c->set_output(0, c->input(3));
      return tensorflow::OkStatus();
    })
    .Doc("The payloads of the TFRecord frames at files[shards[i]], byte offsets[i], "
         "lengths[i] bytes long (header and footer included), their CRCs checked; each "
         "file as stamps[k] (inode, size, modification time in ns) says it was.");

// A file's identity when the dataset was made: a file written again (renamed over, or
// rewritten in place) differs in one of them.
struct Stamp {
  int64 inode = 0, size = 0, mtime = 0;
  bool operator==(const Stamp& other) const {
    return inode == other.inode && size == other.size && mtime == other.mtime;
  }
};

struct File {
  int fd = -1;
  int64 size = 0;
  File() = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() {
    if (fd >= 0) close(fd);
  }
};

class ReadFramesOp : public OpKernel {
 public:
  explicit ReadFramesOp(OpKernelConstruction* context) : OpKernel(context) {
    static std::once_flag once;
    std::call_once(once, [] { crc_setup(); });
  }

  void Compute(OpKernelContext* context) override {
    const Tensor& files = context->input(0);
    const Tensor& stamps = context->input(1);
    const Tensor& shards = context->input(2);
    const Tensor& offsets = context->input(3);
    const Tensor& lengths = context->input(4);
    OP_REQUIRES(context,
                files.dims() == 1 && stamps.dims() == 2 && stamps.dim_size(1) == 3 &&
                    stamps.dim_size(0) == files.dim_size(0) && shards.dims() == 1 &&
                    offsets.dims() == 1 && lengths.dims() == 1 &&
                    shards.NumElements() == offsets.NumElements() &&
                    lengths.NumElements() == offsets.NumElements(),
                tensorflow::errors::InvalidArgument(
                    "files [f], stamps [f, 3], and shards, offsets and lengths [n] expected"));
    const auto names = files.flat<tensorflow::tstring>();
    const auto stamp = stamps.matrix<int64>();
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
    int32_t current = -1;  // the file `opened` is: spans come file by file
    std::shared_ptr<File> opened;
    for (int64 first = 0; first < n;) {
      const int32_t file = shard(order[first]);
      const int64 begin = offset(order[first]);
      int64 end = begin + length(order[first]);
      int64 last = first + 1;
      // (offset - gap, not end + gap: an index's offsets are untrusted, end + gap could
      // overflow)
      while (last < n && shard(order[last]) == file &&
             offset(order[last]) - kMergeGap <= end) {
        end = std::max(end, offset(order[last]) + length(order[last]));
        ++last;
      }
      const std::string name(names(file));
      if (file != current) {  // spans come file by file: each file looked up once a call
        OP_REQUIRES_OK(context, Open(name, Stamp{stamp(file, 0), stamp(file, 1),
                                                 stamp(file, 2)}, &opened));
        current = file;
      }
      // Locations come from index files (untrusted): none reaches past the file's end.
      for (int64 k = first; k < last; ++k) {
        const int64 i = order[k];
        OP_REQUIRES(context,
                    length(i) <= opened->size && offset(i) <= opened->size - length(i),
                    tensorflow::errors::DataLoss(name, ": truncated: record at byte ",
                                                 offset(i), " of ", length(i),
                                                 " bytes, the file has ", opened->size));
      }
      scratch.resize(end - begin);
      OP_REQUIRES_OK(context, ReadAt(*opened, name, begin, end - begin, &scratch[0]));
      for (int64 k = first; k < last; ++k) {
        const int64 i = order[k];
        const char* frame = scratch.data() + (offset(i) - begin);
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
  // The file `name` is, open: kept from an earlier call when it was opened as the same
  // stamp (no system call), else opened and checked against the stamp.
  Status Open(const std::string& name, const Stamp& expected, std::shared_ptr<File>* out) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto found = open_.find(name);
      if (found != open_.end() && found->second.first == expected) {
        *out = found->second.second;
        return tensorflow::OkStatus();
      }
    }
    auto file = std::make_shared<File>();
    file->fd = open(name.c_str(), O_RDONLY | O_CLOEXEC);
    if (file->fd < 0) return tensorflow::errors::IOError(name, errno);
    struct stat st;
    if (fstat(file->fd, &st) != 0) return tensorflow::errors::IOError(name, errno);
    const Stamp now{static_cast<int64>(st.st_ino), static_cast<int64>(st.st_size),
                    static_cast<int64>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
    if (!(now == expected)) {
      return tensorflow::errors::FailedPrecondition(
          name, ": replaced or rewritten since the dataset was opened (another inode, size or "
          "modification time): open the dataset again to read it");
    }
    file->size = now.size;
    std::lock_guard<std::mutex> lock(mu_);
    if (open_.size() >= kMaxOpen) open_.clear();  // those in use stay open until done
    open_[name] = {expected, file};
    *out = file;
    return tensorflow::OkStatus();
  }

  static Status ReadAt(const File& file, const std::string& name, int64 at, int64 size,
                       char* into) {
    for (int64 done = 0; done < size;) {
      const ssize_t got = pread(file.fd, into + done, size - done, at + done);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return tensorflow::errors::IOError(name, errno);
      if (got == 0) {
        return tensorflow::errors::DataLoss(name, ": truncated: ", size, " bytes wanted at byte ",
                                            at, ", ", done, " there");
      }
      done += got;
    }
    return tensorflow::OkStatus();
  }

  std::mutex mu_;
  std::unordered_map<std::string, std::pair<Stamp, std::shared_ptr<File>>> open_;
};

REGISTER_KERNEL_BUILDER(Name("TfrecordkitReadFrames").Device(tensorflow::DEVICE_CPU),
                        ReadFramesOp);


}  // namespace

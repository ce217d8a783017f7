// TfrecordkitCropWindows, one of the library's TensorFlow kernels (built with
// _read_frames.cc into one library: readers/tf_data/_kernels.py): a batch's random-resized-
// crop windows and flips from the JPEGs' headers and the records' crop keys, the arithmetic
// of tfrecordkit.codecs._crop in the same IEEE float64 operations in the same order (built
// with -ffp-contract=off), so the windows are those of every other reader, bit for bit; one
// op where the same in-graph computation is ~400 TensorFlow ops to build and run. Without a
// compiler, readers/tf_data/_crop.py's TensorFlow ops compute the same windows.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "_ops.h"

namespace {

using namespace tfrecordkit_ops;  // NOLINT: the kernels' shared names (_ops.h)

// -- crop windows: tfrecordkit.codecs._crop's arithmetic ----------------------------------

// The numbers: tfrecordkit/_constants.py, through the generated _constants.h.
constexpr int kTries = TFRK_CROP_TRIES;
constexpr int kDraws = 4 * kTries + 1;
constexpr uint64_t kSalt = TFRK_CROP_SALT;
constexpr double kLn2Hi = TFRK_LN2_HI;
constexpr double kLn2Lo = TFRK_LN2_LO;
constexpr int kExpTerms = TFRK_EXP_TERMS;

uint64_t SplitMix(uint64_t x) {
  x += TFRK_SPLITMIX_GAMMA;
  x = (x ^ (x >> TFRK_SPLITMIX_SHIFTS_0)) * TFRK_SPLITMIX_MUL1;
  x = (x ^ (x >> TFRK_SPLITMIX_SHIFTS_1)) * TFRK_SPLITMIX_MUL2;
  return x ^ (x >> TFRK_SPLITMIX_SHIFTS_2);
}

// portable_exp: range reduction and a Taylor polynomial (libm's exp differs in last bits).
double PortableExp(double x) {
  const double n = std::nearbyint(x / kLn2Hi);
  const double r = (x - n * kLn2Hi) - n * kLn2Lo;
  double term = 1.0, total = 1.0;
  for (int k = 1; k < kExpTerms; ++k) {
    term = term * r / static_cast<double>(k);
    total = total + term;
  }
  return std::ldexp(total, static_cast<int>(n));
}

// A JPEG's height and width from its frame header, walking the segments as libjpeg's
// jpeg_read_header does (an EXIF thumbnail's header inside APP1 is skipped with it).
const char* JpegSize(const unsigned char* p, size_t n, int64* height, int64* width) {
  if (n < 3 || p[0] != 0xFF || p[1] != 0xD8) return "not a JPEG (no SOI marker)";
  size_t i = 2;
  for (;;) {
    while (i < n && p[i] != 0xFF) ++i;  // bytes before a marker (libjpeg warns, skips)
    while (i < n && p[i] == 0xFF) ++i;  // fill bytes
    if (i >= n) return "no frame header before the data ends";
    const unsigned char marker = p[i++];
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;  // standalone
    if (marker == 0xD8) return "two SOI markers";
    if (marker == 0xD9 || marker == 0xDA) return "no frame header before the image data";
    if (i + 2 > n) return "a segment cut short";
    const size_t length = (static_cast<size_t>(p[i]) << 8) | p[i + 1];
    if (length < 2) return "a segment of a bad length";
    const bool frame = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 &&
                       marker != 0xC8 && marker != 0xCC;
    if (frame) {
      if (length < 8 || i + 7 > n) return "a frame header cut short";
      *height = (static_cast<int64>(p[i + 3]) << 8) | p[i + 4];
      *width = (static_cast<int64>(p[i + 5]) << 8) | p[i + 6];
      if (*height == 0 || *width == 0) return "an empty frame (DNL is not supported)";
      return nullptr;
    }
    i += length;
  }
}

REGISTER_OP("TfrecordkitCropWindows")
    .Input("images: string")
    .Input("keys: int64")
    .Input("seed: int64")
    .Input("params: float64")
    .Output("sizes: int64")
    .Output("windows: int64")
    .Output("flips: bool")
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      auto n = c->Dim(c->input(0), 0);
      c->set_output(0, c->Matrix(n, 2));
      c->set_output(1, c->Matrix(n, 4));
      c->set_output(2, c->Vector(n));
      return tensorflow::OkStatus();
    });

// params: scale low and high, log of the ratio's low and high, the ratio's min and max,
// whether to flip (1.0), whether images may be in other formats than JPEG (1.0: those get
// size 1x1, decoded whole and cut elsewhere).
class CropWindowsOp : public OpKernel {
 public:
  explicit CropWindowsOp(OpKernelConstruction* context) : OpKernel(context) {}
  void Compute(OpKernelContext* context) override {
    OP_REQUIRES(context,
                context->input(0).dims() == 1 && context->input(1).dims() == 2 &&
                    context->input(1).dim_size(0) == context->input(0).dim_size(0) &&
                    context->input(1).dim_size(1) == 2 &&
                    context->input(3).NumElements() == 8,
                tensorflow::errors::InvalidArgument(
                    "images [n], keys [n, 2] and params [8] expected"));
    const auto images = context->input(0).flat<tensorflow::tstring>();
    const auto keys = context->input(1).matrix<int64>();
    const uint64_t seed = static_cast<uint64_t>(context->input(2).scalar<int64>()());
    const auto p = context->input(3).flat<double>();
    const int64 n = images.size();
    Tensor* sizes_t = nullptr;
    Tensor* windows_t = nullptr;
    Tensor* flips_t = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, {n, 2}, &sizes_t));
    OP_REQUIRES_OK(context, context->allocate_output(1, {n, 4}, &windows_t));
    OP_REQUIRES_OK(context, context->allocate_output(2, {n}, &flips_t));
    auto sizes = sizes_t->matrix<int64>();
    auto windows = windows_t->matrix<int64>();
    auto flips = flips_t->flat<bool>();
    const double s0 = p(0), s1 = p(1), low = p(2), high = p(3), rmin = p(4), rmax = p(5);
    const bool flip = p(6) != 0.0, any_format = p(7) != 0.0;
    const uint64_t seeded = SplitMix(0 ^ seed);
    for (int64 i = 0; i < n; ++i) {
      uint64_t key = SplitMix(seeded ^ static_cast<uint64_t>(keys(i, 0)));
      key = SplitMix(key ^ kSalt);
      const uint64_t record = SplitMix(key ^ SplitMix(static_cast<uint64_t>(keys(i, 1))));
      double u[kDraws];
      for (int j = 0; j < kDraws; ++j) {
        const uint64_t bits = SplitMix(record ^ SplitMix(static_cast<uint64_t>(j + 1)));
        u[j] = static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
      }
      const auto& image = images(i);
      const auto* bytes = reinterpret_cast<const unsigned char*>(image.data());
      int64 height = 1, width = 1;  // not a JPEG, where other formats may be: decoded whole
      if (!any_format || (image.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 &&
                          bytes[2] == 0xFF)) {
        const char* bad = JpegSize(bytes, image.size(), &height, &width);
        OP_REQUIRES(context, bad == nullptr,
                    tensorflow::errors::InvalidArgument("image ", i, " of the batch: ",
                                                        bad ? bad : ""));
      }
      sizes(i, 0) = height;
      sizes(i, 1) = width;
      const double area = static_cast<double>(height * width);
      const double h64 = static_cast<double>(height), w64 = static_cast<double>(width);
      flips(i) = flip && u[kDraws - 1] < 0.5;
      bool found = false;
      for (int t = 0; t < kTries && !found; ++t) {
        const double target = area * (s0 + (s1 - s0) * u[4 * t]);
        const double aspect = PortableExp(low + (high - low) * u[4 * t + 1]);
        const double w = std::nearbyint(std::sqrt(target * aspect));
        const double h = std::nearbyint(std::sqrt(target / aspect));
        if (w > 0 && w <= w64 && h > 0 && h <= h64) {
          windows(i, 0) = static_cast<int64>(std::floor(u[4 * t + 2] * (h64 - h + 1.0)));
          windows(i, 1) = static_cast<int64>(std::floor(u[4 * t + 3] * (w64 - w + 1.0)));
          windows(i, 2) = static_cast<int64>(h);
          windows(i, 3) = static_cast<int64>(w);
          found = true;
        }
      }
      if (found) continue;
      const double in_ratio = w64 / std::max(h64, 1.0);
      double fh = h64, fw = w64;
      if (in_ratio < rmin) {
        fh = std::nearbyint(w64 / rmin);
      } else if (in_ratio > rmax) {
        fw = std::nearbyint(h64 * rmax);
      }
      fh = std::min(std::max(fh, 1.0), h64);
      fw = std::min(std::max(fw, 1.0), w64);
      const int64 fhi = static_cast<int64>(fh), fwi = static_cast<int64>(fw);
      windows(i, 0) = (height - fhi) / 2;  // fhi <= height, fwi <= width: never negative
      windows(i, 1) = (width - fwi) / 2;
      windows(i, 2) = fhi;
      windows(i, 3) = fwi;
    }
  }
};

REGISTER_KERNEL_BUILDER(Name("TfrecordkitCropWindows").Device(tensorflow::DEVICE_CPU),
                        CropWindowsOp);
}  // namespace

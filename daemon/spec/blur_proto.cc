// GaussianBlur, Pillow's GaussianBlur and RandomSolarize in a JobSpec:
// validation and back.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "daemon/spec/ops_proto.h"

namespace stoker {

absl::Status ParseBlur(const OpError& e, const v1::GaussianBlur& op,
                       Pipeline* p) {
  BlurSpec& b = p->blur;
  const uint32_t sizes[2] = {op.kernel_x(), op.kernel_y()};
  const int sides[2] = {p->output.width, p->output.height};
  const char* names[2] = {"kernel_x", "kernel_y"};
  for (int i = 0; i < 2; ++i) {
    const uint32_t k = sizes[i];
    if (k % 2 == 0 || k > 255) {
      return e.Bad(names[i],
                   absl::StrCat("must be odd and at most 255, got ", k));
    }
    // torch pads by k / 2 in reflect mode, which needs that much image.
    if (int(k / 2) >= sides[i]) {
      return e.Bad(names[i], absl::StrCat("must be below twice the image's ",
                                          i == 0 ? "width" : "height", " (",
                                          sides[i], "), got ", k));
    }
  }
  // Each value takes kernel_x * kernel_y taps: bound a sample's work (a
  // 23x23 blur of 224x224 images is 1.3e8 taps a channel).
  const double taps =
      double(op.kernel_x()) * op.kernel_y() * double(p->output.Pixels());
  if (taps > kMaxBlurTaps) {
    return e.Bad("kernel_x", absl::StrCat("* kernel_y * the image's pixels "
                                          "must be at most ",
                                          kMaxBlurTaps, ", got ", taps));
  }
  b.kernel_x = int(op.kernel_x());
  b.kernel_y = int(op.kernel_y());
  b.sigma_min = op.has_sigma_min() ? op.sigma_min() : 0.1;
  b.sigma_max = op.has_sigma_max() ? op.sigma_max() : 2.0;
  if (!(b.sigma_min > 0 && b.sigma_min <= b.sigma_max && b.sigma_max <= 1000)) {
    return e.Bad("sigma_min",
                 absl::StrCat("and sigma_max must satisfy 0 < min <= max <= "
                              "1000, got [",
                              b.sigma_min, ", ", b.sigma_max, "]"));
  }
  b.enabled = true;
  return ParseProbability(e, op.has_p(), op.p(), 1.0, &b.p);
}

absl::Status ParsePillowBlur(const OpError& e, const v1::PillowGaussianBlur& op,
                             Pipeline* p) {
  BlurSpec& b = p->blur;
  b.pillow = true;
  b.sigma_min = op.has_radius_min() ? op.radius_min() : 0.1;
  b.sigma_max = op.has_radius_max() ? op.radius_max() : 2.0;
  // Pillow's passes are linear in the pixels whatever the radius.
  if (!(b.sigma_min >= 0 && b.sigma_min <= b.sigma_max &&
        b.sigma_max <= 1000)) {
    return e.Bad("radius_min",
                 absl::StrCat("and radius_max must satisfy 0 <= min <= max <= "
                              "1000, got [",
                              b.sigma_min, ", ", b.sigma_max, "]"));
  }
  b.enabled = true;
  return ParseProbability(e, op.has_p(), op.p(), 1.0, &b.p);
}

absl::Status ParseSolarize(const OpError& e, const v1::RandomSolarize& op,
                           Pipeline* p) {
  SolarizeSpec& s = p->solarize;
  s.threshold = op.has_threshold() ? op.threshold() : 128.0;
  if (!(s.threshold >= 0 && s.threshold <= 256)) {
    return e.Bad("threshold",
                 absl::StrCat("must be in [0, 256], got ", s.threshold));
  }
  return ParseProbability(e, op.has_p(), op.p(), 0.5, &s.p);
}

void SolarizeToProto(const SolarizeSpec& s, v1::JobSpec* spec) {
  auto* op = spec->add_pipeline()->mutable_random_solarize();
  op->set_threshold(float(s.threshold));
  op->set_p(float(s.p));
}

void BlurToProto(const BlurSpec& b, v1::JobSpec* spec) {
  if (!b.enabled) return;
  if (b.pillow) {
    auto* op = spec->add_pipeline()->mutable_pillow_gaussian_blur();
    op->set_radius_min(float(b.sigma_min));
    op->set_radius_max(float(b.sigma_max));
    if (b.p < 1) op->set_p(float(b.p));
    return;
  }
  auto* op = spec->add_pipeline()->mutable_gaussian_blur();
  op->set_kernel_x(b.kernel_x);
  op->set_kernel_y(b.kernel_y);
  op->set_sigma_min(float(b.sigma_min));
  op->set_sigma_max(float(b.sigma_max));
  if (b.p < 1) op->set_p(float(b.p));
}

}  // namespace stoker

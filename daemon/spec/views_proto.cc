#include "daemon/spec/views_proto.h"

#include "absl/strings/str_cat.h"
#include "daemon/spec/pipeline_proto.h"

namespace stoker {

absl::StatusOr<std::vector<Pipeline>> ParseViews(const v1::JobSpec& spec) {
  std::vector<Pipeline> views;
  const int n = spec.views_size();
  if (n == 0) return views;
  if (n > kMaxViews) {
    return absl::InvalidArgumentError(
        absl::StrCat("views holds ", n, " views, at most ", kMaxViews));
  }
  if (spec.pipeline_size() > 0 || spec.output().ByteSizeLong() != 0) {
    return absl::InvalidArgumentError(
        "views replace the job's pipeline and output: leave those empty and "
        "give each view its own");
  }
  for (int v = 0; v < n; ++v) {
    v1::JobSpec one;
    *one.mutable_pipeline() = spec.views(v).pipeline();
    *one.mutable_output() = spec.views(v).output();
    *one.mutable_reference() = spec.reference();
    one.set_fast_resample(spec.fast_resample());
    if (one.pipeline_size() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("views[", v,
                       "] has no pipeline: a view needs its own crop or "
                       "resize"));
    }
    absl::StatusOr<Pipeline> pipeline = ParsePipeline(one);
    if (!pipeline.ok()) {
      return absl::Status(
          pipeline.status().code(),
          absl::StrCat("views[", v, "]: ", pipeline.status().message()));
    }
    views.push_back(*std::move(pipeline));
  }
  return views;
}

absl::Status CheckViewNames(const JobConfig& config) {
  if (config.views.empty()) return absl::OkStatus();
  for (const FieldConfig& image : config.fields) {
    if (image.role != FieldRole::kImage) continue;
    for (const FieldConfig& other : config.fields) {
      for (size_t v = 0; v < config.views.size(); ++v) {
        if (other.name == absl::StrCat(image.name, ".", v)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "fields: '", other.name, "' is the name of view ", v,
              " of the image field '", image.name, "'; name it otherwise"));
        }
      }
    }
  }
  return absl::OkStatus();
}

void ViewsToProto(const std::vector<Pipeline>& views, v1::JobSpec* spec) {
  spec->clear_views();
  if (views.empty()) return;
  spec->clear_pipeline();
  spec->clear_output();
  for (const Pipeline& p : views) {
    v1::JobSpec one;
    PipelineToProto(p, &one);
    v1::View* view = spec->add_views();
    *view->mutable_pipeline() = one.pipeline();
    *view->mutable_output() = one.output();
  }
}

}  // namespace stoker

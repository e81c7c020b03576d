#include "daemon/spec/fields_proto.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/batch_wire.h"
#include "common/image_suffixes.h"
#include "common/status_macros.h"
#include "common/vocabulary_wire.h"

namespace stoker {
namespace {

absl::Status Bad(int i, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("fields[", i, "] ", what));
}

bool Printable(absl::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
  });
}

absl::Status CheckName(int i, const std::string& name,
                       const std::vector<FieldConfig>& before) {
  if (name.empty() || name.size() > kMaxFieldNameBytes || !Printable(name)) {
    return Bad(i, absl::StrCat("name must be 1 to ", kMaxFieldNameBytes,
                               " printable bytes, got '",
                               absl::CHexEscape(name.substr(0, 40)), "'"));
  }
  if (name == kIndicesTensor) {
    return Bad(i,
               "name 'indices' is the batch's own (each row's dataset "
               "index); name the field otherwise");
  }
  for (const FieldConfig& other : before) {
    if (other.name == name) {
      return Bad(i, absl::StrCat("name '", name, "' names another field too"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSources(int i, const v1::SampleField& field, bool manifest) {
  if (field.source_size() == 0 || field.source_size() > int(kMaxFieldSources)) {
    return Bad(i, absl::StrCat("source must hold 1 to ", kMaxFieldSources,
                               " names, got ", field.source_size()));
  }
  if (manifest && field.source_size() != 1) {
    return Bad(i, absl::StrCat("source names one manifest column, not ",
                               field.source_size()));
  }
  for (const std::string& source : field.source()) {
    if (source.empty() || source.size() > kMaxFieldSourceBytes ||
        !Printable(source) || (!manifest && source.find('/') != source.npos)) {
      return Bad(
          i, absl::StrCat("source '", absl::CHexEscape(source.substr(0, 40)),
                          "' must be 1 to ", kMaxFieldSourceBytes,
                          " printable bytes",
                          manifest ? "" : " without '/' (a member suffix)"));
    }
    if (!manifest && source != absl::AsciiStrToLower(source)) {
      return Bad(i, absl::StrCat("source '", absl::CHexEscape(source),
                                 "' has upper-case letters; member suffixes "
                                 "are lower-cased, so it would match none"));
    }
  }
  return absl::OkStatus();
}

// The role a field's kind gives it; kAuto is chosen by its source.
absl::StatusOr<FieldRole> RoleOf(int i, const v1::SampleField& field,
                                 bool manifest) {
  const std::optional<FieldKind> kind = FromWire(field.kind());
  if (!kind) return Bad(i, absl::StrCat("kind: unknown value ", field.kind()));
  if (*kind == FieldKind::kImage) return FieldRole::kImage;
  if (*kind == FieldKind::kBytes) return FieldRole::kBytes;
  if (*kind == FieldKind::kMask) return FieldRole::kMask;
  if (manifest) {
    return field.source(0) == "path" ? FieldRole::kImage : FieldRole::kBytes;
  }
  const bool image = IsImageSuffix(field.source(0));
  for (const std::string& source : field.source()) {
    if (IsImageSuffix(source) != image) {
      return Bad(i,
                 absl::StrCat("'", field.name(),
                              "' mixes image suffixes and others; one field is "
                              "either an image or bytes (or set its kind)"));
    }
  }
  return image ? FieldRole::kImage : FieldRole::kBytes;
}

absl::Status CheckImages(const std::vector<FieldConfig>& fields) {
  const auto images = std::count_if(
      fields.begin(), fields.end(),
      [](const FieldConfig& f) { return f.role == FieldRole::kImage; });
  if (images == 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "fields: a job's samples hold exactly one image field (decoded through "
      "the pipeline), this one has ",
      images,
      images == 0 ? "; add the image's suffixes (\"jpg;png\") or manifest "
                    "column"
                  : "; a second image per sample is not supported yet "
                    "(views of one image: JobSpec.views; a label mask: "
                    "FIELD_KIND_MASK); carry the others "
                    "as bytes fields"));
}

}  // namespace

absl::Status ParseFields(const v1::JobSpec& spec, JobConfig* config) {
  const std::optional<MissingField> missing = FromWire(spec.missing());
  if (!missing) {
    return absl::InvalidArgumentError(
        absl::StrCat("missing: unknown value ", spec.missing(),
                     " (expected MISSING_FIELD_ERROR or MISSING_FIELD_SKIP)"));
  }
  config->missing = *missing;
  config->max_field_bytes = spec.max_field_bytes();
  if (spec.fields_size() == 0) {
    if (spec.missing() != v1::MISSING_FIELD_UNSPECIFIED ||
        spec.max_field_bytes() != 0) {
      return absl::InvalidArgumentError(
          "missing and max_field_bytes apply to a job with fields only");
    }
    return absl::OkStatus();
  }
  if (config->dataset_kind == DatasetKind::kImageFolder) {
    return absl::InvalidArgumentError(
        "fields apply to tar shards and manifests; an ImageFolder's samples "
        "are (image, class)");
  }
  if (!config->label_field.empty()) {
    return absl::InvalidArgumentError(
        "dataset.label_field applies to a classic job: with fields, name the "
        "json member as a field and read its key in the trainer");
  }
  if (spec.fields_size() > int(kMaxFields)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fields holds ", spec.fields_size(), " fields, at most ", kMaxFields));
  }
  const bool manifest = config->dataset_kind == DatasetKind::kManifest;
  std::vector<FieldConfig> fields;
  for (int i = 0; i < spec.fields_size(); ++i) {
    const v1::SampleField& field = spec.fields(i);
    STOKER_RETURN_IF_ERROR(CheckName(i, field.name(), fields));
    STOKER_RETURN_IF_ERROR(CheckSources(i, field, manifest));
    STOKER_ASSIGN_OR_RETURN(const FieldRole role, RoleOf(i, field, manifest));
    fields.push_back(
        {field.name(), {field.source().begin(), field.source().end()}, role});
  }
  STOKER_RETURN_IF_ERROR(CheckImages(fields));
  config->fields = std::move(fields);
  config->named_fields = true;
  return absl::OkStatus();
}

void FieldsToProto(const JobConfig& config, v1::JobSpec* spec) {
  if (!config.named_fields) return;
  for (const FieldConfig& field : config.fields) {
    v1::SampleField* out = spec->add_fields();
    out->set_name(field.name);
    for (const std::string& source : field.source) out->add_source(source);
    out->set_kind(field.role == FieldRole::kImage  ? v1::FIELD_KIND_IMAGE
                  : field.role == FieldRole::kMask ? v1::FIELD_KIND_MASK
                                                   : v1::FIELD_KIND_BYTES);
  }
  spec->set_missing(ToWire(config.missing));
  spec->set_max_field_bytes(config.max_field_bytes);
}

}  // namespace stoker

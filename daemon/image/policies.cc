#include "daemon/image/policies.h"

namespace stoker {
namespace {

using Op = AugmentOp;

constexpr PolicyStep kImageNet[] = {
    {Op::kPosterize, 0.4f, 8}, {Op::kRotate, 0.6f, 9},
    {Op::kSolarize, 0.6f, 5},  {Op::kAutoContrast, 0.6f, -1},
    {Op::kEqualize, 0.8f, -1}, {Op::kEqualize, 0.6f, -1},
    {Op::kPosterize, 0.6f, 7}, {Op::kPosterize, 0.6f, 6},
    {Op::kEqualize, 0.4f, -1}, {Op::kSolarize, 0.2f, 4},
    {Op::kEqualize, 0.4f, -1}, {Op::kRotate, 0.8f, 8},
    {Op::kSolarize, 0.6f, 3},  {Op::kEqualize, 0.6f, -1},
    {Op::kPosterize, 0.8f, 5}, {Op::kEqualize, 1.0f, -1},
    {Op::kRotate, 0.2f, 3},    {Op::kSolarize, 0.6f, 8},
    {Op::kEqualize, 0.6f, -1}, {Op::kPosterize, 0.4f, 6},
    {Op::kRotate, 0.8f, 8},    {Op::kColor, 0.4f, 0},
    {Op::kRotate, 0.4f, 9},    {Op::kEqualize, 0.6f, -1},
    {Op::kEqualize, 0.0f, -1}, {Op::kEqualize, 0.8f, -1},
    {Op::kInvert, 0.6f, -1},   {Op::kEqualize, 1.0f, -1},
    {Op::kColor, 0.6f, 4},     {Op::kContrast, 1.0f, 8},
    {Op::kRotate, 0.8f, 8},    {Op::kColor, 1.0f, 2},
    {Op::kColor, 0.8f, 8},     {Op::kSolarize, 0.8f, 7},
    {Op::kSharpness, 0.4f, 7}, {Op::kInvert, 0.6f, -1},
    {Op::kShearX, 0.6f, 5},    {Op::kEqualize, 1.0f, -1},
    {Op::kColor, 0.4f, 0},     {Op::kEqualize, 0.6f, -1},
    {Op::kEqualize, 0.4f, -1}, {Op::kSolarize, 0.2f, 4},
    {Op::kSolarize, 0.6f, 5},  {Op::kAutoContrast, 0.6f, -1},
    {Op::kInvert, 0.6f, -1},   {Op::kEqualize, 1.0f, -1},
    {Op::kColor, 0.6f, 4},     {Op::kContrast, 1.0f, 8},
    {Op::kEqualize, 0.8f, -1}, {Op::kEqualize, 0.6f, -1},
};

constexpr PolicyStep kCifar10[] = {
    {Op::kInvert, 0.1f, -1},       {Op::kContrast, 0.2f, 6},
    {Op::kRotate, 0.7f, 2},        {Op::kTranslateX, 0.3f, 9},
    {Op::kSharpness, 0.8f, 1},     {Op::kSharpness, 0.9f, 3},
    {Op::kShearY, 0.5f, 8},        {Op::kTranslateY, 0.7f, 9},
    {Op::kAutoContrast, 0.5f, -1}, {Op::kEqualize, 0.9f, -1},
    {Op::kShearY, 0.2f, 7},        {Op::kPosterize, 0.3f, 7},
    {Op::kColor, 0.4f, 3},         {Op::kBrightness, 0.6f, 7},
    {Op::kSharpness, 0.3f, 9},     {Op::kBrightness, 0.7f, 9},
    {Op::kEqualize, 0.6f, -1},     {Op::kEqualize, 0.5f, -1},
    {Op::kContrast, 0.6f, 7},      {Op::kSharpness, 0.6f, 5},
    {Op::kColor, 0.7f, 7},         {Op::kTranslateX, 0.5f, 8},
    {Op::kEqualize, 0.3f, -1},     {Op::kAutoContrast, 0.4f, -1},
    {Op::kTranslateY, 0.4f, 3},    {Op::kSharpness, 0.2f, 6},
    {Op::kBrightness, 0.9f, 6},    {Op::kColor, 0.2f, 8},
    {Op::kSolarize, 0.5f, 2},      {Op::kInvert, 0.0f, -1},
    {Op::kEqualize, 0.2f, -1},     {Op::kAutoContrast, 0.6f, -1},
    {Op::kEqualize, 0.2f, -1},     {Op::kEqualize, 0.6f, -1},
    {Op::kColor, 0.9f, 9},         {Op::kEqualize, 0.6f, -1},
    {Op::kAutoContrast, 0.8f, -1}, {Op::kSolarize, 0.2f, 8},
    {Op::kBrightness, 0.1f, 3},    {Op::kColor, 0.7f, 0},
    {Op::kSolarize, 0.4f, 5},      {Op::kAutoContrast, 0.9f, -1},
    {Op::kTranslateY, 0.9f, 9},    {Op::kTranslateY, 0.7f, 9},
    {Op::kAutoContrast, 0.9f, -1}, {Op::kSolarize, 0.8f, 3},
    {Op::kEqualize, 0.8f, -1},     {Op::kInvert, 0.1f, -1},
    {Op::kTranslateY, 0.7f, 9},    {Op::kAutoContrast, 0.9f, -1},
};

constexpr PolicyStep kSvhn[] = {
    {Op::kShearX, 0.9f, 4},    {Op::kInvert, 0.2f, -1},
    {Op::kShearY, 0.9f, 8},    {Op::kInvert, 0.7f, -1},
    {Op::kEqualize, 0.6f, -1}, {Op::kSolarize, 0.6f, 6},
    {Op::kInvert, 0.9f, -1},   {Op::kEqualize, 0.6f, -1},
    {Op::kEqualize, 0.6f, -1}, {Op::kRotate, 0.9f, 3},
    {Op::kShearX, 0.9f, 4},    {Op::kAutoContrast, 0.8f, -1},
    {Op::kShearY, 0.9f, 8},    {Op::kInvert, 0.4f, -1},
    {Op::kShearY, 0.9f, 5},    {Op::kSolarize, 0.2f, 6},
    {Op::kInvert, 0.9f, -1},   {Op::kAutoContrast, 0.8f, -1},
    {Op::kEqualize, 0.6f, -1}, {Op::kRotate, 0.9f, 3},
    {Op::kShearX, 0.9f, 4},    {Op::kSolarize, 0.3f, 3},
    {Op::kShearY, 0.8f, 8},    {Op::kInvert, 0.7f, -1},
    {Op::kEqualize, 0.9f, -1}, {Op::kTranslateY, 0.6f, 6},
    {Op::kInvert, 0.9f, -1},   {Op::kEqualize, 0.6f, -1},
    {Op::kContrast, 0.3f, 3},  {Op::kRotate, 0.8f, 4},
    {Op::kInvert, 0.8f, -1},   {Op::kTranslateY, 0.0f, 2},
    {Op::kShearY, 0.7f, 6},    {Op::kSolarize, 0.4f, 8},
    {Op::kInvert, 0.6f, -1},   {Op::kRotate, 0.8f, 4},
    {Op::kShearY, 0.3f, 7},    {Op::kTranslateX, 0.9f, 3},
    {Op::kShearX, 0.1f, 6},    {Op::kInvert, 0.6f, -1},
    {Op::kSolarize, 0.7f, 2},  {Op::kTranslateY, 0.6f, 7},
    {Op::kShearY, 0.8f, 4},    {Op::kInvert, 0.8f, -1},
    {Op::kShearX, 0.7f, 9},    {Op::kTranslateY, 0.8f, 3},
    {Op::kShearY, 0.8f, 5},    {Op::kAutoContrast, 0.7f, -1},
    {Op::kShearX, 0.7f, 2},    {Op::kInvert, 0.1f, -1},
};

}  // namespace

std::span<const PolicyStep> PolicySteps(AutoAugmentSpec::Policy policy) {
  switch (policy) {
    case AutoAugmentSpec::Policy::kCifar10:
      return kCifar10;
    case AutoAugmentSpec::Policy::kSvhn:
      return kSvhn;
    case AutoAugmentSpec::Policy::kImageNet:
      break;
  }
  return kImageNet;
}

}  // namespace stoker

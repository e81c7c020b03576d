#include "daemon/image/decode_types.h"

#include <algorithm>

namespace stoker {

Region ClampRegion(Region r, ImageSize size) {
  r.x = std::clamp(r.x, 0, size.width - 1);
  r.y = std::clamp(r.y, 0, size.height - 1);
  r.width = std::clamp(r.width, 1, size.width - r.x);
  r.height = std::clamp(r.height, 1, size.height - r.y);
  return r;
}

}  // namespace stoker

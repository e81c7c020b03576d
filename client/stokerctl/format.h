// Text helpers for stokerctl's human-readable output: aligned tables and
// short forms of sizes, rates and durations.
#ifndef STOKER_CLIENT_STOKERCTL_FORMAT_H_
#define STOKER_CLIENT_STOKERCTL_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace stoker::ctl {

// Columns padded to their widest cell, two spaces apart; the first row is
// the header.
std::string Table(const std::vector<std::vector<std::string>>& rows);

std::string Bytes(uint64_t bytes);      // "1.5G", "512M", "800"
std::string Duration(uint64_t millis);  // "3d4h", "2h03m", "4m05s", "12s"
std::string Rate(double per_second);    // "1234", "12.5"
std::string Percent(double percent);    // "42%", "-" when negative

// `text` as a JSON string, quotes included.
std::string JsonString(const std::string& text);

// "[#########...........]" of `width` cells, `done` of 1.
std::string ProgressBar(double done, int width);

}  // namespace stoker::ctl

#endif  // STOKER_CLIENT_STOKERCTL_FORMAT_H_

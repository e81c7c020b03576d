#include "common/log.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/safe_text.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace stoker {
namespace {

// "%*": the sd-daemon(3) priority prefix of the message's level.
class PriorityFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    static constexpr std::string_view kPrefix[] = {"<7>", "<7>", "<6>", "<4>",
                                                   "<3>", "<2>", "<6>"};
    const auto prefix = kPrefix[static_cast<int>(msg.level)];
    dest.append(prefix.data(), prefix.data() + prefix.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<PriorityFlag>();
  }
};

// "%V": the message, with client- and file-supplied text made safe: one
// event stays one line, whatever names it carries.
class SafeMessageFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    if (IsSafeText(payload)) {
      dest.append(payload.data(), payload.data() + payload.size());
      return;
    }
    const std::string safe = SafeText(payload);
    dest.append(safe.data(), safe.data() + safe.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SafeMessageFlag>();
  }
};

}  // namespace

absl::Status InitLogging(std::string_view level) {
  const auto parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("log level '", std::string(level),
                     "' is not one of trace, debug, info, warn, error, off"));
  }
  auto logger = std::make_shared<spdlog::logger>(
      "stoker", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<PriorityFlag>('*');
  formatter->add_flag<SafeMessageFlag>('V').set_pattern("%*%l %V");
  logger->set_formatter(std::move(formatter));
  logger->set_level(parsed);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
  return absl::OkStatus();
}

}  // namespace stoker

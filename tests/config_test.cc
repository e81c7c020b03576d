// The configuration file: parsing, errors naming file, line and field, and
// flags overriding the file.
#include "daemon/settings/config.h"

#include <fstream>

#include "absl/time/time.h"
#include "common/cli.h"
#include "daemon/settings/settings.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    const std::string path = dir_.path() + "/stokerd.conf";
    std::ofstream(path) << text;
    return path;
  }
  absl::StatusOr<DaemonOptions> Load(const std::string& text) {
    auto config = ReadConfigFile(Write(text));
    if (!config.ok()) return config.status();
    return ToDaemonOptions(*config);
  }

  testdata::TempDir dir_{"stoker-config"};
};

TEST_F(ConfigTest, AFullFileSetsEveryField) {
  auto options = Load(R"(
    # Comments are allowed.
    socket: "unix:///run/x/stoker.sock"
    socket_group: "trainers"
    workers: 3
    max_image_pixels: 1000000
    dataset_roots: "/data"
    dataset_roots: "/scratch"
    shm_budget: "2G"
    max_jobs: 5
    max_jobs_per_user: 2
    max_leases_per_user: 40
    lease_timeout: "90s"
    keepalive: "3s"
    metrics_address: "127.0.0.1:9464"
    metrics_labels: "names"
    log_level: "debug"
  )");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->target, "unix:///run/x/stoker.sock");
  EXPECT_EQ(options->socket_group, "trainers");
  EXPECT_EQ(options->workers, 3);
  EXPECT_EQ(options->max_image_pixels, 1000000u);
  EXPECT_EQ(options->dataset_roots,
            (std::vector<std::string>{"/data", "/scratch"}));
  EXPECT_EQ(options->shm_budget_bytes, uint64_t{2} << 30);
  EXPECT_EQ(options->max_jobs, 5u);
  EXPECT_EQ(options->max_jobs_per_user, 2u);
  EXPECT_EQ(options->max_leases_per_user, 40u);
  EXPECT_EQ(options->lease_timeout, absl::Seconds(90));
  EXPECT_EQ(options->keepalive, absl::Seconds(3));
  EXPECT_EQ(options->metrics_address, "127.0.0.1:9464");
  EXPECT_TRUE(options->metrics_names);
  EXPECT_EQ(options->log_level, "debug");
}

TEST_F(ConfigTest, AnEmptyFileKeepsTheDefaults) {
  auto options = Load("");
  ASSERT_TRUE(options.ok()) << options.status();
  const DaemonOptions defaults;
  EXPECT_EQ(options->target, defaults.target);
  EXPECT_EQ(options->max_jobs, defaults.max_jobs);
  EXPECT_EQ(options->lease_timeout, defaults.lease_timeout);
  EXPECT_TRUE(options->metrics_address.empty());
  EXPECT_FALSE(options->metrics_names) << "job names kept out by default";
}

TEST_F(ConfigTest, ASyntaxErrorNamesFileLineAndColumn) {
  auto options = Load("workers: 2\nmax_jobs 4 }\n");
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(options.status().message().find(dir_.path() + "/stokerd.conf:2:"),
            std::string::npos)
      << options.status();
}

TEST_F(ConfigTest, AnUnknownFieldOrAWrongTypeIsNamedWithItsLine) {
  const struct {
    const char* text;
    const char* line;
    const char* field;
  } cases[] = {
      {"workers: 2\n\nworker_threads: 4\n",
       "stokerd.conf:3:", "worker_threads"},
      {"workers: \"four\"\n", "stokerd.conf:1:", "workers"},
  };
  for (const auto& c : cases) {
    auto options = Load(c.text);
    ASSERT_FALSE(options.ok()) << c.text;
    const std::string message(options.status().message());
    EXPECT_NE(message.find(c.line), std::string::npos) << message;
    EXPECT_NE(message.find(c.field), std::string::npos) << message;
  }
}

TEST_F(ConfigTest, ABadValueNamesFileLineAndField) {
  const struct {
    const char* text;
    const char* field;
  } cases[] = {
      {"workers: 2\nshm_budget: \"16Q\"\n", "shm_budget"},
      {"workers: 2\nlease_timeout: \"ten minutes\"\n", "lease_timeout"},
      {"workers: 2\nlog_level: \"loud\"\n", "log_level"},
      {"workers: 2\nsocket: \"dns:localhost:1\"\n", "socket"},
      {"workers: 2\nmetrics_address: \"9464\"\n", "metrics_address"},
      {"workers: 2\nmetrics_labels: \"all\"\n", "metrics_labels"},
      {"workers: 2\nmax_jobs: 0\n", "max_jobs"},
      {"workers: 2\ndataset_roots: \"data\"\n", "dataset_roots"},
  };
  for (const auto& c : cases) {
    auto options = Load(c.text);
    ASSERT_FALSE(options.ok()) << c.text;
    const std::string message(options.status().message());
    EXPECT_NE(message.find(dir_.path() + "/stokerd.conf:2: " + c.field + ": "),
              std::string::npos)
        << message;
  }
}

TEST_F(ConfigTest, FlagsOverrideTheFile) {
  auto config = ReadConfigFile(
      Write("workers: 2\nmax_jobs: 5\ndataset_roots: \"/data\"\n"));
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(
      ApplyFlagOverrides(
          {{"workers", "7"}, {"dataset_roots", "/a,/b"}, {"shm_budget", "1G"}},
          &*config)
          .ok());
  auto options = ToDaemonOptions(*config);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->workers, 7);
  EXPECT_EQ(options->max_jobs, 5u);  // from the file
  EXPECT_EQ(options->dataset_roots, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(options->shm_budget_bytes, uint64_t{1} << 30);

  // A number that is not one, or out of the field's range, names the flag.
  for (const auto& [flag, text] :
       std::vector<std::pair<std::string, std::string>>{
           {"workers", "many"},
           {"max_jobs", "-1"},
           {"max_jobs", "4294967296"}}) {
    absl::Status bad = ApplyFlagOverrides({{flag, text}}, &*config);
    EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << flag << text;
    EXPECT_NE(bad.message().find("--" + flag + ": '" + text + "' is not a"),
              std::string::npos)
        << bad;
  }

  // A bad value from a flag names the flag.
  ASSERT_TRUE(ApplyFlagOverrides({{"lease_timeout", "soon"}}, &*config).ok());
  auto bad = ToDaemonOptions(*config);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(
      bad.status().message().find("--lease_timeout: 'soon' is not a duration"),
      std::string::npos)
      << bad.status();
}

TEST_F(ConfigTest, AMissingFileIsNotFound) {
  auto config = ReadConfigFile(dir_.path() + "/absent.conf");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ConfigTest, FlagNamesAreReadFromTheCommandLine) {
  const char* argv[] = {"stokerd",     "--workers=3", "-max_jobs", "4",
                        "--config=/x", "--",          "--socket=y"};
  const auto names = FlagNamesIn(7, const_cast<char**>(argv));
  EXPECT_EQ(names, (std::vector<std::string>{"workers", "max_jobs", "config"}));
  EXPECT_TRUE(IsConfigField("workers"));
  EXPECT_FALSE(IsConfigField("config"));
}

TEST_F(ConfigTest, TheSettingsTableAndConfigProtoHaveTheSameFields) {
  const auto* descriptor = v1::DaemonConfig::descriptor();
  ASSERT_EQ(static_cast<size_t>(descriptor->field_count()), Settings().size());
  for (size_t i = 0; i < Settings().size(); ++i) {
    // In the same order, so that --check_config lists them as the file does.
    EXPECT_EQ(descriptor->field(static_cast<int>(i))->name(),
              Settings()[i].name);
  }
}

TEST_F(ConfigTest, EachSettingReadsBackWhatItShows) {
  // Reload relies on it: a value shown by a row is read by the same row.
  DaemonOptions options;
  options.target = "unix:///tmp/x.sock";
  options.workers = 3;
  options.dataset_roots = {"/a", "/b"};
  options.shm_budget_bytes = uint64_t{3} << 30;
  options.lease_timeout = absl::Seconds(90);
  options.metrics_address = "127.0.0.1:9464";
  options.log_level = "warn";
  for (const Setting& setting : Settings()) {
    DaemonOptions read;
    ASSERT_TRUE(setting.parse(setting.show(options), &read).ok())
        << setting.name;
    EXPECT_EQ(setting.show(read), setting.show(options)) << setting.name;
    // And the default reads back as the default.
    DaemonOptions fresh;
    ASSERT_TRUE(setting.parse(DefaultText(setting), &fresh).ok())
        << setting.name;
    EXPECT_EQ(setting.show(fresh), DefaultText(setting)) << setting.name;
  }
}

TEST_F(ConfigTest, SettingFlagsAreTakenOutOfTheCommandLine) {
  char* argv[] = {
      const_cast<char*>("stokerd"),     const_cast<char*>("--workers=3"),
      const_cast<char*>("-max_jobs"),   const_cast<char*>("4"),
      const_cast<char*>("--config=/x"), const_cast<char*>("--"),
      const_cast<char*>("--socket=y"),  nullptr};
  int argc = 7;
  auto taken = TakeFlags(&argc, argv, [](std::string_view name) {
    return FindSetting(name) != nullptr;
  });
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ(*taken, (std::vector<std::pair<std::string, std::string>>{
                        {"workers", "3"}, {"max_jobs", "4"}}));
  ASSERT_EQ(argc, 4);
  EXPECT_STREQ(argv[1], "--config=/x");
  EXPECT_STREQ(argv[2], "--");
  EXPECT_STREQ(argv[3], "--socket=y");  // after "--": not a flag
  EXPECT_EQ(argv[4], nullptr);

  char* missing[] = {const_cast<char*>("stokerd"),
                     const_cast<char*>("--workers"), nullptr};
  argc = 2;
  auto bad = TakeFlags(&argc, missing, [](std::string_view name) {
    return FindSetting(name) != nullptr;
  });
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stoker

#include "common/socket_access.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace stoker {
namespace {

std::string UserName(uid_t uid) {
  const struct passwd* pw = ::getpwuid(uid);
  return pw != nullptr ? pw->pw_name : absl::StrCat(uid);
}

std::string GroupName(gid_t gid) {
  const struct group* gr = ::getgrgid(gid);
  return gr != nullptr ? gr->gr_name : absl::StrCat(gid);
}

// "mode 0750, owner root:stoker"
std::string Ownership(const struct stat& st) {
  return absl::StrFormat("mode %04o, owner %s:%s", st.st_mode & 07777,
                         UserName(st.st_uid), GroupName(st.st_gid));
}

bool InGroupNow(gid_t gid) {
  if (::getegid() == gid) return true;
  const int count = ::getgroups(0, nullptr);
  std::vector<gid_t> groups(count > 0 ? count : 0);
  if (count > 0 && ::getgroups(count, groups.data()) < 0) return false;
  return std::find(groups.begin(), groups.end(), gid) != groups.end();
}

// Whether the user database lists the calling user in `gid`, whether or not
// this process carries it yet.
bool InGroupDatabase(gid_t gid) {
  const struct passwd* pw = ::getpwuid(::getuid());
  if (pw == nullptr) return false;
  int count = 64;
  std::vector<gid_t> groups(count);
  if (::getgrouplist(pw->pw_name, pw->pw_gid, groups.data(), &count) < 0) {
    groups.resize(count);
    if (::getgrouplist(pw->pw_name, pw->pw_gid, groups.data(), &count) < 0) {
      return false;
    }
  }
  groups.resize(count);
  return std::find(groups.begin(), groups.end(), gid) != groups.end();
}

// The first directory on the way to `path` that we may not search, if any.
std::string BlockedDirectory(const std::filesystem::path& path) {
  std::filesystem::path dir;
  for (const auto& part : path.parent_path()) {
    dir /= part;
    if (::access(dir.c_str(), X_OK) != 0 && errno == EACCES) {
      struct stat st {};
      ::stat(dir.c_str(), &st);
      return absl::StrCat("you may not enter the directory ", dir.string(),
                          " (", Ownership(st),
                          "): ask its owner to let you in");
    }
  }
  return "";
}

std::string GroupAdvice(const std::string& path, const struct stat& st) {
  const std::string group = GroupName(st.st_gid);
  const std::string where = absl::StrCat(path, " (", Ownership(st), ")");
  if ((st.st_mode & S_IWGRP) == 0) {
    return absl::StrCat("only the owner of ", where,
                        " may connect: stokerd makes its sockets mode 0660");
  }
  if (st.st_gid == 0) {
    return absl::StrCat(
        where,
        " belongs to group root, so only root's group may connect: "
        "give stokerd a socket_group (the package uses 'stoker') in "
        "/etc/stoker/stokerd.conf, restart it, and add trainers' users to "
        "that group");
  }
  if (!InGroupNow(st.st_gid) && InGroupDatabase(st.st_gid)) {
    return absl::StrCat("you were added to group ", group,
                        ", but this login began before: log in again (or "
                        "run `newgrp ",
                        group, "`) to connect to ", where);
  }
  return absl::StrCat("you are not in group ", group, ", which may connect to ",
                      where,
                      ": ask an administrator to run `sudo usermod "
                      "-aG ",
                      group, " ", UserName(::getuid()), "`, then log in again");
}

}  // namespace

std::string ExplainSocketAccess(const std::string& path) {
  if (std::string blocked = BlockedDirectory(path); !blocked.empty()) {
    return blocked;
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return absl::StrCat("there is no socket at ", path,
                          ": stokerd is not running there (`systemctl status "
                          "stokerd`), or it listens elsewhere (--socket)");
    }
    return absl::StrCat("cannot look at ", path, ": ", std::strerror(errno));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::StrCat(path, " is not a socket (", Ownership(st),
                        "): is --socket right?");
  }
  if (::access(path.c_str(), W_OK) == 0) return "";
  return GroupAdvice(path, st);
}

}  // namespace stoker

#include "daemon/os/file_identity.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace stoker {
namespace {

// The process's own groups, read once (the daemon never changes them).
const std::vector<gid_t>& OwnGroups() {
  static const std::vector<gid_t> groups = [] {
    std::vector<gid_t> list(static_cast<size_t>(::getgroups(0, nullptr)));
    list.resize(static_cast<size_t>(
        ::getgroups(static_cast<int>(list.size()), list.data())));
    return list;
  }();
  return groups;
}

bool IsOwn(const FileIdentity& who) {
  return who.uid == ::geteuid() && who.gid == ::getegid();
}

// Per-thread: the raw system calls, not glibc's process-wide wrappers.
long SetGroups(const std::vector<gid_t>& groups) {
  return ::syscall(SYS_setgroups, groups.size(), groups.data());
}
uid_t CurrentFsuid() {
  return static_cast<uid_t>(::syscall(SYS_setfsuid, static_cast<uid_t>(-1)));
}
gid_t CurrentFsgid() {
  return static_cast<gid_t>(::syscall(SYS_setfsgid, static_cast<gid_t>(-1)));
}

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "<2>crit stokerd: cannot restore its own %s\n", what);
  std::abort();
}

}  // namespace

bool CanActAsOtherUsers() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  const uint32_t effective = data[0].effective;
  return (effective & (1u << CAP_SETUID)) != 0 &&
         (effective & (1u << CAP_SETGID)) != 0;
}

absl::Status CheckCanActAs(const FileIdentity& who) {
  if (IsOwn(who) || CanActAsOtherUsers()) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      "stokerd runs as uid ", ::geteuid(),
      " without CAP_SETUID and CAP_SETGID, so it cannot read files with uid ",
      who.uid,
      "'s permissions and serves datasets only to its own user; run it as "
      "the packaged service (deploy/stokerd.service grants both)"));
}

ActAs::ActAs(const FileIdentity* who) {
  if (who == nullptr || IsOwn(*who)) return;
  // Groups first: once the fsuid is not root's, changing them may fail.
  if (SetGroups(who->groups) == 0) {
    switched_ = true;
    ::syscall(SYS_setfsgid, who->gid);
    ::syscall(SYS_setfsuid, who->uid);
    if (CurrentFsuid() == who->uid && CurrentFsgid() == who->gid) return;
    Restore();  // not permitted: undo what did change
  }
  status_ = CheckCanActAs(*who);
  if (status_.ok()) {
    status_ = absl::PermissionDeniedError(absl::StrCat(
        "stokerd could not take uid ", who->uid, "'s file permissions"));
  }
}

void ActAs::Restore() {
  if (!switched_) return;
  switched_ = false;
  ::syscall(SYS_setfsuid, ::geteuid());
  ::syscall(SYS_setfsgid, ::getegid());
  if (CurrentFsuid() != ::geteuid()) Die("fsuid");
  if (CurrentFsgid() != ::getegid()) Die("fsgid");
  if (SetGroups(OwnGroups()) != 0) Die("groups");
}

absl::Status HeldIdentity::Use(const FileIdentity& who) {
  if (current_ && current_->uid == who.uid && current_->gid == who.gid &&
      current_->groups == who.groups) {
    return act_->status();
  }
  act_.reset();  // back to the daemon's own first
  act_ = std::make_unique<ActAs>(&who);
  current_ = who;
  return act_->status();
}

}  // namespace stoker

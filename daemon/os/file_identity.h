// FileIdentity: whose permissions a thread's file-system calls are checked
// against.
//
// stokerd reads datasets on behalf of its clients, so it must not read for
// a client what that client could not read itself (a confused deputy). It
// does not check permissions itself: around every open of a dataset file or
// directory, the thread takes the client's file-system identity (its fsuid,
// fsgid and supplementary groups, as the kernel reported them for the
// client's socket), the kernel decides, and the thread goes back to the
// daemon's own. These are per-thread in Linux (setfsuid, setfsgid, and the
// raw setgroups system call, which unlike glibc's wrapper changes only the
// calling thread), so the other threads never see them, and a thread whose
// fsuid is not 0 has no CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH for its file
// accesses. Switching needs CAP_SETUID and CAP_SETGID (the service unit
// grants both and nothing else); without them stokerd can act only as its
// own user, and serves datasets only to that user.
//
// Thread-safety: ActAs changes only the calling thread.
#ifndef STOKER_DAEMON_OS_FILE_IDENTITY_H_
#define STOKER_DAEMON_OS_FILE_IDENTITY_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"

namespace stoker {

struct FileIdentity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary
};

// Whether this process may take other users' identities (CAP_SETUID and
// CAP_SETGID in its effective set).
bool CanActAsOtherUsers();

// OK if a job of `who` can be served: the daemon can take its identity, or
// it is the daemon's own user. PERMISSION_DENIED saying why not.
absl::Status CheckCanActAs(const FileIdentity& who);

// While it lives, the calling thread's file accesses are checked as `who`'s
// (nothing changes when `who` is null or the daemon's own user). If the
// switch was not permitted, status() says so and the caller must not open
// anything for `who`. Aborts the process if the thread's own identity
// cannot be restored.
class ActAs {
 public:
  explicit ActAs(const FileIdentity* who);
  ~ActAs() { Restore(); }
  ActAs(const ActAs&) = delete;
  ActAs& operator=(const ActAs&) = delete;

  const absl::Status& status() const { return status_; }

 private:
  void Restore();

  bool switched_ = false;
  absl::Status status_;
};

// Keeps the calling thread in one user's file identity from one call to the
// next, switching only when asked for another: a worker reading one job's
// samples one after another switches once, not twice per file. For threads
// that open nothing but files for that user (the workers); back to the
// daemon's own identity when destroyed.
class HeldIdentity {
 public:
  HeldIdentity() = default;
  HeldIdentity(const HeldIdentity&) = delete;
  HeldIdentity& operator=(const HeldIdentity&) = delete;

  // OK when the thread now acts as `who` (see ActAs::status()).
  absl::Status Use(const FileIdentity& who);
  // Back to the daemon's own identity (before anything that is not a read
  // for that user, such as unlinking a failed job's ring).
  void Release() {
    act_.reset();
    current_.reset();
  }

 private:
  std::optional<FileIdentity> current_;
  std::unique_ptr<ActAs> act_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_OS_FILE_IDENTITY_H_

// UniqueFd: owns a file descriptor and closes it once, on every path.
//
//   UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
//   if (!fd) return ErrnoError("open", path);
//   ... ::read(fd.get(), ...) ...          // closed when fd goes out of scope
//   return fd.release();                     // or hand it on
#ifndef STOKER_COMMON_UNIQUE_FD_H_
#define STOKER_COMMON_UNIQUE_FD_H_

#include <unistd.h>

#include <utility>

namespace stoker {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Gives up ownership: the caller closes what it returns.
  int release() { return std::exchange(fd_, -1); }
  // Closes the descriptor held (if any) and holds `fd` instead.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace stoker

#endif  // STOKER_COMMON_UNIQUE_FD_H_

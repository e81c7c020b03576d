// Why a process cannot connect to stokerd's socket, in words that name the
// cause, for the error messages of the SDK and stokerctl.
#ifndef STOKER_COMMON_SOCKET_ACCESS_H_
#define STOKER_COMMON_SOCKET_ACCESS_H_

#include <string>

namespace stoker {

// What stands between the calling process and a connection to the Unix
// socket at `path`, found by looking at the filesystem with the process's
// own identity: no socket there; a directory on the way it may not enter
// (named, with its mode and owner); a socket of group root or of mode 0600;
// a group it is not in; a group it joined after this login began. Each with
// what to do. Empty when the filesystem shows no obstacle.
std::string ExplainSocketAccess(const std::string& path);

}  // namespace stoker

#endif  // STOKER_COMMON_SOCKET_ACCESS_H_

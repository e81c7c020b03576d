// Text that came from a client or a file system, made safe to log and to
// send: control characters (newlines included) and bytes that are not valid
// UTF-8 become \n, \t, \r or \xNN escapes; everything else, valid multi-byte
// UTF-8 included, is kept. So a file named "a\n<0>emerg" cannot forge a log
// line, and a class directory whose name is not UTF-8 cannot make a proto3
// string field unparseable for whoever reads it.
#ifndef STOKER_COMMON_SAFE_TEXT_H_
#define STOKER_COMMON_SAFE_TEXT_H_

#include <string>
#include <string_view>

namespace stoker {

std::string SafeText(std::string_view text);

// True if SafeText would return `text` unchanged.
bool IsSafeText(std::string_view text);

}  // namespace stoker

#endif  // STOKER_COMMON_SAFE_TEXT_H_

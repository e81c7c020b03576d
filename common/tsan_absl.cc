// ThreadSanitizer builds only (STOKER_SANITIZE=thread): makes absl::Mutex
// visible to TSan.
//
// Debian's Abseil is not built with -fsanitize=thread, so TSan does not see
// absl::Mutex lock or unlock, and every access guarded by one looks like a
// race. The linker wraps the out-of-line Mutex and CondVar entry points our
// code calls (-Wl,--wrap=..., see the top-level CMakeLists.txt), and these
// wrappers tell TSan what they do: an acquire after every lock, a release
// before every unlock or wait. Conditions are evaluated by absl with the
// lock held, sometimes in the thread that unlocks or the one that locks;
// each evaluation is bracketed by an acquire and a release, so it is
// ordered after the previous holder's writes and before the next holder's.
#include <sanitizer/tsan_interface.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace {

struct Guarded {
  const absl::Condition* condition;
  absl::Mutex* mu;
};

bool EvalThenRelease(Guarded* g) {
  // absl holds the lock here (in the waiting thread or the unlocking one).
  __tsan_acquire(g->mu);
  const bool result = g->condition->Eval();
  __tsan_release(g->mu);
  return result;
}

}  // namespace

#define REAL(name) __real_##name
#define WRAP(name) __wrap_##name

extern "C" {

void REAL(_ZN4absl7debian35Mutex4LockEv)(absl::Mutex* mu);
void REAL(_ZN4absl7debian35Mutex6UnlockEv)(absl::Mutex* mu);
bool REAL(_ZN4absl7debian35Mutex7TryLockEv)(absl::Mutex* mu);
void REAL(_ZN4absl7debian35Mutex10ReaderLockEv)(absl::Mutex* mu);
void REAL(_ZN4absl7debian35Mutex12ReaderUnlockEv)(absl::Mutex* mu);
void REAL(_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE)(
    absl::Mutex* mu, const absl::Condition& condition);
bool REAL(
    _ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE)(
    absl::Mutex* mu, const absl::Condition& condition, absl::Duration timeout);
void REAL(_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE)(absl::CondVar* cv,
                                                      absl::Mutex* mu);
bool REAL(_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE)(
    absl::CondVar* cv, absl::Mutex* mu, absl::Duration timeout);

void WRAP(_ZN4absl7debian35Mutex4LockEv)(absl::Mutex* mu) {
  REAL(_ZN4absl7debian35Mutex4LockEv)(mu);
  __tsan_acquire(mu);
}

void WRAP(_ZN4absl7debian35Mutex6UnlockEv)(absl::Mutex* mu) {
  __tsan_release(mu);
  REAL(_ZN4absl7debian35Mutex6UnlockEv)(mu);
}

bool WRAP(_ZN4absl7debian35Mutex7TryLockEv)(absl::Mutex* mu) {
  const bool locked = REAL(_ZN4absl7debian35Mutex7TryLockEv)(mu);
  if (locked) __tsan_acquire(mu);
  return locked;
}

void WRAP(_ZN4absl7debian35Mutex10ReaderLockEv)(absl::Mutex* mu) {
  REAL(_ZN4absl7debian35Mutex10ReaderLockEv)(mu);
  __tsan_acquire(mu);
}

void WRAP(_ZN4absl7debian35Mutex12ReaderUnlockEv)(absl::Mutex* mu) {
  __tsan_release(mu);
  REAL(_ZN4absl7debian35Mutex12ReaderUnlockEv)(mu);
}

void WRAP(_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE)(
    absl::Mutex* mu, const absl::Condition& condition) {
  Guarded guarded{&condition, mu};
  __tsan_release(mu);
  REAL(_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE)
  (mu, absl::Condition(&EvalThenRelease, &guarded));
  __tsan_acquire(mu);
}

bool WRAP(
    _ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE)(
    absl::Mutex* mu, const absl::Condition& condition, absl::Duration timeout) {
  Guarded guarded{&condition, mu};
  __tsan_release(mu);
  const bool met = REAL(
      _ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE)(
      mu, absl::Condition(&EvalThenRelease, &guarded), timeout);
  __tsan_acquire(mu);
  return met;
}

void WRAP(_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE)(absl::CondVar* cv,
                                                      absl::Mutex* mu) {
  __tsan_release(mu);
  REAL(_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE)(cv, mu);
  __tsan_acquire(mu);
}

bool WRAP(_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE)(
    absl::CondVar* cv, absl::Mutex* mu, absl::Duration timeout) {
  __tsan_release(mu);
  const bool timed_out = REAL(
      _ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE)(
      cv, mu, timeout);
  __tsan_acquire(mu);
  return timed_out;
}

}  // extern "C"

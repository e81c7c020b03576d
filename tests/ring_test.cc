// The ring: its shared-memory layout, its segment and its slot state machine.
#include "daemon/shm/ring.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "client/src/ring_mapping.h"
#include "common/naming.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

std::string UniqueName(const std::string& test) {
  return SegmentPrefix("/ring_test/" + std::to_string(::getpid())) + test;
}

// A classic job's slot: images of `image_bytes` each, then int64 labels.
SlotLayout ClassicSlot(uint32_t batch_size, uint64_t image_bytes) {
  return ComputeSlotLayout(batch_size, {{image_bytes}, {sizeof(int64_t)}});
}

RingGeometry SmallGeometry(uint32_t slots = 3) {
  return ComputeRingGeometry(slots, ClassicSlot(4, 8 * 10 * 3));
}

TEST(RingLayout, SlotLayoutIsAlignedAndHoldsEveryTensor) {
  const SlotLayout layout = ClassicSlot(5, 7 * 9 * 3);
  ASSERT_EQ(layout.tensors.size(), 2u);
  const SlotTensor& images = layout.tensors[0];
  const SlotTensor& labels = layout.tensors[1];
  EXPECT_EQ(images.offset, 0u);
  EXPECT_EQ(images.bytes, 5u * 7 * 9 * 3);
  EXPECT_EQ(labels.offset % kTensorAlignment, 0u);
  EXPECT_GE(labels.offset, images.bytes);
  EXPECT_EQ(labels.bytes, 5u * 8);
  EXPECT_EQ(layout.indices_offset % kTensorAlignment, 0u);
  EXPECT_GE(layout.indices_offset, labels.offset + 5 * 8);
  EXPECT_EQ(layout.slot_bytes % kPageBytes, 0u);
  EXPECT_GE(layout.slot_bytes, layout.indices_offset + 5 * 8);
}

TEST(RingLayout, VariableBytesTensorsHaveRowsThenLengthsApart) {
  // An image field, a caption field of 100-byte rows, a json field of 0.
  const SlotLayout layout =
      ComputeSlotLayout(3, {{150}, {100, true}, {0, true}});
  ASSERT_EQ(layout.tensors.size(), 3u);
  uint64_t end = 0;
  for (const SlotTensor& t : layout.tensors) {
    EXPECT_EQ(t.offset % kTensorAlignment, 0u);
    EXPECT_GE(t.offset, end);
    EXPECT_EQ(t.bytes, 3 * t.row_bytes);
    end = t.offset + t.bytes;
    if (t.variable) {
      EXPECT_EQ(t.lengths_offset % kTensorAlignment, 0u);
      EXPECT_GE(t.lengths_offset, end);
      end = t.lengths_offset + 3 * 8;
    }
  }
  EXPECT_FALSE(layout.tensors[0].variable);
  EXPECT_TRUE(layout.tensors[1].variable);
  EXPECT_EQ(layout.tensors[1].row_bytes, 100u);
  EXPECT_GE(layout.indices_offset, end);
  EXPECT_GE(layout.slot_bytes, layout.indices_offset + 3 * 8);
}

TEST(RingLayout, GeometryPlacesSlotsAfterHeadersOnPageBoundaries) {
  const RingGeometry g = SmallGeometry(70);  // headers span two pages
  EXPECT_EQ(g.slot_headers_offset % kPageBytes, 0u);
  EXPECT_EQ(g.slots_offset % kPageBytes, 0u);
  EXPECT_GE(g.slots_offset, g.slot_headers_offset + 70 * sizeof(SlotHeader));
  EXPECT_EQ(g.segment_bytes, g.slots_offset + 70 * g.slot.slot_bytes);
}

TEST(RingLayout, ValidateRejectsForeignAndTruncatedHeaders) {
  RingHeader header;
  InitRingHeader(SmallGeometry(), &header);
  EXPECT_TRUE(ValidateRingHeader(header, header.segment_bytes).ok());
  EXPECT_FALSE(ValidateRingHeader(header, header.segment_bytes - 1).ok());
  RingHeader wrong_version = header;
  wrong_version.version = kRingVersion + 1;
  EXPECT_EQ(ValidateRingHeader(wrong_version, header.segment_bytes).code(),
            absl::StatusCode::kFailedPrecondition);
  RingHeader wrong_magic = header;
  wrong_magic.magic = 0;
  EXPECT_FALSE(ValidateRingHeader(wrong_magic, header.segment_bytes).ok());
}

TEST(Ring, SegmentHasRequestedModeAndIsUnlinkedOnDestruction) {
  const std::string name = UniqueName("mode");
  {
    auto ring = Ring::Create(name, SmallGeometry(), 0640);
    ASSERT_TRUE(ring.ok()) << ring.status();
    struct stat st;
    ASSERT_EQ(::stat(("/dev/shm/" + name).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0640u);
    EXPECT_EQ(uint64_t(st.st_size), SmallGeometry().segment_bytes);
    // Reserved up front: every page is allocated, none is a hole.
    EXPECT_GE(uint64_t(st.st_blocks) * 512, SmallGeometry().segment_bytes);
  }
  EXPECT_NE(::access(("/dev/shm/" + name).c_str(), F_OK), 0);
}

TEST(Ring, CreatingAnExistingNameFailsWithoutRemovingIt) {
  const std::string name = UniqueName("twice");
  auto first = Ring::Create(name, SmallGeometry(), 0600);
  ASSERT_TRUE(first.ok());
  auto second = Ring::Create(name, SmallGeometry(), 0600);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(::access(("/dev/shm/" + name).c_str(), F_OK), 0);
}

TEST(Ring, SegmentLargerThanDevShmIsResourceExhausted) {
  struct statvfs vfs;
  ASSERT_EQ(::statvfs("/dev/shm", &vfs), 0);
  const uint64_t too_big = uint64_t(vfs.f_blocks) * vfs.f_frsize * 2;
  SlotLayout slot = ClassicSlot(1, 3);
  slot.slot_bytes = too_big;
  const std::string name = UniqueName("huge");
  auto ring = Ring::Create(name, ComputeRingGeometry(1, slot), 0600);
  EXPECT_EQ(ring.status().code(), absl::StatusCode::kResourceExhausted)
      << ring.status();
  EXPECT_NE(::access(("/dev/shm/" + name).c_str(), F_OK), 0);
}

TEST(Ring, GenerationIsOddWhileFillingAndEvenOncePublished) {
  auto ring = Ring::Create(UniqueName("gen"), SmallGeometry(), 0600);
  ASSERT_TRUE(ring.ok());
  Ring& r = **ring;
  EXPECT_EQ(r.generation(1), 0u);
  r.BeginFill(1, 0, 5, 4);
  EXPECT_EQ(r.state(1), SlotState::kFilling);
  EXPECT_EQ(r.generation(1) % 2, 1u);
  const uint64_t published = r.Publish(1);
  EXPECT_EQ(published, 2u);
  EXPECT_EQ(r.generation(1), published);
  EXPECT_EQ(r.state(1), SlotState::kPublished);
  r.Free(1);
  EXPECT_EQ(r.state(1), SlotState::kFree);
  // Freeing keeps the generation: only refilling changes it.
  EXPECT_EQ(r.generation(1), published);
  r.BeginFill(1, 0, 6, 4);
  EXPECT_EQ(r.Publish(1), 4u);
}

TEST(Ring, FindFreeSkipsSlotsInUseAndCountsStates) {
  auto ring = Ring::Create(UniqueName("free"), SmallGeometry(), 0600);
  ASSERT_TRUE(ring.ok());
  Ring& r = **ring;
  EXPECT_EQ(r.FindFree(), 0u);
  r.BeginFill(0, 0, 0, 4);
  r.BeginFill(1, 0, 1, 4);
  r.Publish(1);
  EXPECT_EQ(r.FindFree(), 2u);
  r.BeginFill(2, 0, 2, 4);
  EXPECT_EQ(r.FindFree(), std::nullopt);
  EXPECT_EQ(r.CountInState(SlotState::kFilling), 2);
  EXPECT_EQ(r.CountInState(SlotState::kPublished), 1);
  r.Free(1);
  EXPECT_EQ(r.FindFree(), 1u);
}

TEST(Ring, ClientMappingIsReadOnlyAndSeesHeaderAndGenerations) {
  const std::string name = UniqueName("client");
  auto ring = Ring::Create(name, SmallGeometry(), 0600);
  ASSERT_TRUE(ring.ok());
  (*ring)->BeginFill(1, 0, 0, 4);
  (*ring)->SlotData(1)[0] = 42;
  const uint64_t gen = (*ring)->Publish(1);
  // What the daemon hands a client: a descriptor opened read-only.
  const int fd = ::shm_open(("/" + name).c_str(), O_RDONLY | O_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  // Such a descriptor cannot be mapped for writing at all.
  EXPECT_EQ(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
            MAP_FAILED);
  EXPECT_EQ(errno, EACCES);
  auto mapping = internal::RingMapping::FromFd(UniqueFd(fd));
  ASSERT_TRUE(mapping.ok()) << mapping.status();
  // Nor can the mapping be made writable afterwards.
  EXPECT_NE(::mprotect(const_cast<uint8_t*>((*mapping)->data()), 4096,
                       PROT_READ | PROT_WRITE),
            0);
  EXPECT_EQ(errno, EACCES);
  EXPECT_EQ((*mapping)->header().slot_count, 3u);
  EXPECT_EQ((*mapping)->Generation(1), gen);
  EXPECT_EQ((*mapping)->data()[SmallGeometry().SlotOffset(1)], 42);
  EXPECT_TRUE((*mapping)->InSlot(1, SmallGeometry().SlotOffset(1), 16));
  EXPECT_FALSE((*mapping)->InSlot(1, SmallGeometry().SlotOffset(2), 16));
  EXPECT_FALSE((*mapping)->InSlot(3, SmallGeometry().SlotOffset(1), 16));
  // A write through the client's mapping must fault: prove it in a child.
  const pid_t child = ::fork();
  if (child == 0) {
    const_cast<uint8_t*>((*mapping)->data())[0] = 1;
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  // Killed by SIGSEGV (or, under AddressSanitizer, exited non-zero from its
  // SEGV handler): anything but a clean exit after the write.
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "a client wrote into the ring";
}

TEST(Ring, MappingWithoutADaemonIsUnavailable) {
  auto mapping = internal::RingMapping::Open(
      "/nonexistent-dir/stoker.sock.ring", "j000000000000");
  EXPECT_EQ(mapping.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace stoker

// The delivery policies (daemon/jobs/delivery_policy.h) driven directly: no
// daemon, no socket, no ring. A fixture stands in for the job: it fills the
// slots the policy leaves free with batches in seq order, hands out batches
// with explicit times and returns the slots a call frees.
#include "daemon/jobs/delivery_policy.h"

#include <unistd.h>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "daemon/jobs/make_delivery_policy.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

using Slots = std::vector<uint32_t>;
using Seqs = std::vector<uint64_t>;

constexpr uint32_t kSlots = 4;
constexpr uint64_t kPerEpoch = 10;
constexpr uint64_t kTotal = 20;  // two epochs
const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// The policy never calls its listeners; they only name the consumers.
class CountingListener : public JobListener {
 public:
  void OnDeliverable() override { ++calls; }
  int calls = 0;
};
using Listener = std::shared_ptr<CountingListener>;

SharingConfig Exclusive() { return {.mode = ConsumerMode::kExclusive}; }
SharingConfig Partition() { return {.mode = ConsumerMode::kPartition}; }
SharingConfig Broadcast(uint32_t max_lag, LagPolicy on_lag,
                        uint32_t min_consumers = 1) {
  return {.mode = ConsumerMode::kBroadcast,
          .max_lag = max_lag,
          .on_lag = on_lag,
          .min_consumers = min_consumers};
}

// What one Next call returned.
struct Outcome {
  Delivery delivery = Delivery::kNothing;
  Lease lease;
  absl::Status ended;
  PolicyEffects effects;
};

class DeliveryPolicyTest : public ::testing::Test {
 protected:
  void Make(SharingConfig sharing, uint64_t start_seq = 0,
            uint64_t total = kTotal,
            absl::Duration lag_grace = absl::ZeroDuration()) {
    policy_ = MakeDeliveryPolicy({.job_id = "job-1",
                                  .sharing = sharing,
                                  .slots = kSlots,
                                  .batches_per_epoch = kPerEpoch,
                                  .start_seq = start_seq,
                                  .total_batches = total,
                                  .lag_grace = lag_grace});
    free_.clear();
    for (uint32_t s = 0; s < kSlots; ++s) free_.insert(s);
    next_fill_ = start_seq;
    total_ = total;
  }

  // The ring's side. Starts the next batch in the lowest free slot.
  Lease StartNext() {
    EXPECT_FALSE(free_.empty()) << "no free slot for batch " << next_fill_;
    const Lease batch{next_fill_++, *free_.begin()};
    free_.erase(free_.begin());
    policy_->Started(batch.seq);
    return batch;
  }
  void Finish(const Lease& batch) { policy_->Published(batch.seq, batch.slot); }
  Lease PublishNext() {
    const Lease batch = StartNext();
    Finish(batch);
    return batch;
  }
  // Publishes batches until the ring is full or the job has none left;
  // returns their seqs.
  Seqs FillRing() {
    Seqs seqs;
    while (!free_.empty() && next_fill_ < total_) {
      seqs.push_back(PublishNext().seq);
    }
    return seqs;
  }
  // What the job does with a call's effects: the freed slots are free again.
  void Apply(const PolicyEffects& effects) {
    for (uint32_t slot : effects.freed) {
      EXPECT_TRUE(free_.insert(slot).second)
          << "slot " << slot << " freed twice";
    }
  }

  // The consumers' side.
  Listener Attach(uint32_t credits, const std::string& name = "",
                  uint64_t* start = nullptr, PolicyEffects* out = nullptr,
                  std::shared_ptr<LeaseTable> leases = nullptr) {
    auto listener = std::make_shared<CountingListener>();
    PolicyEffects effects;
    absl::StatusOr<uint64_t> at =
        policy_->Attach(listener, {.name = name, .client = "test"}, credits,
                        &effects, std::move(leases));
    EXPECT_TRUE(at.ok()) << at.status();
    if (start != nullptr && at.ok()) *start = *at;
    Apply(effects);
    if (out != nullptr) *out = effects;
    return listener;
  }
  absl::Status TryAttach(uint32_t credits) {
    PolicyEffects effects;
    return policy_
        ->Attach(std::make_shared<CountingListener>(), {}, credits, &effects)
        .status();
  }
  PolicyEffects Detach(const Listener& l) {
    PolicyEffects effects;
    EXPECT_TRUE(policy_->Detach(l.get(), &effects));
    Apply(effects);
    return effects;
  }
  Outcome Next(const Listener& l, absl::Time now = kT0, bool finished = false) {
    Outcome o;
    o.delivery =
        policy_->Next(l.get(), finished, now, &o.lease, &o.ended, &o.effects);
    Apply(o.effects);
    return o;
  }
  // The next batch for `l`, which must have one.
  Lease Take(const Listener& l, absl::Time now = kT0) {
    const Outcome o = Next(l, now);
    EXPECT_EQ(o.delivery, Delivery::kBatch);
    return o.lease;
  }
  // Every batch `l` can receive now.
  Seqs TakeAll(const Listener& l) {
    Seqs seqs;
    for (Outcome o = Next(l); o.delivery == Delivery::kBatch; o = Next(l)) {
      seqs.push_back(o.lease.seq);
    }
    return seqs;
  }
  PolicyEffects Release(const Listener& l, uint32_t slot) {
    PolicyEffects effects;
    const absl::Status status = policy_->Release(l.get(), slot, 1, &effects);
    EXPECT_TRUE(status.ok()) << status;
    Apply(effects);
    return effects;
  }
  // Releases batch `seq`, which `l` must hold.
  PolicyEffects ReleaseSeq(const Listener& l, uint64_t seq) {
    for (const auto& [slot, held] : State(l).leased) {
      if (held == seq) return Release(l, slot);
    }
    ADD_FAILURE() << "batch " << seq << " is not held";
    return {};
  }
  // Receives and releases `n` batches, publishing as the ring allows.
  void Consume(const Listener& l, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      FillRing();
      policy_->AddCredit(l.get(), 1);
      Release(l, Take(l).slot);
    }
  }

  const ConsumerState& State(const Listener& l) const {
    return policy_->consumers().at(l.get());
  }
  Seqs Held(const Listener& l) const {
    Seqs seqs;
    for (const auto& [slot, seq] : State(l).leased) seqs.push_back(seq);
    return seqs;
  }
  uint64_t Lag(const Listener& l) const { return policy_->Lag(State(l)); }

  std::unique_ptr<DeliveryPolicy> policy_;
  std::set<uint32_t> free_;
  uint64_t next_fill_ = 0;
  uint64_t total_ = kTotal;
};

// --- Exclusive -------------------------------------------------------------

TEST_F(DeliveryPolicyTest, ExclusiveSendsBatchesInSeqOrderOnePerCredit) {
  Make(Exclusive());
  uint64_t start = 99;
  const Listener a = Attach(2, "a", &start);
  EXPECT_EQ(start, 0u);
  EXPECT_EQ(FillRing(), (Seqs{0, 1, 2, 3}));
  const Lease first = Take(a);
  EXPECT_EQ(first.seq, 0u);
  EXPECT_EQ(first.slot, 0u);
  const Lease second = Take(a);
  EXPECT_EQ(second.seq, 1u);
  EXPECT_EQ(second.slot, 1u);
  // Two credits, two batches: the third waits for credit.
  EXPECT_EQ(Next(a).delivery, Delivery::kNothing);
  EXPECT_EQ(State(a).credits, 0u);
  EXPECT_EQ(State(a).delivered, 2u);
  EXPECT_EQ(State(a).leased, (std::map<uint32_t, uint64_t>{{0, 0}, {1, 1}}));
  policy_->AddCredit(a.get(), 1);
  const Lease third = Take(a);
  EXPECT_EQ(third.seq, 2u);
  EXPECT_EQ(third.slot, 2u);
  EXPECT_EQ(State(a).delivered, 3u);
}

TEST_F(DeliveryPolicyTest, ExclusiveWithoutCreditGetsNothingAndIsNotStarving) {
  Make(Exclusive());
  const Listener a = Attach(0);
  FillRing();
  EXPECT_EQ(Next(a).delivery, Delivery::kNothing);
  EXPECT_FALSE(policy_->Starving());
  EXPECT_EQ(State(a).delivered, 0u);
  policy_->AddCredit(a.get(), 1);
  EXPECT_EQ(Take(a).seq, 0u);
}

TEST_F(DeliveryPolicyTest, ExclusiveWaitsForTheNextBatchInSeqOrder) {
  Make(Exclusive());
  const Listener a = Attach(4);
  EXPECT_TRUE(policy_->Starving());  // credit, nothing published
  const Lease b0 = StartNext();
  const Lease b1 = StartNext();
  Finish(b1);
  // Batch 1 is complete, batch 0 is not: nothing goes out of order.
  EXPECT_EQ(Next(a).delivery, Delivery::kNothing);
  EXPECT_TRUE(policy_->Starving());
  Finish(b0);
  EXPECT_FALSE(policy_->Starving());
  EXPECT_EQ(TakeAll(a), (Seqs{0, 1}));
}

TEST_F(DeliveryPolicyTest, ExclusiveReleaseFreesTheSlot) {
  Make(Exclusive());
  const Listener a = Attach(2);
  FillRing();
  Take(a);
  Take(a);
  EXPECT_EQ(policy_->published_count(), 4u);
  const PolicyEffects effects = Release(a, 1);
  EXPECT_EQ(effects.freed, (Slots{1}));
  EXPECT_TRUE(effects.evicted.empty());
  EXPECT_FALSE(effects.wake_all);
  EXPECT_EQ(State(a).released, 1u);
  EXPECT_EQ(Held(a), (Seqs{0}));
  EXPECT_EQ(policy_->published_count(), 3u);
  // The freed slot takes the next batch.
  EXPECT_EQ(PublishNext().slot, 1u);
}

TEST_F(DeliveryPolicyTest, ExclusiveRefusesASecondConsumer) {
  Make(Exclusive());
  const Listener a = Attach(1);
  const absl::Status second = TryAttach(1);
  EXPECT_EQ(second.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(second.message(),
            "job job-1 already has a consumer attached (its sharing mode is "
            "exclusive; create it with broadcast or partition to share it)");
  EXPECT_EQ(policy_->consumers().size(), 1u);
  // Once the first one has gone, another may attach.
  Detach(a);
  EXPECT_TRUE(TryAttach(1).ok());
}

TEST_F(DeliveryPolicyTest, ExclusiveReleaseOfASlotNotHeldIsRefused) {
  Make(Exclusive());
  const Listener a = Attach(1);
  FillRing();
  const Lease lease = Take(a);
  Release(a, lease.slot);
  PolicyEffects effects;
  const absl::Status twice = policy_->Release(a.get(), lease.slot, 7, &effects);
  EXPECT_EQ(twice.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(twice.message(),
            "release of slot 0 generation 7: this consumer does not hold it "
            "(double release, or another consumer's slot?)");
  // A published slot that was never leased to it: refused as well.
  const absl::Status never = policy_->Release(a.get(), 3, 1, &effects);
  EXPECT_EQ(never.code(), absl::StatusCode::kFailedPrecondition);
  // A stranger holds nothing.
  auto stranger = std::make_shared<CountingListener>();
  EXPECT_EQ(policy_->Release(stranger.get(), 1, 1, &effects).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(effects.freed.empty());
  EXPECT_EQ(State(a).released, 1u);
  EXPECT_EQ(policy_->published_count(), 3u);
}

TEST_F(DeliveryPolicyTest, ExclusiveEndsOnceEveryBatchWasSent) {
  Make(Exclusive());
  const Listener a = Attach(0);
  Consume(a, kTotal - 1);  // batches 0..18; 19 is published ahead
  EXPECT_EQ(State(a).delivered, kTotal - 1);
  EXPECT_EQ(State(a).released, kTotal - 1);
  EXPECT_EQ(next_fill_, kTotal);
  policy_->AddCredit(a.get(), 5);
  const Lease last = Take(a);
  EXPECT_EQ(last.seq, kTotal - 1);
  // Sent, not yet released: the consumer is told the end anyway.
  const Outcome end = Next(a);
  EXPECT_EQ(end.delivery, Delivery::kEndOfJob);
  EXPECT_EQ(Held(a), (Seqs{kTotal - 1}));
  EXPECT_EQ(Next(a, kT0, /*finished=*/true).delivery, Delivery::kEndOfJob);
}

TEST_F(DeliveryPolicyTest, ExclusiveIsNotEndedWhileTheLastBatchIsUnpublished) {
  Make(Exclusive());
  const Listener a = Attach(0);
  for (uint64_t seq = 0; seq + 1 < kTotal; ++seq) {
    const Lease batch = PublishNext();
    policy_->AddCredit(a.get(), 1);
    EXPECT_EQ(Take(a).seq, seq);
    Release(a, batch.slot);
  }
  policy_->AddCredit(a.get(), 1);
  EXPECT_EQ(Next(a).delivery, Delivery::kNothing);
  PublishNext();
  EXPECT_EQ(Take(a).seq, kTotal - 1);
  EXPECT_EQ(Next(a).delivery, Delivery::kEndOfJob);
}

TEST_F(DeliveryPolicyTest, ExclusiveAttachStartsAtTheFirstUnreleasedBatch) {
  Make(Exclusive());
  const Listener a = Attach(3);
  FillRing();
  EXPECT_EQ(TakeAll(a), (Seqs{0, 1, 2}));
  ReleaseSeq(a, 0);
  Detach(a);
  // 1 and 2 were held, 3 never sent: the next consumer starts at 1.
  uint64_t start = 99;
  const Listener b = Attach(10, "b", &start);
  EXPECT_EQ(start, 1u);
  EXPECT_EQ(TakeAll(b), (Seqs{1, 2, 3}));
  // Released up to 3 and nothing held: a newcomer starts at the next batch.
  for (uint64_t seq : {1, 2, 3}) ReleaseSeq(b, seq);
  Detach(b);
  const Listener c = Attach(1, "c", &start);
  EXPECT_EQ(start, 4u);
}

// --- Detach and requeue ----------------------------------------------------

TEST_F(DeliveryPolicyTest, DetachRequeuesHeldBatchesInOrderAheadOfUnsentOnes) {
  Make(Partition());
  const Listener a = Attach(2, "a");
  const Listener b = Attach(1, "b");
  FillRing();
  EXPECT_EQ(TakeAll(a), (Seqs{0, 1}));
  EXPECT_EQ(TakeAll(b), (Seqs{2}));
  const PolicyEffects gone = Detach(a);
  EXPECT_TRUE(gone.wake_all);
  EXPECT_TRUE(gone.freed.empty());
  EXPECT_TRUE(gone.evicted.empty());
  PolicyEffects effects;
  EXPECT_FALSE(policy_->Detach(a.get(), &effects));  // already gone
  policy_->AddCredit(b.get(), 3);
  EXPECT_EQ(TakeAll(b), (Seqs{0, 1, 3}));
  EXPECT_EQ(Held(b), (Seqs{0, 1, 2, 3}));
}

TEST_F(DeliveryPolicyTest, RequeuedBatchesGoOutInSeqOrderNotSlotOrder) {
  Make(Exclusive());
  const Listener a = Attach(5);
  FillRing();  // 0..3 in slots 0..3
  Release(a, Take(a).slot);
  EXPECT_EQ(PublishNext().slot, 0u);  // batch 4 in slot 0
  EXPECT_EQ(TakeAll(a), (Seqs{1, 2, 3, 4}));
  EXPECT_EQ(State(a).leased,
            (std::map<uint32_t, uint64_t>{{0, 4}, {1, 1}, {2, 2}, {3, 3}}));
  EXPECT_TRUE(Detach(a).wake_all);
  uint64_t start = 99;
  const Listener b = Attach(10, "b", &start);
  EXPECT_EQ(start, 1u);
  Seqs got;
  Slots slots;
  for (Outcome o = Next(b); o.delivery == Delivery::kBatch; o = Next(b)) {
    got.push_back(o.lease.seq);
    slots.push_back(o.lease.slot);
  }
  EXPECT_EQ(got, (Seqs{1, 2, 3, 4}));
  EXPECT_EQ(slots, (Slots{1, 2, 3, 0}));
}

// What the consumer's process does with its lease table (lease_table.h).
struct ClientSide {
  std::shared_ptr<LeaseTable> daemon;
  std::unique_ptr<LeaseTable> client;
};
ClientSide MakeLeases() {
  auto daemon = LeaseTable::Create(kSlots, ::getuid());
  EXPECT_TRUE(daemon.ok()) << daemon.status();
  std::shared_ptr<LeaseTable> shared = *std::move(daemon);
  auto client = LeaseTable::Map(shared->TakeFd());
  EXPECT_TRUE(client.ok()) << client.status();
  return {shared, *std::move(client)};
}

TEST_F(DeliveryPolicyTest, DetachRequeuesOnlyTheBatchesNotClaimed) {
  Make(Exclusive());
  ClientSide leases = MakeLeases();
  const Listener first = Attach(3, "first", nullptr, nullptr, leases.daemon);
  FillRing();
  std::vector<Lease> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(Take(first));
    leases.daemon->Lease(held.back().slot, 2);  // as the job does
  }
  // The consumer used batch 1 (claimed it), not 0 or 2.
  EXPECT_TRUE(leases.client->Claim(held[1].slot, 2));
  PolicyEffects effects;
  ASSERT_TRUE(policy_->Detach(first.get(), &effects,
                              absl::UnavailableError("keepalive: gone")));
  Apply(effects);
  // Its claim stands: batch 1 counts as released (its slot is free); 0 and
  // 2 are void in the consumer and go to the next one.
  EXPECT_EQ(effects.freed, (Slots{held[1].slot}));
  EXPECT_FALSE(leases.client->Claim(held[0].slot, 2));
  EXPECT_FALSE(leases.client->Live(held[2].slot, 2));
  EXPECT_TRUE(leases.client->Claim(held[1].slot, 2));  // still its own
  EXPECT_EQ(leases.client->Ended(), absl::UnavailableError("keepalive: gone"));
  const Listener next = Attach(10, "next");
  EXPECT_EQ(TakeAll(next), (Seqs{0, 2, 3}));
}

TEST_F(DeliveryPolicyTest, ExpiredLeaseIsVoidInTheConsumerAndSaysWhy) {
  Make(Partition());
  ClientSide leases = MakeLeases();
  const Listener slow = Attach(1, "slow", nullptr, nullptr, leases.daemon);
  FillRing();
  const Lease lease = Take(slow, kT0);
  leases.daemon->Lease(lease.slot, 2);
  PolicyEffects effects;
  policy_->ExpireLeases(kT0 + absl::Seconds(31), absl::Seconds(30), &effects);
  ASSERT_EQ(effects.evicted.size(), 1u);
  // However long the consumer was stopped, it cannot claim the batch now.
  EXPECT_FALSE(leases.client->Claim(lease.slot, 2));
  const absl::Status why = leases.client->Ended();
  EXPECT_EQ(why.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(why.message().find("held batch 0:0 (slot 0) for 31s"),
            std::string::npos)
      << why;
}

TEST_F(DeliveryPolicyTest, DetachHoldingNothingWakesNobody) {
  Make(Partition());
  const Listener a = Attach(1);
  const Listener b = Attach(1);
  FillRing();
  Release(a, Take(a).slot);
  const PolicyEffects gone = Detach(a);
  EXPECT_FALSE(gone.wake_all);
  EXPECT_TRUE(gone.freed.empty());
  EXPECT_EQ(Take(b).seq, 1u);
}

// --- Lease expiry ----------------------------------------------------------

TEST_F(DeliveryPolicyTest, ExpiredLeaseEvictsTheConsumerAndRequeuesItsBatches) {
  Make(Partition());
  const Listener slow = Attach(0, "slow");
  const Listener other = Attach(0, "other");
  Consume(other, 13);  // batches 0..12: the next is epoch 1, batch 3
  policy_->AddCredit(slow.get(), 2);
  FillRing();
  EXPECT_EQ(Take(slow, kT0).seq, 13u);
  EXPECT_EQ(Take(slow, kT0 + absl::Seconds(5)).seq, 14u);
  PolicyEffects effects;
  policy_->ExpireLeases(kT0 + absl::Seconds(31), absl::Seconds(30), &effects);
  Apply(effects);
  ASSERT_EQ(effects.evicted.size(), 1u);
  EXPECT_EQ(effects.evicted[0], slow);
  EXPECT_TRUE(effects.wake_all);
  EXPECT_TRUE(effects.freed.empty());
  const absl::Status& why = State(slow).evicted;
  EXPECT_EQ(why.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(why.message(),
            "consumer 1 'slow' of job job-1 held batch 1:3 (slot 1) for 31s, "
            "more than the lease limit of 30s (--lease_timeout); its batches "
            "go to the next consumer");
  EXPECT_FALSE(policy_->IsActive(slow.get()));
  EXPECT_TRUE(policy_->IsActive(other.get()));
  EXPECT_TRUE(State(slow).leased.empty());
  EXPECT_TRUE(State(slow).leased_at.empty());
  EXPECT_EQ(State(slow).credits, 0u);
  const Outcome ended = Next(slow);
  EXPECT_EQ(ended.delivery, Delivery::kEnded);
  EXPECT_EQ(ended.ended, why);
  // Its batches go to the other consumer first, in order.
  policy_->AddCredit(other.get(), 3);
  EXPECT_EQ(TakeAll(other), (Seqs{13, 14, 15}));
}

TEST_F(DeliveryPolicyTest, LeaseWithinTheLimitIsUntouched) {
  Make(Exclusive());
  const Listener a = Attach(2);
  FillRing();
  const Lease first = Take(a, kT0);
  Take(a, kT0 + absl::Seconds(20));
  PolicyEffects effects;
  // Exactly the limit is still within it.
  policy_->ExpireLeases(kT0 + absl::Seconds(30), absl::Seconds(30), &effects);
  EXPECT_TRUE(effects.evicted.empty());
  EXPECT_FALSE(effects.wake_all);
  // The oldest lease counts: once it is released, the other is 15s old.
  Release(a, first.slot);
  policy_->ExpireLeases(kT0 + absl::Seconds(35), absl::Seconds(30), &effects);
  EXPECT_TRUE(effects.evicted.empty());
  EXPECT_TRUE(policy_->IsActive(a.get()));
  EXPECT_EQ(Held(a), (Seqs{1}));
  EXPECT_EQ(State(a).leased_at.at(1), kT0 + absl::Seconds(20));
}

TEST_F(DeliveryPolicyTest, ConsumerHoldingNothingNeverExpires) {
  Make(Partition());
  const Listener a = Attach(1);
  FillRing();
  Release(a, Take(a, kT0).slot);
  PolicyEffects effects;
  policy_->ExpireLeases(kT0 + absl::Hours(1), absl::Seconds(1), &effects);
  EXPECT_TRUE(effects.evicted.empty());
  EXPECT_TRUE(policy_->IsActive(a.get()));
}

TEST_F(DeliveryPolicyTest,
       ExpiredExclusiveConsumerHandsItsBatchesOnAfterDetach) {
  Make(Exclusive());
  const Listener a = Attach(2, "a");
  FillRing();
  EXPECT_EQ(TakeAll(a), (Seqs{0, 1}));
  PolicyEffects effects;
  policy_->ExpireLeases(kT0 + absl::Minutes(2), absl::Minutes(1), &effects);
  ASSERT_EQ(effects.evicted.size(), 1u);
  EXPECT_EQ(State(a).evicted.code(), absl::StatusCode::kDeadlineExceeded);
  // Its stream still counts as the job's consumer until it detaches.
  EXPECT_EQ(TryAttach(1).code(), absl::StatusCode::kFailedPrecondition);
  const PolicyEffects gone = Detach(a);
  EXPECT_TRUE(gone.freed.empty());
  uint64_t start = 99;
  const Listener b = Attach(4, "b", &start);
  EXPECT_EQ(start, 0u);
  EXPECT_EQ(TakeAll(b), (Seqs{0, 1, 2, 3}));
}

// --- Partition -------------------------------------------------------------

TEST_F(DeliveryPolicyTest, PartitionGivesEachBatchToOneConsumer) {
  Make(Partition());
  const Listener a = Attach(2, "a");
  const Listener b = Attach(2, "b");
  FillRing();
  EXPECT_EQ(Take(a).seq, 0u);
  EXPECT_EQ(Take(b).seq, 1u);
  EXPECT_EQ(Take(a).seq, 2u);
  EXPECT_EQ(Take(b).seq, 3u);
  EXPECT_EQ(Held(a), (Seqs{0, 2}));
  EXPECT_EQ(Held(b), (Seqs{1, 3}));
  // A release frees the slot for the next batch, whoever takes it.
  EXPECT_EQ(ReleaseSeq(b, 1).freed, (Slots{1}));
  EXPECT_EQ(PublishNext().seq, 4u);
  policy_->AddCredit(b.get(), 1);
  EXPECT_EQ(Take(b).seq, 4u);
  EXPECT_EQ(Next(a).delivery, Delivery::kNothing);  // no credit left
}

TEST_F(DeliveryPolicyTest, PartitionConsumerSeesTheEndOnlyWhenTheJobFinishes) {
  Make(Partition());
  const Listener a = Attach(0, "a");
  const Listener b = Attach(0, "b");
  Consume(b, kTotal - 1);
  policy_->AddCredit(a.get(), 1);
  EXPECT_EQ(Take(a).seq, kTotal - 1);
  // Every batch was sent, but a holds one that may yet come back to b.
  policy_->AddCredit(b.get(), 1);
  EXPECT_EQ(Next(b).delivery, Delivery::kNothing);
  EXPECT_EQ(Next(a).delivery, Delivery::kNothing);
  // a goes away: b receives its batch after all.
  Detach(a);
  policy_->AddCredit(b.get(), 1);  // b has 2 now
  EXPECT_EQ(Take(b).seq, kTotal - 1);
  Release(b, State(b).leased.begin()->first);
  // Everything sent and released, b still has credit: only the job says
  // when it is over.
  EXPECT_EQ(State(b).credits, 1u);
  EXPECT_EQ(Next(b).delivery, Delivery::kNothing);
  EXPECT_EQ(Next(b, kT0, /*finished=*/true).delivery, Delivery::kEndOfJob);
}

// --- Limits ----------------------------------------------------------------

TEST_F(DeliveryPolicyTest, AJobTakesAtMost64Consumers) {
  Make(Partition());
  std::vector<Listener> consumers;
  for (uint32_t i = 0; i < kMaxConsumersPerJob; ++i) {
    consumers.push_back(Attach(1));
  }
  EXPECT_EQ(policy_->consumers().size(), 64u);
  const absl::Status too_many = TryAttach(1);
  EXPECT_EQ(too_many.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(too_many.message(),
            "job job-1 already has 64 consumers, the most a job can have");
  Detach(consumers.back());
  EXPECT_TRUE(TryAttach(1).ok());
}

TEST_F(DeliveryPolicyTest, CreditsAreCapped) {
  Make(Partition());
  const Listener a = Attach(std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(State(a).credits, 1u << 16);
  const Listener b = Attach(3);
  policy_->AddCredit(b.get(), std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(State(b).credits, 1u << 16);
  policy_->AddCredit(b.get(), std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(State(b).credits, 1u << 16);
  // Spent credit can be given again, up to the cap.
  FillRing();
  Take(b);
  EXPECT_EQ(State(b).credits, (1u << 16) - 1);
  policy_->AddCredit(b.get(), 10);
  EXPECT_EQ(State(b).credits, 1u << 16);
  // Credit for a consumer the policy does not know is ignored.
  auto stranger = std::make_shared<CountingListener>();
  policy_->AddCredit(stranger.get(), 5);
  EXPECT_EQ(policy_->consumers().size(), 2u);
}

TEST_F(DeliveryPolicyTest, UnknownConsumerGetsNothing) {
  Make(Partition());
  FillRing();
  auto stranger = std::make_shared<CountingListener>();
  Outcome o;
  EXPECT_EQ(
      policy_->Next(stranger.get(), false, kT0, &o.lease, &o.ended, &o.effects),
      Delivery::kNothing);
  EXPECT_FALSE(policy_->IsActive(stranger.get()));
  EXPECT_FALSE(policy_->Detach(stranger.get(), &o.effects));
  EXPECT_EQ(stranger->calls, 0);
}

// --- Broadcast -------------------------------------------------------------

TEST_F(DeliveryPolicyTest, BroadcastDeliversEveryBatchToEveryConsumer) {
  Make(Broadcast(3, LagPolicy::kDetach, 2));
  const Listener a = Attach(10, "a");
  const Listener b = Attach(10, "b");
  FillRing();
  Slots a_slots;
  for (uint64_t seq = 0; seq < 4; ++seq) {
    const Lease got_a = Take(a);
    const Lease got_b = Take(b);
    EXPECT_EQ(got_a.seq, seq);
    EXPECT_EQ(got_b.seq, seq);
    EXPECT_EQ(got_a.slot, got_b.slot);  // the same batch, decoded once
    a_slots.push_back(got_a.slot);
  }
  EXPECT_EQ(a_slots, (Slots{0, 1, 2, 3}));
  EXPECT_EQ(Next(a).delivery, Delivery::kNothing);
  EXPECT_EQ(State(a).delivered, 4u);
  EXPECT_EQ(State(b).delivered, 4u);
  EXPECT_EQ(State(a).next_seq, 4u);
}

TEST_F(DeliveryPolicyTest, BroadcastFreesASlotOnceEveryConsumerReleasedIt) {
  Make(Broadcast(3, LagPolicy::kDetach, 2));
  const Listener a = Attach(10, "a");
  const Listener b = Attach(10, "b");
  FillRing();
  const Lease a0 = Take(a);
  // b has not even received batch 0 yet: it stays.
  EXPECT_TRUE(Release(a, a0.slot).freed.empty());
  const Lease b0 = Take(b);
  EXPECT_EQ(b0.slot, a0.slot);
  EXPECT_EQ(policy_->published_count(), 4u);
  const PolicyEffects last = Release(b, b0.slot);
  EXPECT_EQ(last.freed, (Slots{0}));
  EXPECT_EQ(policy_->published_count(), 3u);
  // The other order: b first, a last.
  const Lease b1 = Take(b);
  const Lease a1 = Take(a);
  EXPECT_TRUE(Release(b, b1.slot).freed.empty());
  EXPECT_EQ(Release(a, a1.slot).freed, (Slots{1}));
  EXPECT_EQ(State(a).released, 2u);
  EXPECT_EQ(State(b).released, 2u);
}

TEST_F(DeliveryPolicyTest, BroadcastStartBarrierHoldsEverythingUntilEnough) {
  Make(Broadcast(3, LagPolicy::kDetach, /*min_consumers=*/2));
  FillRing();
  PolicyEffects first_effects;
  uint64_t start = 99;
  const Listener a = Attach(4, "a", &start, &first_effects);
  EXPECT_EQ(start, 0u);
  EXPECT_FALSE(first_effects.wake_all);
  const Outcome waiting = Next(a);
  EXPECT_EQ(waiting.delivery, Delivery::kNothing);
  EXPECT_TRUE(waiting.effects.freed.empty());
  EXPECT_TRUE(waiting.effects.evicted.empty());
  EXPECT_TRUE(policy_->Starving());
  EXPECT_EQ(policy_->published_count(), 4u);
  PolicyEffects second_effects;
  const Listener b = Attach(4, "b", &start, &second_effects);
  EXPECT_EQ(start, 0u);
  EXPECT_TRUE(second_effects.wake_all);
  EXPECT_TRUE(second_effects.freed.empty());
  EXPECT_FALSE(policy_->Starving());
  EXPECT_EQ(Take(a).seq, 0u);
  EXPECT_EQ(Take(b).seq, 0u);
  // A third attach opens nothing more.
  PolicyEffects third_effects;
  Attach(1, "c", &start, &third_effects);
  EXPECT_FALSE(third_effects.wake_all);
}

TEST_F(DeliveryPolicyTest, BroadcastBarrierCountsConsumersThatAlreadyLeft) {
  Make(Broadcast(3, LagPolicy::kDetach, /*min_consumers=*/3));
  FillRing();
  const Listener a = Attach(4, "a");
  const Listener b = Attach(4, "b");
  EXPECT_EQ(Next(a).delivery, Delivery::kNothing);
  // b leaves before the barrier opens: every batch still waits.
  EXPECT_TRUE(Detach(b).freed.empty());
  EXPECT_EQ(policy_->published_count(), 4u);
  PolicyEffects opened;
  uint64_t start = 99;
  const Listener c = Attach(4, "c", &start, &opened);
  EXPECT_TRUE(opened.wake_all);  // three have attached, if not at once
  EXPECT_EQ(start, 0u);
  EXPECT_EQ(Take(a).seq, 0u);
  EXPECT_EQ(Take(c).seq, 0u);
}

TEST_F(DeliveryPolicyTest, BroadcastLagReportsBatchesBehindTheLeader) {
  Make(Broadcast(3, LagPolicy::kDetach, 2));
  const Listener a = Attach(10, "a");
  const Listener b = Attach(10, "b");
  FillRing();
  EXPECT_EQ(Lag(a), 0u);
  EXPECT_EQ(Lag(b), 0u);
  Take(a);
  Take(a);
  EXPECT_EQ(Lag(a), 0u);
  EXPECT_EQ(Lag(b), 2u);
  Take(b);
  EXPECT_EQ(Lag(b), 1u);
  Take(a);
  EXPECT_EQ(Lag(b), 2u);
  // Exclusive and partition have no lag.
  Make(Partition());
  const Listener p = Attach(1);
  const Listener q = Attach(1);
  FillRing();
  Take(p);
  EXPECT_EQ(Lag(q), 0u);
}

TEST_F(DeliveryPolicyTest, BroadcastLaggardIsDetachedAndItsBatchesFreed) {
  Make(Broadcast(2, LagPolicy::kDetach, 2));
  const Listener fast = Attach(10, "fast");
  const Listener slow = Attach(0, "slow");
  FillRing();
  // slow has received nothing: fast's releases free nothing.
  EXPECT_TRUE(Release(fast, Take(fast).slot).freed.empty());
  EXPECT_TRUE(Release(fast, Take(fast).slot).freed.empty());
  EXPECT_EQ(Lag(slow), 2u);  // at the bound, not past it
  EXPECT_TRUE(policy_->IsActive(slow.get()));
  const Outcome third = Next(fast);
  ASSERT_EQ(third.delivery, Delivery::kBatch);
  EXPECT_EQ(third.lease.seq, 2u);
  ASSERT_EQ(third.effects.evicted.size(), 1u);
  EXPECT_EQ(third.effects.evicted[0], slow);
  // Batches 0 and 1 were waiting for slow alone.
  EXPECT_EQ(third.effects.freed, (Slots{0, 1}));
  const absl::Status& why = State(slow).evicted;
  EXPECT_EQ(why.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(why.message(),
            "consumer 2 'slow' of broadcast job job-1 fell 3 batches behind "
            "the most advanced consumer (max_lag 2, 0 batches held "
            "unreleased); detached so that the others keep going "
            "(on_lag=DETACH)");
  EXPECT_FALSE(policy_->IsActive(slow.get()));
  EXPECT_EQ(Lag(slow), 0u);
  const Outcome ended = Next(slow);
  EXPECT_EQ(ended.delivery, Delivery::kEnded);
  EXPECT_EQ(ended.ended, why);
  // fast goes on alone.
  EXPECT_EQ(FillRing(), (Seqs{4, 5}));
  EXPECT_EQ(TakeAll(fast), (Seqs{3, 4, 5}));
}

TEST_F(DeliveryPolicyTest, BroadcastSkipMovesTheLaggardAhead) {
  Make(Broadcast(2, LagPolicy::kSkip, 2));
  const Listener fast = Attach(10, "fast");
  const Listener slow = Attach(0, "slow");
  FillRing();
  Release(fast, Take(fast).slot);
  Release(fast, Take(fast).slot);
  const Outcome third = Next(fast);
  ASSERT_EQ(third.delivery, Delivery::kBatch);
  EXPECT_TRUE(third.effects.evicted.empty());
  // slow jumps to leader (3) - max_lag (2) = 1: batch 0 is nobody's now.
  EXPECT_EQ(third.effects.freed, (Slots{0}));
  EXPECT_TRUE(policy_->IsActive(slow.get()));
  EXPECT_EQ(State(slow).skipped, 1u);
  EXPECT_EQ(State(slow).next_seq, 1u);
  EXPECT_EQ(Lag(slow), 2u);
  Take(fast);  // batch 3: leader 4, slow skips batch 1 too
  EXPECT_EQ(State(slow).skipped, 2u);
  EXPECT_EQ(Lag(slow), 2u);
  policy_->AddCredit(slow.get(), 1);
  EXPECT_EQ(Take(slow).seq, 2u);
  EXPECT_EQ(State(slow).delivered, 1u);
  EXPECT_EQ(State(slow).skipped, 2u);
  EXPECT_EQ(Lag(slow), 1u);
}

TEST_F(DeliveryPolicyTest, BroadcastPinnedRingEvictsTheBlockerOnDetach) {
  Make(Broadcast(3, LagPolicy::kDetach, 1));
  const Listener hoarder = Attach(4, "hoarder");
  const Listener reader = Attach(10, "reader");
  FillRing();
  for (uint64_t seq : {0, 1, 2, 3}) {
    EXPECT_EQ(Take(hoarder).seq, seq);  // and keeps it
    const Lease lease = Take(reader);
    EXPECT_EQ(lease.seq, seq);
    EXPECT_TRUE(Release(reader, lease.slot).freed.empty());
  }
  // reader wants batch 4; every slot holds a batch the hoarder keeps.
  EXPECT_TRUE(policy_->Starving());
  const Outcome pinned = Next(reader);
  EXPECT_EQ(pinned.delivery, Delivery::kNothing);
  ASSERT_EQ(pinned.effects.evicted.size(), 1u);
  EXPECT_EQ(pinned.effects.evicted[0], hoarder);
  EXPECT_EQ(pinned.effects.freed, (Slots{0, 1, 2, 3}));
  const absl::Status& why = State(hoarder).evicted;
  EXPECT_EQ(why.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(why.message(),
            "consumer 1 'hoarder' of broadcast job job-1 fell 4 batches "
            "behind the most advanced consumer (max_lag 3, 4 batches held "
            "unreleased): the ring is full of batches it has not released; "
            "detached so that the others keep going (on_lag=DETACH)");
  EXPECT_EQ(FillRing(), (Seqs{4, 5, 6, 7}));
  EXPECT_EQ(Take(reader).seq, 4u);
}

TEST_F(DeliveryPolicyTest, BroadcastRingWithRoomIsNotPinned) {
  Make(Broadcast(3, LagPolicy::kDetach, 1));
  const Listener hoarder = Attach(3, "hoarder");
  const Listener reader = Attach(10, "reader");
  for (int i = 0; i < 3; ++i) PublishNext();
  EXPECT_EQ(TakeAll(hoarder), (Seqs{0, 1, 2}));
  EXPECT_EQ(TakeAll(reader), (Seqs{0, 1, 2}));
  // A slot is free: batch 3 can still be decoded, nobody is in the way.
  EXPECT_TRUE(Next(reader).effects.evicted.empty());
  // A slot filling: the same.
  const Lease filling = StartNext();
  EXPECT_TRUE(Next(reader).effects.evicted.empty());
  EXPECT_TRUE(policy_->IsActive(hoarder.get()));
  Finish(filling);
  EXPECT_EQ(Take(reader).seq, 3u);
}

TEST_F(DeliveryPolicyTest, BroadcastPinnedRingSkipsABlockerThatIsBehind) {
  Make(Broadcast(3, LagPolicy::kSkip, 2));
  const Listener slow = Attach(1, "slow");
  const Listener fast = Attach(10, "fast");
  FillRing();
  EXPECT_EQ(Take(slow).seq, 0u);  // and keeps it
  for (uint64_t seq = 0; seq < 4; ++seq) Release(fast, Take(fast).slot);
  // Within max_lag (1 + 3 >= 4), yet it pins the ring: batches 1..3 wait
  // for it and 0 is leased to it.
  EXPECT_EQ(State(slow).skipped, 0u);
  const Outcome pinned = Next(fast);
  EXPECT_EQ(pinned.delivery, Delivery::kNothing);
  EXPECT_TRUE(pinned.effects.evicted.empty());
  EXPECT_EQ(pinned.effects.freed, (Slots{1, 2, 3}));
  EXPECT_TRUE(policy_->IsActive(slow.get()));
  EXPECT_EQ(State(slow).skipped, 3u);
  EXPECT_EQ(State(slow).next_seq, 4u);
  EXPECT_EQ(Held(slow), (Seqs{0}));
  EXPECT_EQ(FillRing(), (Seqs{4, 5, 6}));
  EXPECT_EQ(Take(fast).seq, 4u);
  policy_->AddCredit(slow.get(), 1);
  EXPECT_EQ(Take(slow).seq, 4u);
  EXPECT_EQ(Release(slow, 0).freed, (Slots{0}));
}

TEST_F(DeliveryPolicyTest, BroadcastPinnedRingEvictsOnSkipWhenLeasesAlonePin) {
  Make(Broadcast(3, LagPolicy::kSkip, 1));
  const Listener hoarder = Attach(4, "hoarder");
  const Listener reader = Attach(10, "reader");
  FillRing();
  for (uint64_t seq : {0, 1, 2, 3}) {
    EXPECT_EQ(Take(hoarder).seq, seq);  // and keeps it
    EXPECT_EQ(Take(reader).seq, seq);
    ReleaseSeq(reader, seq);
  }
  // The hoarder has nothing left to skip: what pins the ring is its leases.
  const Outcome pinned = Next(reader);
  ASSERT_EQ(pinned.effects.evicted.size(), 1u);
  EXPECT_EQ(pinned.effects.freed, (Slots{0, 1, 2, 3}));
  EXPECT_EQ(State(hoarder).skipped, 0u);
  EXPECT_EQ(State(hoarder).evicted.code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_NE(State(hoarder).evicted.message().find(
                "has not released; detached so that the others keep going "
                "(on_lag=SKIP)"),
            std::string::npos)
      << State(hoarder).evicted;
}

TEST_F(DeliveryPolicyTest, BroadcastLateJoinerStartsAtTheOldestBatchHeld) {
  Make(Broadcast(3, LagPolicy::kDetach, 1));
  const Listener first = Attach(10, "first");
  FillRing();
  for (uint64_t seq = 0; seq < 3; ++seq) {
    const Lease lease = Take(first);
    EXPECT_EQ(Release(first, lease.slot).freed, (Slots{lease.slot}));
  }
  EXPECT_EQ(FillRing(), (Seqs{4, 5, 6}));
  // The ring holds 3..6; 0..2 are gone.
  uint64_t start = 99;
  const Listener late = Attach(10, "late", &start);
  EXPECT_EQ(start, 3u);
  EXPECT_EQ(State(late).next_seq, 3u);
  EXPECT_EQ(Lag(late), 0u);
  EXPECT_EQ(Take(late).seq, 3u);
  EXPECT_EQ(Take(first).seq, 3u);
}

TEST_F(DeliveryPolicyTest, BroadcastLateJoinerStartsWhereTheLeaderStands) {
  Make(Broadcast(2, LagPolicy::kDetach, 1));
  const Listener first = Attach(10, "first");
  FillRing();
  EXPECT_EQ(TakeAll(first), (Seqs{0, 1, 2, 3}));
  // The ring still holds 0..3 (leased), but the leader is at 4: a joiner
  // starting at 2 would be at the lag bound from its first batch on.
  uint64_t start = 99;
  const Listener late = Attach(10, "late", &start);
  EXPECT_EQ(start, 4u);
  EXPECT_EQ(Lag(late), 0u);
  for (uint64_t seq = 0; seq < 4; ++seq) ReleaseSeq(first, seq);
  EXPECT_EQ(free_.size(), 4u);  // nobody needs 0..3 any more
  EXPECT_EQ(PublishNext().seq, 4u);
  EXPECT_EQ(Take(late).seq, 4u);
  EXPECT_EQ(Take(first).seq, 4u);
  // A batch still filling counts as held: with nobody attached, a joiner
  // starts at the oldest batch the ring holds or is filling.
  ReleaseSeq(first, 4);
  ReleaseSeq(late, 4);
  Detach(first);
  Detach(late);
  EXPECT_EQ(StartNext().seq, 5u);
  const Listener later = Attach(10, "later", &start);
  EXPECT_EQ(start, 5u);
}

TEST_F(DeliveryPolicyTest, BroadcastConsumerBehindWithinTheGraceIsKept) {
  const absl::Duration grace = absl::Seconds(1);
  Make(Broadcast(3, LagPolicy::kDetach, 1), 0, kTotal, grace);
  const Listener fast = Attach(10, "fast");
  const Listener steady = Attach(10, "steady");
  FillRing();
  // steady has released everything it had and is about to ask for batch 0
  // while fast runs 4 ahead: the most a ring of 4 allows, one over max_lag.
  for (uint64_t seq = 0; seq < 4; ++seq) {
    EXPECT_EQ(Take(fast).seq, seq);
    ReleaseSeq(fast, seq);
  }
  EXPECT_EQ(Lag(steady), 4u);
  PolicyEffects effects;
  policy_->Tick(kT0, &effects);
  policy_->Tick(kT0 + grace / 2, &effects);
  EXPECT_TRUE(effects.evicted.empty());
  // It catches up within the grace: never evicted.
  for (uint64_t seq = 0; seq < 4; ++seq) {
    EXPECT_EQ(Take(steady, kT0 + grace / 2).seq, seq);
    ReleaseSeq(steady, seq);
  }
  policy_->Tick(kT0 + 2 * grace, &effects);
  EXPECT_TRUE(effects.evicted.empty());
  EXPECT_TRUE(policy_->IsActive(steady.get()));
}

TEST_F(DeliveryPolicyTest, BroadcastConsumerBehindPastTheGraceIsEvicted) {
  const absl::Duration grace = absl::Seconds(1);
  Make(Broadcast(3, LagPolicy::kDetach, 1), 0, kTotal, grace);
  const Listener fast = Attach(10, "fast");
  const Listener stuck = Attach(1, "stuck");
  FillRing();
  EXPECT_EQ(Take(stuck).seq, 0u);  // and keeps it
  for (uint64_t seq = 0; seq < 4; ++seq) Take(fast);
  for (uint64_t seq = 0; seq < 4; ++seq) ReleaseSeq(fast, seq);
  // fast waits for batch 4, the ring is full of what stuck holds back.
  EXPECT_EQ(Next(fast, kT0).delivery, Delivery::kNothing);
  PolicyEffects effects;
  policy_->Tick(kT0 + grace / 2, &effects);
  EXPECT_TRUE(effects.evicted.empty());
  policy_->Tick(kT0 + grace, &effects);
  ASSERT_EQ(effects.evicted.size(), 1u);
  EXPECT_EQ(effects.evicted[0], stuck);
  EXPECT_EQ(State(stuck).evicted.code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(DeliveryPolicyTest, BroadcastDetachFreesBatchesOnlyItNeeded) {
  Make(Broadcast(3, LagPolicy::kDetach, 2));
  const Listener a = Attach(10, "a");
  const Listener b = Attach(10, "b");
  FillRing();
  Release(a, Take(a).slot);
  Release(a, Take(a).slot);
  EXPECT_EQ(Take(b).seq, 0u);  // held
  const PolicyEffects gone = Detach(b);
  // 0 was held by b, 1 waited for b; 2 and 3 a still needs.
  EXPECT_EQ(gone.freed, (Slots{0, 1}));
  EXPECT_FALSE(gone.wake_all);
  EXPECT_EQ(policy_->published_count(), 2u);
  EXPECT_EQ(TakeAll(a), (Seqs{2, 3}));
}

TEST_F(DeliveryPolicyTest, BroadcastExpiredLeaseFreesInsteadOfRequeueing) {
  Make(Broadcast(3, LagPolicy::kDetach, 2));
  const Listener a = Attach(10, "a");
  const Listener b = Attach(10, "b");
  FillRing();
  Release(a, Take(a, kT0).slot);
  const Lease held = Take(b, kT0);
  PolicyEffects effects;
  policy_->ExpireLeases(kT0 + absl::Seconds(11), absl::Seconds(10), &effects);
  Apply(effects);
  ASSERT_EQ(effects.evicted.size(), 1u);
  EXPECT_EQ(effects.evicted[0], b);
  EXPECT_EQ(effects.freed, (Slots{held.slot}));
  EXPECT_EQ(State(b).evicted.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(State(b).evicted.message(),
            "consumer 2 'b' of job job-1 held batch 0:0 (slot 0) for 11s, "
            "more than the lease limit of 10s (--lease_timeout); its batches "
            "go to the next consumer");
  EXPECT_EQ(Next(b).delivery, Delivery::kEnded);
  EXPECT_EQ(TakeAll(a), (Seqs{1, 2, 3}));
}

TEST_F(DeliveryPolicyTest, BroadcastEndsForEachConsumerAfterTheLastBatch) {
  Make(Broadcast(3, LagPolicy::kDetach, 1), 0, /*total=*/6);
  const Listener a = Attach(10, "a");
  for (uint64_t seq = 0; seq < 6; ++seq) {
    FillRing();
    EXPECT_EQ(Take(a).seq, seq);
    ReleaseSeq(a, seq);
  }
  EXPECT_EQ(Next(a).delivery, Delivery::kEndOfJob);
}

// --- Resume ----------------------------------------------------------------

TEST_F(DeliveryPolicyTest, ResumedExclusiveJobStartsAtStartSeq) {
  Make(Exclusive(), /*start_seq=*/12);
  uint64_t start = 99;
  const Listener a = Attach(10, "a", &start);
  EXPECT_EQ(start, 12u);
  EXPECT_EQ(FillRing(), (Seqs{12, 13, 14, 15}));
  EXPECT_EQ(TakeAll(a), (Seqs{12, 13, 14, 15}));
}

TEST_F(DeliveryPolicyTest, ResumedJobEndsAfterTheBatchesLeft) {
  Make(Exclusive(), /*start_seq=*/12);
  const Listener a = Attach(0, "a");
  Consume(a, kTotal - 12);
  EXPECT_EQ(State(a).delivered, 8u);
  policy_->AddCredit(a.get(), 1);
  EXPECT_EQ(Next(a).delivery, Delivery::kEndOfJob);
}

TEST_F(DeliveryPolicyTest, ResumedBroadcastJobStartsAtStartSeq) {
  Make(Broadcast(3, LagPolicy::kDetach, 2), /*start_seq=*/12);
  uint64_t start = 99;
  const Listener a = Attach(10, "a", &start);
  EXPECT_EQ(start, 12u);
  FillRing();
  const Listener b = Attach(10, "b", &start);
  EXPECT_EQ(start, 12u);
  EXPECT_EQ(Take(a).seq, 12u);
  EXPECT_EQ(Take(b).seq, 12u);
}

}  // namespace
}  // namespace stoker

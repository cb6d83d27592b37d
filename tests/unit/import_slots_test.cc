// crispctl import's admission (agent/images/import_slots.h).
#include <gtest/gtest.h>

#include <optional>

#include "agent/images/import_slots.h"

namespace {

TEST(ImportSlots, OnePerUserAndAFewPerNode) {
  crisp::ImportSlots slots(1, 2);
  auto a = slots.take(1001);
  ASSERT_TRUE(a.ok());
  auto again = slots.take(1001);
  ASSERT_FALSE(again.ok()) << "a user's second import at once";
  EXPECT_EQ(again.error_kind(), crisp::ErrorKind::kRefused);
  EXPECT_NE(again.error().find("the most one user may"), std::string::npos) << again.error();
  auto b = slots.take(1002);
  ASSERT_TRUE(b.ok());
  auto third = slots.take(1003);
  ASSERT_FALSE(third.ok()) << "the node's limit";
  EXPECT_NE(third.error().find("--max-imports"), std::string::npos) << third.error();
  EXPECT_EQ(slots.running(), 2u);
}

TEST(ImportSlots, AnImportsEndFreesItsSlot) {
  crisp::ImportSlots slots(1, 1);
  {
    auto a = slots.take(1001);
    ASSERT_TRUE(a.ok());
    std::optional<crisp::ImportSlots::Slot> moved(std::move(*a));
    EXPECT_FALSE(slots.take(1002).ok());
  }
  EXPECT_EQ(slots.running(), 0u) << "a moved-from slot gives nothing back twice";
  EXPECT_TRUE(slots.take(1001).ok());
  EXPECT_TRUE(slots.take(1002).ok()) << "the first one's slot went with it";
}

}  // namespace

//===- AnnotationsTest.cpp - Typed access to pass annotations -------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Annotations.h"

#include "gtest/gtest.h"

using namespace dp;

namespace {

TEST(AnnotationsTest, TypedRoundTrips) {
  Op O;
  EXPECT_FALSE(ann::get(O, ann::Device).hasValue());
  ann::set(O, ann::Device, llvm::StringRef("gpu:1"));
  ann::set(O, ann::Group, int64_t(7));
  ann::set(O, ann::Folded, 1);
  EXPECT_EQ(*ann::get(O, ann::Device), "gpu:1");
  EXPECT_EQ(*ann::get(O, ann::Group), 7);
  EXPECT_EQ(*ann::get(O, ann::Folded), 1);
  // They are the annotations the IR prints: plain names and kinds.
  ASSERT_NE(O.Annotations.get("device"), nullptr);
  EXPECT_EQ(O.Annotations.get("device")->getKind(), AttrKind::String);
  EXPECT_EQ(O.Annotations.get("group")->getInt(), 7);
}

TEST(AnnotationsTest, AnotherKindReadsAsMissing) {
  Op O;
  O.Annotations.set("group", Attribute::getString("seven"));
  O.Annotations.set("colocate", Attribute::getInt(3));
  EXPECT_FALSE(ann::get(O, ann::Group).hasValue());
  EXPECT_FALSE(ann::get(O, ann::Colocate).hasValue());
  EXPECT_EQ(ann::getString(O, ann::Colocate), "");
}

TEST(AnnotationsTest, TimesByDeviceType) {
  Op O;
  EXPECT_EQ(ann::getTimeKey("p100"), "time.p100");
  EXPECT_TRUE(ann::isTimeKey("time.p100"));
  EXPECT_FALSE(ann::isTimeKey("flops"));
  EXPECT_FALSE(ann::getTime(O, "p100").hasValue());
  O.Annotations.set(ann::getTimeKey("p100"), Attribute::getFloat(2.5e-6));
  O.Annotations.set(ann::getTimeKey("cpu"), Attribute::getInt(1));
  EXPECT_EQ(*ann::getTime(O, "p100"), 2.5e-6);
  EXPECT_FALSE(ann::getTime(O, "cpu").hasValue());
}

TEST(AnnotationsTest, GraphAnnotations) {
  Graph G;
  EXPECT_FALSE(ann::get(G, ann::Placer).hasValue());
  ann::set(G, ann::Placer, llvm::StringRef("expert"));
  ann::set(G, ann::Groups, int64_t(12));
  EXPECT_EQ(*ann::get(G, ann::Placer), "expert");
  EXPECT_EQ(*ann::get(G, ann::Groups), 12);
}

} // namespace

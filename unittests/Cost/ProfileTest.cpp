//===- ProfileTest.cpp - ONNX Runtime and Chrome trace profiles -----------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "DiagnosticsTestUtil.h"

#include "dp/Cost/Profile.h"

#include "gtest/gtest.h"

using namespace llvm;
using namespace dp;

namespace {

Expected<OpProfile> parse(StringRef Text) {
  return OpProfile::parse(MemoryBufferRef(Text, "prof.json"));
}

/// The one error \p Text gives, as "line:col: message".
std::string errorOf(StringRef Text) {
  Expected<OpProfile> P = parse(Text);
  if (P)
    return "no error";
  std::vector<test::Diag> Diags = test::collectErrors(P.takeError());
  if (Diags.size() != 1)
    return test::describe(Diags);
  EXPECT_EQ(Diags[0].Loc.File, "prof.json");
  return std::to_string(Diags[0].Loc.Line) + ":" +
         std::to_string(Diags[0].Loc.Column) + ": " + Diags[0].Message;
}

TEST(ProfileTest, ONNXRuntime) {
  // Two runs of two nodes, with the fences ONNX Runtime writes around each
  // kernel, and session events that are not nodes.
  Expected<OpProfile> P = parse(R"([
    {"cat": "Session", "name": "model_loading_uri", "dur": 900, "ph": "X"},
    {"cat": "Node", "name": "Conv_0_fence_before", "dur": 0, "ph": "X"},
    {"cat": "Node", "name": "Conv_0_kernel_time", "dur": 120, "ph": "X",
     "args": {"op_name": "Conv", "provider": "CUDAExecutionProvider"}},
    {"cat": "Node", "name": "Conv_0_fence_after", "dur": 0, "ph": "X"},
    {"cat": "Node", "name": "Relu_1_kernel_time", "dur": 7, "ph": "X",
     "args": {"op_name": "Relu"}},
    {"cat": "Node", "name": "Conv_0_kernel_time", "dur": 100, "ph": "X"},
    {"cat": "Node", "name": "Relu_1_kernel_time", "dur": 5, "ph": "X"},
    {"cat": "Node", "name": "Conv_0_kernel_time", "dur": 110, "ph": "X"}
  ])");
  ASSERT_TRUE(bool(P)) << toString(P.takeError());
  EXPECT_EQ(P->getFormat(), ProfileFormatKind::ONNXRuntime);
  EXPECT_EQ(P->size(), 2u);
  // Medians: of 120, 100, 110 and of 7, 5.
  EXPECT_DOUBLE_EQ(*P->lookup("Conv_0"), 110e-6);
  EXPECT_DOUBLE_EQ(*P->lookup("Relu_1"), 6e-6);
  EXPECT_FALSE(P->lookup("Conv_0_fence_before").hasValue());
  EXPECT_FALSE(P->lookup("model_loading_uri").hasValue());
}

TEST(ProfileTest, ChromeTrace) {
  Expected<OpProfile> P = parse(R"({
    "schemaVersion": 1,
    "traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "mm", "dur": 40.5, "ts": 1},
      {"ph": "B", "name": "ignored", "ts": 2},
      {"ph": "i", "name": "marker", "ts": 3},
      {"ph": "X", "cat": "user_annotation", "name": "encoder/Add_3",
       "dur": 12, "ts": 4}
    ]
  })");
  ASSERT_TRUE(bool(P)) << toString(P.takeError());
  EXPECT_EQ(P->getFormat(), ProfileFormatKind::ChromeTrace);
  EXPECT_EQ(P->size(), 2u);
  EXPECT_DOUBLE_EQ(*P->lookup("mm"), 40.5e-6);
  EXPECT_DOUBLE_EQ(*P->lookup("encoder/Add_3"), 12e-6);
  EXPECT_FALSE(P->lookup("ignored").hasValue());
}

TEST(ProfileTest, Errors) {
  EXPECT_EQ(errorOf("[\n  {\"cat\": \"Node\",}\n]"),
            "2:18: invalid JSON: expected object key");
  EXPECT_EQ(errorOf("42"),
            "0:0: expected a list of events (ONNX Runtime) or an object "
            "with \"traceEvents\" (Chrome trace)");
  EXPECT_EQ(errorOf("[1]"), "0:0: at [0]: expected an event object");
  EXPECT_EQ(errorOf(R"([{"cat": "Node", "name": 3}])"),
            "0:0: at [0].name: expected a string");
  EXPECT_EQ(errorOf(R"([{"cat": "Node", "name": "a_kernel_time"}])"),
            "0:0: at [0]: the event has no \"dur\"");
  EXPECT_EQ(errorOf(R"([{"cat": "Node", "name": "a_kernel_time",
                         "dur": -1}])"),
            "0:0: at [0].dur: expected a non-negative number of "
            "microseconds");
  EXPECT_EQ(errorOf(R"([{"cat": "Session", "name": "x", "dur": 1}])"),
            "0:0: no op times in the profile (expected \"Node\" events "
            "named \"<node>_kernel_time\")");
  EXPECT_EQ(errorOf(R"({"traceEvents": {}})"),
            "0:0: at traceEvents: expected a list of events");
  EXPECT_EQ(errorOf(R"({"traceEvents": [{"ph": "X", "name": "a",
                                          "dur": "5"}]})"),
            "0:0: at traceEvents[0].dur: expected a non-negative number of "
            "microseconds");
  EXPECT_EQ(errorOf(R"({"traceEvents": [{"ph": "B", "name": "a"}]})"),
            "0:0: no op times in the trace (expected events with \"ph\": "
            "\"X\")");
}

TEST(ProfileTest, MissingFile) {
  Expected<OpProfile> P = OpProfile::load("/nonexistent/prof.json");
  ASSERT_FALSE(bool(P));
  std::vector<test::Diag> Diags = test::collectErrors(P.takeError());
  ASSERT_EQ(Diags.size(), 1u);
  EXPECT_EQ(Diags[0].Loc.File, "/nonexistent/prof.json");
  EXPECT_EQ(Diags[0].Message.rfind("cannot read the profile: ", 0), 0u);
}

} // namespace

//===- ProfileTest.cpp - ONNX Runtime and Chrome trace profiles -----------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "DiagnosticsTestUtil.h"

#include "dp/Cost/Profile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

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

TEST(ProfileTest, ChromeTraceArrayFormat) {
  // PyTorch's profiler without Kineto writes a bare list of events with no
  // "cat" and empty "args": times by name, and backward events without
  // sequence numbers cannot be attributed.
  Expected<OpProfile> P = parse(R"([
    {"name": "MatMul_0", "ph": "X", "ts": 10, "dur": 30, "tid": 1,
     "pid": "CPU functions", "args": {}},
    {"name": "autograd::engine::evaluate_function: MmBackward0", "ph": "X",
     "ts": 60, "dur": 50, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "MatMul_0", "ph": "X", "ts": 200, "dur": 20, "tid": 1,
     "pid": "CPU functions", "args": {}}
  ])");
  ASSERT_TRUE(bool(P)) << toString(P.takeError());
  EXPECT_EQ(P->getFormat(), ProfileFormatKind::ChromeTrace);
  EXPECT_EQ(P->getTimeKind(), ProfileTimeKind::Event);
  EXPECT_DOUBLE_EQ(*P->lookup("MatMul_0"), 25e-6);
  EXPECT_FALSE(P->lookup("MatMul_0/grad").hasValue());
  ASSERT_EQ(P->getNotes().size(), 1u);
  EXPECT_EQ(P->getNotes()[0],
            "the trace's backward events (autograd::engine::"
            "evaluate_function: ...) have no \"Sequence number\" (a profiler "
            "without Kineto?): backward ops keep their estimates");
}

/// A complete event of a PyTorch CPU trace on thread \p Tid; \p Seq < 0
/// writes no sequence number.
std::string ev(StringRef Cat, StringRef Name, double Ts, double Dur,
               int Seq = -1, int Tid = 1) {
  std::string S;
  raw_string_ostream OS(S);
  OS << "{\"ph\": \"X\", \"cat\": \"" << Cat << "\", \"name\": \"" << Name
     << "\", \"pid\": 7, \"tid\": " << Tid << ", \"ts\": " << Ts
     << ", \"dur\": " << Dur << ", \"args\": {";
  if (Seq >= 0)
    OS << "\"Sequence number\": " << Seq << ", \"Fwd thread id\": 0";
  OS << "}}";
  return OS.str();
}

std::string trace(ArrayRef<std::string> Events) {
  return "{\"traceEvents\": [\n" + join(Events, ",\n") + "\n]}";
}

Expected<OpProfile> parseEvents(ArrayRef<std::string> Events) {
  return parse(trace(Events));
}

std::string bwd(StringRef Node, double Ts, double Dur, int Seq, int Tid = 1) {
  return ev("cpu_op", ("autograd::engine::evaluate_function: " + Node).str(),
            Ts, Dur, Seq, Tid);
}

TEST(ProfileTest, BackwardBySequenceNumber) {
  // Every op recorded with grad enabled carries the number of the next
  // autograd node; the last op to start with a number created the node.
  Expected<OpProfile> P = parseEvents({
      // A: aten::matmul peeks 0, aten::mm creates node 0, and an op inside
      // aten::mm already peeks 1.
      ev("user_annotation", "A", 0, 100),
      ev("cpu_op", "aten::matmul", 1, 98, 0),
      ev("cpu_op", "aten::mm", 2, 96, 0),
      ev("cpu_op", "aten::empty", 3, 1, 1),
      // C: an op on data peeks 1 and creates nothing.
      ev("user_annotation", "C", 110, 10),
      ev("cpu_op", "aten::add", 111, 8, 1),
      // B: aten::relu creates node 1.
      ev("user_annotation", "B", 130, 10),
      ev("cpu_op", "aten::relu", 131, 8, 1),
      // Backward, in reverse; the node's own event inside the engine's
      // carries the number too and is not counted again.
      bwd("ReluBackward0", 200, 7, 1),
      ev("cpu_op", "ReluBackward0", 201, 5, 1),
      bwd("MmBackward0", 210, 40, 0),
      bwd("torch::autograd::AccumulateGrad", 260, 3, -1),
  });
  ASSERT_TRUE(bool(P)) << toString(P.takeError());
  EXPECT_DOUBLE_EQ(*P->lookup("A/grad"), 40e-6);
  EXPECT_DOUBLE_EQ(*P->lookup("B/grad"), 7e-6);
  EXPECT_FALSE(P->lookup("C/grad").hasValue());
  EXPECT_DOUBLE_EQ(*P->lookup("A"), 100e-6);
  EXPECT_TRUE(P->getNotes().empty());
}

TEST(ProfileTest, BackwardSumsPerStepThenMedian) {
  // A creates two nodes per step; its backward in a step is the sum of
  // both, and the steps' sums give the median. The numbering goes on
  // across steps. The backward runs on another thread, as with CUDA.
  Expected<OpProfile> P = parseEvents({
      ev("user_annotation", "A", 0, 50),
      ev("cpu_op", "aten::t", 1, 2, 0),
      ev("cpu_op", "aten::addmm", 4, 40, 1),
      bwd("AddmmBackward0", 60, 10, 1, 2),
      bwd("TBackward0", 71, 2, 0, 2),
      ev("user_annotation", "A", 100, 50),
      ev("cpu_op", "aten::t", 101, 2, 2),
      ev("cpu_op", "aten::addmm", 104, 40, 3),
      bwd("AddmmBackward0", 160, 20, 3, 2),
      bwd("TBackward0", 181, 4, 2, 2),
      ev("user_annotation", "A", 200, 50),
      ev("cpu_op", "aten::t", 201, 2, 4),
      ev("cpu_op", "aten::addmm", 204, 40, 5),
      bwd("AddmmBackward0", 260, 30, 5, 2),
      bwd("TBackward0", 291, 6, 4, 2),
  });
  ASSERT_TRUE(bool(P)) << toString(P.takeError());
  // Per step 12, 24, 36 us.
  EXPECT_DOUBLE_EQ(*P->lookup("A/grad"), 24e-6);
}

TEST(ProfileTest, BackwardNestedOnce) {
  // A node run inside another (reentrant backward) counts once for a region
  // that owns both, and for its own region otherwise.
  Expected<OpProfile> P = parseEvents({
      ev("user_annotation", "A", 0, 10),
      ev("cpu_op", "aten::mul", 1, 2, 0),
      ev("cpu_op", "aten::mul", 4, 2, 1),
      ev("user_annotation", "B", 20, 10),
      ev("cpu_op", "aten::mul", 21, 2, 2),
      bwd("MulBackward0", 100, 50, 1),
      bwd("MulBackward0", 110, 10, 0),
      bwd("MulBackward0", 125, 10, 2),
  });
  ASSERT_TRUE(bool(P)) << toString(P.takeError());
  EXPECT_DOUBLE_EQ(*P->lookup("A/grad"), 50e-6);
  EXPECT_DOUBLE_EQ(*P->lookup("B/grad"), 10e-6);
}

TEST(ProfileTest, BackwardNamedInTheTrace) {
  // An event named "<region>/grad" is a measurement of its own and wins.
  Expected<OpProfile> P = parseEvents({
      ev("user_annotation", "A", 0, 10),
      ev("cpu_op", "aten::mul", 1, 2, 0),
      ev("user_annotation", "A/grad", 20, 9),
      bwd("MulBackward0", 21, 5, 0),
  });
  ASSERT_TRUE(bool(P)) << toString(P.takeError());
  EXPECT_DOUBLE_EQ(*P->lookup("A/grad"), 9e-6);
}

TEST(ProfileTest, BackwardNotes) {
  // Backward events that no region's op numbered: a note, no times.
  Expected<OpProfile> P = parseEvents(
      {ev("cpu_op", "aten::mul", 1, 2, 0), bwd("MulBackward0", 21, 5, 0)});
  ASSERT_TRUE(bool(P)) << toString(P.takeError());
  ASSERT_EQ(P->getNotes().size(), 1u);
  EXPECT_EQ(P->getNotes()[0],
            "the trace has no regions (\"cat\": \"user_annotation\") to "
            "attribute backward events to: backward ops keep their "
            "estimates");
  P = parseEvents({ev("user_annotation", "A", 0, 10),
                   ev("cpu_op", "aten::mul", 1, 2),
                   bwd("MulBackward0", 21, 5, 0)});
  ASSERT_TRUE(bool(P)) << toString(P.takeError());
  ASSERT_EQ(P->getNotes().size(), 1u);
  EXPECT_EQ(P->getNotes()[0],
            "no op inside a region (\"cat\": \"user_annotation\") carries "
            "the \"Sequence number\" of a backward event: backward ops keep "
            "their estimates");
}

// A synthetic PyTorch 2.x CUDA trace (Kineto's shape, hand-written): CPU
// ops and launches on pid 7, kernels on device 0's stream 7 linked by
// "correlation"; the region is mirrored on the stream as a
// "gpu_user_annotation" of the same name.
TEST(ProfileTest, KernelTimes) {
  Expected<OpProfile> P = parse(R"json({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "A", "pid": 7, "tid": 1,
     "ts": 0, "dur": 100, "args": {"External id": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1,
     "ts": 10, "dur": 80,
     "args": {"External id": 2, "Sequence number": 0, "Fwd thread id": 0}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7,
     "tid": 1, "ts": 20, "dur": 5,
     "args": {"External id": 2, "cbid": 211, "correlation": 41}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "pid": 7,
     "tid": 1, "ts": 30, "dur": 5,
     "args": {"External id": 2, "cbid": 51, "correlation": 42}},
    {"ph": "X", "cat": "kernel", "name": "sgemm", "pid": 0, "tid": 7,
     "ts": 300, "dur": 12.5,
     "args": {"External id": 2, "device": 0, "stream": 7,
              "correlation": 41}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0,
     "tid": 7, "ts": 313, "dur": 1.5,
     "args": {"External id": 2, "device": 0, "stream": 7,
              "correlation": 42}},
    {"ph": "X", "cat": "gpu_user_annotation", "name": "A", "pid": 0,
     "tid": 7, "ts": 300, "dur": 14.5, "args": {"External id": 1}},
    {"ph": "s", "id": 41, "pid": 7, "tid": 1, "ts": 20, "cat": "ac2g",
     "name": "ac2g"},
    {"ph": "f", "id": 41, "pid": 0, "tid": 7, "ts": 300, "cat": "ac2g",
     "name": "ac2g", "bp": "e"},
    {"ph": "X", "cat": "cpu_op",
     "name": "autograd::engine::evaluate_function: MmBackward0", "pid": 7,
     "tid": 2, "ts": 400, "dur": 60,
     "args": {"Sequence number": 0, "Fwd thread id": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7,
     "tid": 2, "ts": 410, "dur": 5, "args": {"cbid": 211, "correlation": 43}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7,
     "tid": 2, "ts": 420, "dur": 5, "args": {"cbid": 211, "correlation": 44}},
    {"ph": "X", "cat": "kernel", "name": "sgemm", "pid": 0, "tid": 7,
     "ts": 500, "dur": 20, "args": {"correlation": 43}},
    {"ph": "X", "cat": "kernel", "name": "sgemm", "pid": 0, "tid": 7,
     "ts": 520, "dur": 22, "args": {"correlation": 44}}
  ]})json");
  ASSERT_TRUE(bool(P)) << toString(P.takeError());
  EXPECT_EQ(P->getTimeKind(), ProfileTimeKind::Kernel);
  // The kernel and the memset, not the region's 100 us on the host nor
  // the mirrored region.
  EXPECT_DOUBLE_EQ(*P->lookup("A"), 14e-6);
  EXPECT_DOUBLE_EQ(*P->lookup("A/grad"), 42e-6);
  EXPECT_DOUBLE_EQ(*P->lookup("aten::mm"), 14e-6);
}

TEST(ProfileTest, KernelTimesMinOfSteps) {
  // Three steps of region A, each launching one kernel (7, 3 and 5 us):
  // the median is 5 us, the minimum 3 us; the regions' host durations
  // play no part.
  auto Step = [](int I, double KernelDur) {
    std::string S;
    raw_string_ostream OS(S);
    OS << "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"A\", "
       << "\"pid\": 7, \"tid\": 1, \"ts\": " << 100 * I << ", \"dur\": 50},\n"
       << "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
       << "\"cudaLaunchKernel\", \"pid\": 7, \"tid\": 1, \"ts\": "
       << 100 * I + 10 << ", \"dur\": 5, \"args\": {\"correlation\": " << I
       << "}},\n"
       << "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
       << "\"tid\": 7, \"ts\": " << 100 * I + 20 << ", \"dur\": " << KernelDur
       << ", \"args\": {\"correlation\": " << I << "}}";
    return OS.str();
  };
  std::string Text = trace({Step(0, 7), Step(1, 3), Step(2, 5)});
  MemoryBufferRef Buffer(Text, "prof.json");
  Expected<OpProfile> Median = OpProfile::parse(Buffer);
  ASSERT_TRUE(bool(Median)) << toString(Median.takeError());
  EXPECT_EQ(Median->getTimeKind(), ProfileTimeKind::Kernel);
  EXPECT_DOUBLE_EQ(*Median->lookup("A"), 5e-6);
  Expected<OpProfile> Min = OpProfile::parse(Buffer, ProfileStatKind::Min);
  ASSERT_TRUE(bool(Min)) << toString(Min.takeError());
  EXPECT_DOUBLE_EQ(*Min->lookup("A"), 3e-6);
  Expected<OpProfile> Mean = OpProfile::parse(Buffer, ProfileStatKind::Mean);
  ASSERT_TRUE(bool(Mean)) << toString(Mean.takeError());
  EXPECT_DOUBLE_EQ(*Mean->lookup("A"), 5e-6);
}

TEST(ProfileTest, TraceErrors) {
  EXPECT_EQ(errorOf(R"({"traceEvents": [{"ph": "X", "name": "a",
                                          "dur": 5}]})"),
            "0:0: at traceEvents[0]: the event has no \"ts\"");
  EXPECT_EQ(errorOf(R"({"traceEvents": [{"ph": "X", "name": "a", "dur": 5,
                                          "ts": "0"}]})"),
            "0:0: at traceEvents[0].ts: expected a number of microseconds");
  EXPECT_EQ(errorOf(R"([{"ph": "X", "name": "a", "dur": 5, "ts": 0,
                         "args": []}])"),
            "0:0: at [0].args: expected an object");
  EXPECT_EQ(errorOf(R"({"traceEvents": [{"ph": "X", "name": "a", "dur": 5,
      "ts": 0, "args": {"Sequence number": "3"}}]})"),
            "0:0: at traceEvents[0].args[\"Sequence number\"]: expected an "
            "integer");
  EXPECT_EQ(errorOf(R"({"traceEvents": [{"ph": "X", "name": "k", "dur": 5,
      "ts": 0, "cat": "kernel", "args": {"stream": 7}}]})"),
            "0:0: at traceEvents[0].args: the \"kernel\" event has no "
            "\"correlation\" (the link to its launch, which tells which op "
            "ran it)");
  EXPECT_EQ(errorOf(R"({"traceEvents": [{"ph": "X", "name": "k", "dur": 5,
      "ts": 0, "cat": "kernel", "args": {"correlation": 3}}]})"),
            "0:0: the trace has GPU kernels (\"cat\": \"kernel\") but no "
            "launch (\"cat\": \"cuda_runtime\" or \"cuda_driver\") with the "
            "\"correlation\" of any of them: cannot tell which op ran them");
  // Autograd's UINT64_MAX for nodes without a number is no error.
  Expected<OpProfile> P = parse(R"({"traceEvents": [{"ph": "X", "name": "a",
      "dur": 5, "ts": 0,
      "args": {"Sequence number": 18446744073709551615}}]})");
  EXPECT_TRUE(bool(P)) << toString(P.takeError());
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
  Expected<OpProfile> P = OpProfile::load({"/nonexistent/prof.json"});
  ASSERT_FALSE(bool(P));
  std::vector<test::Diag> Diags = test::collectErrors(P.takeError());
  ASSERT_EQ(Diags.size(), 1u);
  EXPECT_EQ(Diags[0].Loc.File, "/nonexistent/prof.json");
  EXPECT_EQ(Diags[0].Message.rfind("cannot read the profile: ", 0), 0u);
}

} // namespace

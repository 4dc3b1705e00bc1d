//===- CrashGuard.cpp - libonnx called so that its crashes are errors -----===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// libonnx 1.12 trusts its input in places: some malformed nodes crash its
// shape inference instead of failing it. dp checks the nodes it knows to
// crash it before inference runs (the checks below), and runs every call
// into libonnx under a crash guard, so that what slips through still fails
// the import at the node, not the process.
//
//===----------------------------------------------------------------------===//

#include "CrashGuard.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/CrashRecoveryContext.h"

#include <cstring>
#include <exception>

using namespace llvm;

namespace dp {

/// Runs \p Fn, which calls into libonnx, so that a crash in it is caught:
/// libonnx 1.12 trusts its input in places dp does not check yet, and a
/// model that reaches one must fail the import, not the process. A crash is
/// a signal caught by llvm::CrashRecoveryContext; the frames below this
/// one are abandoned, with what they allocated. Returns the signal that
/// stopped \p Fn, or 0 when it returned. An exception passes through.
int runCatchingCrash(function_ref<void()> Fn) {
  // Once per process: Enable() installs the signal handlers.
  static const bool Enabled = (CrashRecoveryContext::Enable(), true);
  (void)Enabled;
  std::exception_ptr Thrown;
  CrashRecoveryContext CRC;
  bool Finished = CRC.RunSafely([&] {
    try {
      Fn();
    } catch (...) {
      Thrown = std::current_exception();
    }
  });
  if (Thrown)
    std::rethrow_exception(Thrown);
  return Finished ? 0 : std::max(CRC.RetCode - 128, 1);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__has_feature)
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
/// LeakSanitizer's built-in suppressions, in the sanitizer and fuzzer
/// builds: what the libonnx frames a caught crash abandons had allocated is
/// never freed, and is not dp's leak. An allocation with libonnx or
/// protobuf code on its stack is left out of leak reports; a leak whose
/// stack is dp's alone is still reported.
extern "C" const char *__lsan_default_suppressions() {
  return "leak:libonnx.so\n"
         "leak:libonnx_proto.so\n"
         "leak:libprotobuf.so\n";
}
#endif
#endif

/// "libonnx's <What> crashed (<signal>)", for a crash runCatchingCrash
/// caught.
std::string describeCrash(const Twine &What, int Signal) {
  const char *Name = strsignal(Signal);
  return ("libonnx's " + What + " crashed (" +
          (Name ? Twine(Name) : "signal " + Twine(Signal)) + ")")
      .str();
}

/// The input that holds the filter of a convolution op (-1: a pooling op).
static int getFilterInput(StringRef Op) {
  return StringSwitch<int>(Op)
      .Cases("Conv", "ConvTranspose", "ConvInteger", 1)
      .Case("QLinearConv", 3)
      .Default(-1);
}

/// The ops whose shape inference takes a convolution or pooling window.
static bool hasConvPoolWindow(StringRef Op) {
  return getFilterInput(Op) >= 0 ||
         StringSwitch<bool>(Op)
             .Cases("AveragePool", "MaxPool", "LpPool", "MaxUnpool", true)
             .Default(false);
}

/// Fails shape inference of a node with an input that is not a dense
/// tensor: libonnx 1.12's shape inference of \p Ops takes an input's
/// shape as known when a sparse tensor type carries one, then reads it as
/// a dense tensor's.
static void checkDenseInputs(onnx::InferenceContext &Ctx, const char *Ops) {
  for (size_t I = 0; I != Ctx.getNumInputs(); ++I) {
    const onnx::TypeProto *T = Ctx.getInputType(I);
    if (T && T->value_case() != onnx::TypeProto::kTensorType &&
        T->value_case() != onnx::TypeProto::VALUE_NOT_SET)
      fail_shape_inference("input ", I, " is not a dense tensor; ", Ops,
                           " take dense tensors");
  }
}

/// The rank of input \p Input when its shape is known, else -1.
static int getInputRank(onnx::InferenceContext &Ctx, int Input) {
  const onnx::TypeProto *T = Input >= 0 && size_t(Input) < Ctx.getNumInputs()
                                 ? Ctx.getInputType(Input)
                                 : nullptr;
  return T && T->tensor_type().has_shape() ? T->tensor_type().shape().dim_size()
                                           : -1;
}

/// Integer attribute list \p Name of the node, or \p Default (one per
/// spatial axis) when absent.
static std::vector<int64_t> getWindowAttr(onnx::InferenceContext &Ctx,
                                          const char *Name, size_t N,
                                          int64_t Default) {
  const onnx::AttributeProto *A = Ctx.getAttribute(Name);
  if (!A)
    return std::vector<int64_t>(N, Default);
  return std::vector<int64_t>(A->ints().begin(), A->ints().end());
}

/// Fails a convolution or pooling node whose window, dilated, is larger
/// than its padded input on a spatial axis of known size: libonnx 1.12
/// rounds the negative output size toward zero and gives it 0 or 1, where
/// every runtime refuses the node. (Transposed convolutions and unpooling
/// grow their input, and the SAME paddings cover any input.)
static void checkWindowFits(onnx::InferenceContext &Ctx, StringRef Op,
                            int Spatial) {
  if (Op == "ConvTranspose" || Op == "MaxUnpool")
    return;
  const onnx::AttributeProto *AutoPad = Ctx.getAttribute("auto_pad");
  StringRef Mode = AutoPad ? StringRef(AutoPad->s()) : "NOTSET";
  if (Mode.startswith("SAME"))
    return;
  const onnx::TypeProto *X = Ctx.getInputType(0);
  int W = getFilterInput(Op);
  const onnx::TypeProto *WT =
      W >= 0 && size_t(W) < Ctx.getNumInputs() ? Ctx.getInputType(W) : nullptr;
  std::vector<int64_t> Kernel(Spatial, -1);
  if (const onnx::AttributeProto *K = Ctx.getAttribute("kernel_shape")) {
    Kernel.assign(K->ints().begin(), K->ints().end());
  } else if (WT && WT->tensor_type().has_shape() &&
             WT->tensor_type().shape().dim_size() == Spatial + 2) {
    for (int I = 0; I != Spatial; ++I) {
      const auto &D = WT->tensor_type().shape().dim(I + 2);
      Kernel[I] = D.has_dim_value() ? D.dim_value() : -1;
    }
  }
  std::vector<int64_t> Dilations = getWindowAttr(Ctx, "dilations", Spatial, 1);
  std::vector<int64_t> Pads = Mode == "VALID"
                                  ? std::vector<int64_t>(2 * Spatial, 0)
                                  : getWindowAttr(Ctx, "pads", 2 * Spatial, 0);
  for (int I = 0; I != Spatial; ++I) {
    const auto &D = X->tensor_type().shape().dim(I + 2);
    if (!D.has_dim_value() || Kernel[I] < 1)
      continue;
    int64_t Window = (Kernel[I] - 1) * Dilations[I] + 1;
    int64_t Padded = D.dim_value() + Pads[I] + Pads[I + Spatial];
    if (Window > Padded)
      fail_shape_inference("the window spans ", Window,
                           " positions on spatial axis ", I,
                           ", and the padded input only ", Padded, "; ",
                           Op.str(), " needs its window inside the input");
  }
}

/// Checks a convolution or pooling node (op \p Op) before libonnx 1.12's
/// shape inference sees it: that code trusts its inputs and crashed
/// dp-opt on models dp-fuzz-onnx-binary made (docs/hardening.md). It
/// takes the number of spatial axes from the input X, the kernel from the
/// filter W or kernel_shape, and indexes the one by the other and by the
/// window attributes; it divides by the strides; and it reads a sparse
/// tensor's shape as a dense one's. So the node fails shape inference,
/// with the reason, unless
///   - every input is a dense tensor,
///   - strides, dilations and kernel_shape hold values of at least 1,
///   - X (of known rank, at least 2) and W have the same rank, and
///   - strides, dilations, kernel_shape and output_padding have a value per
///     spatial axis of X, and pads two.
static void checkConvPoolNode(onnx::InferenceContext &Ctx, StringRef Op) {
  checkDenseInputs(Ctx, "convolutions and pooling");
  for (const char *Name : {"strides", "dilations", "kernel_shape"}) {
    const onnx::AttributeProto *A = Ctx.getAttribute(Name);
    if (!A)
      continue;
    for (int I = 0; I != A->ints_size(); ++I)
      if (A->ints(I) < 1)
        fail_shape_inference(Name,
                             " must be positive, and its value for "
                             "spatial axis ",
                             I, " is ", A->ints(I));
  }
  int XRank = getInputRank(Ctx, 0);
  if (XRank < 2)
    return; // libonnx reports it, or infers nothing
  int W = getFilterInput(Op);
  int WRank = getInputRank(Ctx, W);
  if (W >= 0 && WRank >= 0 && WRank != XRank)
    fail_shape_inference("the filter W has rank ", WRank,
                         " and the input X rank ", XRank, "; ", Op.str(),
                         " needs them equal");
  int Spatial = XRank - 2;
  for (const char *Name :
       {"strides", "dilations", "kernel_shape", "output_padding", "pads"}) {
    const onnx::AttributeProto *A = Ctx.getAttribute(Name);
    int Want = StringRef(Name) == "pads" ? 2 * Spatial : Spatial;
    if (A && A->ints_size() != Want)
      fail_shape_inference(Name, " has ", A->ints_size(),
                           " values and the input X ", Spatial,
                           " spatial axes; ", Op.str(), " needs ", Want);
  }
  checkWindowFits(Ctx, Op, Spatial);
}

/// Checks a Gemm node before libonnx 1.12's shape inference sees it: before
/// opset 7 that code indexes A's and B's shapes as matrices unchecked (a
/// rank-0 A crashed dp-opt, found by dp-fuzz-onnx-binary). A and B must be
/// dense and, where their rank is known, have rank 2, as every Gemm
/// version requires.
static void checkGemmNode(onnx::InferenceContext &Ctx, StringRef) {
  checkDenseInputs(Ctx, "Gemm's inputs");
  for (int I : {0, 1}) {
    int Rank = getInputRank(Ctx, I);
    if (Rank >= 0 && Rank != 2)
      fail_shape_inference("input ", I == 0 ? "A" : "B", " has rank ", Rank,
                           "; Gemm multiplies matrices (rank 2)");
  }
}

/// What dp checks of a node of op \p Op before libonnx's shape inference,
/// or null for none.
using NodeCheck = void (*)(onnx::InferenceContext &, StringRef);
static NodeCheck getNodeCheck(StringRef Op) {
  if (hasConvPoolWindow(Op))
    return checkConvPoolNode;
  if (Op == "Gemm")
    return checkGemmNode;
  return nullptr;
}

static cl::opt<bool> SkipNodeChecks(
    "onnx-skip-node-checks", cl::Hidden,
    cl::desc("Leave out dp's checks of ONNX nodes before libonnx's shape "
             "inference (for testing the crash guard)"));

/// Runs \p Fn, one of libonnx's shape inference or data propagation
/// functions for a node of op \p Op, under runCatchingCrash: a crash fails
/// the node's inference, and the import at the node.
static void runGuarded(const std::string &Op, function_ref<void()> Fn) {
  if (int Signal = runCatchingCrash(Fn))
    fail_shape_inference(describeCrash(Op + " shape inference", Signal),
                         "; the node is malformed in a way dp does not "
                         "check yet");
}

const onnx::OpSchema *
GuardedSchemaRegistry::GetSchema(const std::string &Key,
                                 const int MaxInclusiveVersion,
                                 const std::string &Domain) const {
  const onnx::OpSchema *Schema = onnx::OpSchemaRegistry::Instance()->GetSchema(
      Key, MaxInclusiveVersion, Domain);
  if (!Schema)
    return Schema;
  std::unique_ptr<onnx::OpSchema> &Guarded = GuardedSchemas[Schema];
  if (Guarded)
    return Guarded.get();
  Guarded = std::make_unique<onnx::OpSchema>(*Schema);
  NodeCheck Check = !SkipNodeChecks && (Domain.empty() || Domain == "ai.onnx")
                        ? getNodeCheck(Key)
                        : nullptr;
  if (Schema->has_type_and_shape_inference_function() || Check)
    Guarded->TypeAndShapeInferenceFunction(
        [Infer = Schema->GetTypeAndShapeInferenceFunction(), Check,
         Op = Key](onnx::InferenceContext &Ctx) {
          if (Check)
            Check(Ctx, Op);
          if (Infer)
            runGuarded(Op, [&] { Infer(Ctx); });
        });
  if (Schema->has_data_propagation_function())
    Guarded->PartialDataPropagationFunction(
        [Propagate = Schema->GetDataPropagationFunction(),
         Op = Key](onnx::DataPropagationContext &Ctx) {
          // A data input whose producer failed inference has no type;
          // libonnx 1.12's propagators (Shape's) dereference it. That
          // producer's error is the one to report. (Later inputs may be
          // optional ones left out.)
          if (Ctx.getNumInputs() && !Ctx.getInputType(0))
            return;
          runGuarded(Op, [&] { Propagate(Ctx); });
        });
  return Guarded.get();
}

} // namespace dp

//===- ImportPass.cpp - The import-onnx pass and its options --------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/IR/Annotations.h"
#include "dp/IR/Bytecode.h"
#include "dp/IR/PipelinePlan.h"
#include "dp/IR/TextFormat.h"
#include "dp/Import/ONNXImporter.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/Optional.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <functional>

using namespace llvm;

namespace dp {

Error ImportONNXPass::run(Graph &G, PassContext &Ctx) {
  StringRef Bytes = Ctx.Input.getBuffer();
  if (!G.empty() || isBytecode(Bytes) || looksLikeGraphText(Bytes))
    return makeError("import-onnx needs an ONNX model as input, but the "
                     "input is already dp IR");
  std::vector<std::string> Notes;
  Expected<Graph> Imported = importONNX(Ctx.Input, Opts, Ctx.Timers, &Notes);
  if (!Imported)
    return Imported.takeError();
  if (Ctx.Report)
    for (const std::string &Note : Notes)
      *Ctx.Report << name() << ": note: " << Note << '\n';
  G = std::move(*Imported);
  if (Opts.Batch)
    ann::set(G, ann::Batch, *Opts.Batch);
  if (Opts.MicroBatches > 1)
    ann::set(G, ann::MicroBatches, Opts.MicroBatches);
  if (Opts.Replicas > 1)
    ann::set(G, ann::Replicas, Opts.Replicas);
  return Error::success();
}

/// Whether \p Text can be the value of import-onnx{value=}: a finite
/// number, true or false (checked against the input's type at import).
static bool isValueText(StringRef Text) {
  double D;
  return Text == "true" || Text == "false" ||
         (!Text.getAsDouble(D) && std::isfinite(D));
}

/// Parses a positive integer.
static Optional<int64_t> parsePositive(StringRef Text) {
  int64_t N;
  if (!to_integer(Text, N, 10) || N <= 0)
    return None;
  return N;
}

/// Parses "D0xD1x..." with every D positive.
static Optional<std::vector<int64_t>> parseDims(StringRef Text) {
  std::vector<int64_t> Dims;
  SmallVector<StringRef, 4> Parts;
  Text.split(Parts, 'x');
  for (StringRef P : Parts) {
    int64_t N;
    if (!to_integer(P, N, 10) || N <= 0)
      return None;
    Dims.push_back(N);
  }
  return Dims;
}

/// The value a pipeline prints for an option that is unset until given
/// (batch), or for one that is 1 unless given (microbatches, replicas).
static Optional<int64_t> getGivenValue(const Optional<int64_t> &V) { return V; }

static Optional<int64_t> getGivenValue(int64_t V) {
  return V > 1 ? Optional<int64_t>(V) : None;
}

/// Adds option \p Key, a positive integer stored into \p Value and printed
/// back when it was given.
template <typename ValueT>
static void addPositiveOption(OptionTable &T, StringRef Key, StringRef Meta,
                              ValueT &Value) {
  T.custom(
      Key, Meta,
      [Key, &Value](StringRef Text) -> Error {
        Optional<int64_t> N = parsePositive(Text);
        if (!N)
          return makeError(Key + " must be a positive integer, not '" + Text +
                           "'");
        Value = *N;
        return Error::success();
      },
      [&Value] {
        Optional<int64_t> N = getGivenValue(Value);
        return N ? std::vector<std::string>{std::to_string(*N)}
                 : std::vector<std::string>{};
      });
}

OptionTable ImportONNXPass::describeOptions(ImportOptions &O) {
  OptionTable T(name().str());
  addPositiveOption(T, "batch", "N", O.Batch);
  addNamedOption<int64_t>(T, "dim", "NAME:N", "N a positive integer", O.Dims,
                          /*Once=*/false, parsePositive,
                          [](const int64_t &N) { return std::to_string(N); });
  addNamedOption<std::vector<int64_t>>(
      T, "shape", "NAME:D0xD1x...", "each D a positive integer", O.Shapes,
      /*Once=*/true, parseDims, [](const std::vector<int64_t> &Dims) {
        std::string S;
        for (size_t I = 0; I != Dims.size(); ++I)
          S += (I ? "x" : "") + std::to_string(Dims[I]);
        return S;
      });
  addNamedOption<std::string>(
      T, "value", "NAME:V", "V a number, true or false", O.Values,
      /*Once=*/true,
      [](StringRef Text) -> Optional<std::string> {
        if (!isValueText(Text))
          return None;
        return Text.str();
      },
      [](const std::string &Text) { return Text; });
  addNamedOption<int64_t>(T, "bound", "TENSOR:N", "N a positive integer",
                          O.Bounds, /*Once=*/true, parsePositive,
                          [](const int64_t &N) { return std::to_string(N); });
  addPositiveOption(T, "microbatches", "M", O.MicroBatches);
  addPositiveOption(T, "replicas", "R", O.Replicas);
  addBatchAxisOption(T, O.BatchAxes);
  return T;
}

void ImportONNXPass::printPipeline(raw_ostream &OS) const {
  printPassOptions(OS, name(), Opts, describeOptions);
}

} // namespace dp

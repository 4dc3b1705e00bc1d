//===- dp/Passes/PassBuilder.h - Parsing pass pipelines ---------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Builds PassManagers from pipeline text such as
///
///   import-onnx{batch=8,dim=seq:128},verify,print-summary
///
/// A pipeline is a comma-separated list of pass names, each optionally
/// followed by options in braces: "key=value" pairs separated by commas.
/// A value may itself contain balanced braces (e.g.
/// "colocate{strategy=merge{groups=64}}"). The passes come from
/// lib/Passes/PassRegistry.def, the one list of them.
///
//===----------------------------------------------------------------------===//

#ifndef DP_PASSES_PASSBUILDER_H
#define DP_PASSES_PASSBUILDER_H

#include "dp/IR/PassManager.h"
#include "dp/Support/Diagnostics.h"
#include "dp/Support/Options.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace dp {

/// What the registry says of one pass.
struct PassInfo {
  llvm::StringRef Name;
  /// Option syntax ("batch=N,dim=NAME:N"), empty if the pass has none.
  std::string Params;
  llvm::StringRef Description;
  /// The options' values when not given ("batch=1,..."), empty if none.
  std::string Defaults;
};

/// One pass of a parsed pipeline: its name and options, in the order given.
struct PipelineElement {
  std::string Name;
  std::vector<std::pair<std::string, std::string>> Options;
  /// Whether the text had braces after the name (even empty ones).
  bool HasBraces = false;
};

/// Every registered pass: PassRegistry.def's, then those a tool added
/// with registerPass, in the order added.
llvm::ArrayRef<PassInfo> getRegisteredPasses();

/// Adds a pass to those pipelines may name, for a tool of one's own
/// (dp/Driver/OptMain.h): \p Build appends the pass that \p Element (its
/// name and options) asks for to the manager, or fails naming the bad
/// option. Call it before building pipelines (and before optMain makes
/// its flags); \p Info's strings must outlive every use (literals do). A
/// name the registry already has, or not a pass name, is an error.
using PassBuildFn =
    std::function<llvm::Error(PassManager &, const PipelineElement &)>;
llvm::Error registerPass(PassInfo Info, PassBuildFn Build);

/// registerPass for a pass class: one without options (default
/// constructed), or one with `static OptionTable describeOptions(OptionsT
/// &)` and `static Expected<OptionsT> parseOptions(OptionList)`.
template <typename PassT, typename OptionsT>
llvm::Error registerPass(llvm::StringRef Description) {
  return registerPass(
      PassInfo{
          PassT::name(), getPassOptionUsage<OptionsT>(PassT::describeOptions),
          Description, getPassOptionDefaults<OptionsT>(PassT::describeOptions)},
      [](PassManager &PM, const PipelineElement &E) -> llvm::Error {
        llvm::Expected<OptionsT> Opts = PassT::parseOptions(E.Options);
        if (!Opts)
          return Opts.takeError();
        PM.addPass(PassT(std::move(*Opts)));
        return llvm::Error::success();
      });
}
template <typename PassT>
llvm::Error registerPass(llvm::StringRef Description) {
  return registerPass(
      PassInfo{PassT::name(), "", Description, ""},
      [](PassManager &PM, const PipelineElement &E) -> llvm::Error {
        if (!E.Options.empty())
          return makeError("pass '" + PassT::name() + "' takes no options");
        PM.addPass(PassT());
        return llvm::Error::success();
      });
}

/// Splits pipeline text into elements without looking the names up.
llvm::Expected<std::vector<PipelineElement>>
parsePipelineText(llvm::StringRef Text);

/// Appends the passes of \p Elements to \p PM, as parsePassPipeline
/// does once it has split the text.
llvm::Error buildPassPipeline(PassManager &PM,
                              std::vector<PipelineElement> Elements);

/// Parses \p Text and appends its passes to \p PM. Unknown passes and bad
/// options are errors that quote the pipeline.
llvm::Error parsePassPipeline(PassManager &PM, llvm::StringRef Text);

/// Writes every pass, then every placer: "  name{params}", then the
/// description and the options' defaults indented below it, each line at
/// most 100 columns.
void printPassNames(llvm::raw_ostream &OS);

/// Writes the placers (place{algo=NAME}) as printPassNames does.
void printPlacerNames(llvm::raw_ostream &OS);

} // namespace dp

#endif // DP_PASSES_PASSBUILDER_H

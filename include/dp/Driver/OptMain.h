//===- dp/Driver/OptMain.h - dp-opt as a library ----------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What dp-opt does, for tools of one's own: `optMain` is dp-opt's whole
/// command line (tools/dp-opt is one line over it, as MLIR's *-opt tools
/// are over MlirOptMain), and `runOpt` runs one job without a command line,
/// for a program or a build step that places models itself. A tool adds its
/// own passes with registerPass (dp/Passes/PassBuilder.h) before calling
/// either; they then parse in pipelines, get a -<name> flag and appear in
/// -print-passes like the registry's. docs/dp-opt.md, "A driver of your
/// own", has a ten-line tool.
///
//===----------------------------------------------------------------------===//

#ifndef DP_DRIVER_OPTMAIN_H
#define DP_DRIVER_OPTMAIN_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace dp {

/// One dp-opt job: what its flags say.
struct OptJob {
  /// The model or dp IR to read ("-": stdin), and its name in messages
  /// (empty: the path, or "<stdin>").
  std::string Input = "-";
  std::string InputName;
  /// The pass pipeline (-passes=). An ONNX input gets an import-onnx first
  /// unless the pipeline starts with one.
  std::string Pipeline;
  /// A cluster preset or file (-cluster=); empty: none.
  std::string Cluster;
  uint64_t Seed = 0;
  /// Where the IR goes (-o; "-": stdout), as text (-S) or not at all
  /// (-disable-output); Force writes bytecode to a terminal (-f).
  std::string Output = "-";
  bool OutputText = false, DisableOutput = false, Force = false;
  /// The passes' file options for the passes that do not give them
  /// (-summary=, -trace=, -placement=, -curve=); empty: none.
  std::string Summary, Trace, Placement, Curve;
  bool VerifyEach = false, TimePasses = false;
  /// Where reports, warnings, timings and the "wrote" lines go, and where
  /// searching placers print progress (null: nowhere).
  llvm::raw_ostream *Report = &llvm::errs();
  llvm::raw_ostream *Progress = &llvm::errs();
  /// The tool that names itself in warnings.
  std::string Tool = "dp-opt";
};

/// Runs \p Job: reads the cluster and the input, runs the pipeline and
/// writes the IR. The files the job writes (the IR, the summaries, emit's)
/// appear together once it succeeded; a job that fails leaves every one as
/// it was. Errors about the input name it as their file.
llvm::Error runOpt(const OptJob &Job);

/// dp-opt's command line over runOpt (and -print-passes, -print-pipeline,
/// -print-cluster): parses \p argv, reports errors as "\p Tool: ...", and
/// returns the exit status. \p Overview starts -help; empty: dp-opt's.
int optMain(int argc, char **argv, llvm::StringRef Tool = "dp-opt",
            llvm::StringRef Overview = "");

} // namespace dp

#endif // DP_DRIVER_OPTMAIN_H

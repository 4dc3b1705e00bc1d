//===- dp/Emit/EmitPass.h - The emit pass -----------------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// `emit{format=F+F...,out=PREFIX|DIR/,model=FILE,F=FILE,render=svg}`
/// writes the placed graph in the forms people's tools take (docs/emit.md):
///
///   onnx        PREFIX.placed.onnx    the user's model, each node's device,
///                                     the schedule and the simulated step
///                                     in its metadata
///   split       PREFIX.<device>.<k>.onnx  one submodel per segment (a
///               PREFIX.split.json     run of one device's nodes), the
///                                     order they run in, and the
///                                     schedule's order
///   json        PREFIX.placement.json placement by op, node and group, and
///                                     the simulator's summary
///   device-map  PREFIX.device_map.json  module path -> device (accelerate)
///   trace       PREFIX.trace.json     the simulated step (Chrome, Perfetto)
///   dot         PREFIX.dot            Graphviz; render=svg adds PREFIX.svg
///   report      PREFIX.report.txt     the human report
///   html        PREFIX.report.html    the report as one HTML page
///
/// `F=FILE` writes format F to FILE (and selects it). The pass simulates
/// the placed graph itself, and names every file it wrote on the
/// pipeline's report stream.
///
//===----------------------------------------------------------------------===//

#ifndef DP_EMIT_EMITPASS_H
#define DP_EMIT_EMITPASS_H

#include "dp/IR/PassManager.h"
#include "dp/Support/Options.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <string>
#include <utility>

namespace dp {

/// emit's output formats (EmitFormats.def).
enum class EmitFormatKind : unsigned {
#define EMIT_FORMAT(KIND, NAME, SUFFIX, DESCRIPTION, WRITER) KIND,
#include "dp/Emit/EmitFormats.def"
};
constexpr unsigned NumEmitFormats = 0
#define EMIT_FORMAT(KIND, NAME, SUFFIX, DESCRIPTION, WRITER) +1
#include "dp/Emit/EmitFormats.def"
    ;

/// The name of \p K in format= ("device-map").
llvm::StringRef getEmitFormatName(EmitFormatKind K);

struct EmitOptions {
  /// Which formats to write.
  std::array<bool, NumEmitFormats> Formats{};
  /// A format's file when given with F=FILE; empty means PREFIX + suffix.
  std::array<std::string, NumEmitFormats> Paths;
  /// Where files go: a prefix, or a directory when it ends with '/' or
  /// names one (then the prefix is the input's name in it). Empty: the
  /// input's name in the current directory.
  std::string Out;
  /// The user's ONNX model, for onnx and split when the input is dp IR.
  std::string Model;
  /// Render the DOT graph to SVG with Graphviz.
  bool RenderSVG = false;

  bool has(EmitFormatKind K) const { return Formats[static_cast<unsigned>(K)]; }
};

class EmitPass {
public:
  explicit EmitPass(EmitOptions Opts = {}) : Opts(std::move(Opts)) {}

  static llvm::StringRef name() { return "emit"; }
  llvm::Error run(Graph &G, PassContext &Ctx);
  /// It writes files and leaves the graph as it is.
  static GraphChange changes() { return GraphChange::None; }
  void printPipeline(llvm::raw_ostream &OS) const;

  /// format=F+F..., out=PREFIX|DIR/, model=FILE, render=svg and F=FILE
  /// for a format F, bound to \p O.
  static OptionTable describeOptions(EmitOptions &O);
  static llvm::Expected<EmitOptions> parseOptions(OptionList Options) {
    return parsePassOptions<EmitOptions>(Options, describeOptions);
  }

private:
  EmitOptions Opts;
};

} // namespace dp

#endif // DP_EMIT_EMITPASS_H

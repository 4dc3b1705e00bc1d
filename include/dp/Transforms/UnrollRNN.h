//===- dp/Transforms/UnrollRNN.h - Unrolling recurrent ops ------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The "unroll-rnn" pass replaces every ONNX LSTM, GRU and RNN op by the
/// per-timestep cell computations it stands for, written with ordinary
/// ONNX ops (Split, Squeeze, MatMul, Add, Sigmoid, Tanh, Mul, ...), so that
/// a placer sees the graph the papers placed: one cell per layer and step.
///
/// The expansion computes exactly the ONNX operator's equations (LSTM gate
/// order iofc with optional peepholes, GRU zrh with either
/// linear_before_reset, forward/reverse/bidirectional, layout 0 and 1,
/// clip, initial states when given, else zeros). The results keep the
/// names of the op's Y, Y_h and Y_c, so their consumers are unchanged.
/// Every new op has the annotation `rnn` (the name of the op it came from)
/// and, when it belongs to one step of the recurrence, `timestep` (the
/// index into the sequence it computes). docs/transforms.md describes the
/// expansion, its names and what is not supported.
///
//===----------------------------------------------------------------------===//

#ifndef DP_TRANSFORMS_UNROLLRNN_H
#define DP_TRANSFORMS_UNROLLRNN_H

#include "dp/IR/PassManager.h"

#include "llvm/Support/Error.h"

namespace dp {

class Graph;

/// Unrolls every LSTM, GRU and RNN op of \p G. Unsupported ops (given
/// sequence_lens, activations other than Sigmoid, Tanh and Relu,
/// input_forget) are errors located at the op, all reported together; \p G
/// is unchanged then.
llvm::Error unrollRNNs(Graph &G);

/// The "unroll-rnn" pass.
class UnrollRNNPass {
public:
  static llvm::StringRef name() { return "unroll-rnn"; }
  llvm::Error run(Graph &G, PassContext &Ctx) { return unrollRNNs(G); }
};

} // namespace dp

#endif // DP_TRANSFORMS_UNROLLRNN_H

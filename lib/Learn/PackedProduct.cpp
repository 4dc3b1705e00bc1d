//===- PackedProduct.cpp - Products with a matrix laid out once -----------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// oneDNN's C++ API reports failures as exceptions (dnnl::error, a
// std::exception); like libtorch's, they reach the plugin's entry point,
// which turns them into the placer's error.
//
//===----------------------------------------------------------------------===//

#include "PackedProduct.h"

#include "oneapi/dnnl/dnnl.hpp"

#include <cassert>
#include <map>
#include <tuple>
#include <unordered_map>

namespace dp {
namespace learn {

using dnnl::memory;

namespace {

/// A product's shape: Rows x K times K x N, the rows of X and Y Ldx and
/// Ldy floats apart, accumulating into Y or not.
using ProductKey =
    std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, bool>;

/// A product's primitive with its operands' memory objects and argument
/// map, made once: a step points them at its rows (set_data_handle)
/// instead of making two memory objects and a map per product, which at a
/// step's few rows cost about as much as the arithmetic.
struct Product {
  dnnl::matmul Primitive;
  memory Src, Dst;
  std::unordered_map<int, memory> Args;
};

/// The engine, stream and primitives of this thread. A primitive and the
/// weights' layout depend only on the shape, so a segment's new matrices
/// reuse those of the segments before.
struct Context {
  dnnl::engine Engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream Stream{Engine};
  std::map<std::tuple<int64_t, int64_t, int64_t>, memory::desc> Layouts;
  std::map<ProductKey, Product> Products;

  /// The blocked layout oneDNN's product reads W [K, N] in for Rows rows.
  const memory::desc &layout(int64_t Rows, int64_t K, int64_t N) {
    // Made before it is cached: a failure (an exception) caches nothing.
    auto It = Layouts.find({Rows, K, N});
    if (It != Layouts.end())
      return It->second;
    dnnl::matmul::primitive_desc PD(
        dnnl::matmul::desc(rows(Rows, K, K),
                           memory::desc({K, N}, memory::data_type::f32,
                                        memory::format_tag::any),
                           rows(Rows, N, N)),
        Engine);
    return Layouts.emplace(std::make_tuple(Rows, K, N), PD.weights_desc())
        .first->second;
  }

  Product &product(const ProductKey &Key) {
    auto It = Products.find(Key);
    if (It != Products.end())
      return It->second;
    auto [Rows, K, N, Ldx, Ldy, Accumulate] = Key;
    dnnl::primitive_attr Attr;
    if (Accumulate) {
      dnnl::post_ops Sum;
      Sum.append_sum(1.0f);
      Attr.set_post_ops(Sum);
    }
    Product P;
    P.Primitive = dnnl::matmul(dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(rows(Rows, K, Ldx), layout(Rows, K, N),
                           rows(Rows, N, Ldy)),
        Attr, Engine));
    P.Src = memory(rows(Rows, K, Ldx), Engine, DNNL_MEMORY_NONE);
    P.Dst = memory(rows(Rows, N, Ldy), Engine, DNNL_MEMORY_NONE);
    P.Args = {{DNNL_ARG_SRC, P.Src}, {DNNL_ARG_DST, P.Dst}};
    return Products.emplace(Key, std::move(P)).first->second;
  }

  static memory::desc rows(int64_t Rows, int64_t Cols, int64_t Ld) {
    return memory::desc({Rows, Cols}, memory::data_type::f32,
                        memory::dims{Ld, 1});
  }
};

Context &context() {
  thread_local Context C;
  return C;
}

void checkHostFloat(const torch::Tensor &T, const char *What) {
  TORCH_CHECK(T.dim() == 2 && T.device().is_cpu() &&
                  T.scalar_type() == torch::kFloat,
              "PackedMatrix: ", What, " must be a 2-D float32 host tensor");
}

} // namespace

struct PackedMatrix::Impl {
  int64_t Rows, K, N;
  memory Packed;
};

PackedMatrix::PackedMatrix(const torch::Tensor &W, int64_t Rows) {
  checkHostFloat(W, "the matrix");
  Context &Ctx = context();
  int64_t K = W.size(0), N = W.size(1);
  // The matrix as it is, strides and all (a transposed view is laid out
  // without a copy first), reordered into the product's layout.
  memory Plain(memory::desc({K, N}, memory::data_type::f32,
                            memory::dims{W.stride(0), W.stride(1)}),
               Ctx.Engine, W.data_ptr<float>());
  memory Packed(Ctx.layout(Rows, K, N), Ctx.Engine);
  dnnl::reorder(Plain, Packed).execute(Ctx.Stream, Plain, Packed);
  Ctx.Stream.wait();
  P = std::make_shared<const Impl>(Impl{Rows, K, N, std::move(Packed)});
}

void PackedMatrix::multiply(const torch::Tensor &Y, const torch::Tensor &X,
                            bool Accumulate) const {
  checkHostFloat(X, "the left factor");
  checkHostFloat(Y, "the result");
  TORCH_CHECK(X.size(0) == P->Rows && X.size(1) == P->K &&
                  Y.size(0) == P->Rows && Y.size(1) == P->N &&
                  X.stride(1) == 1 && Y.stride(1) == 1,
              "PackedMatrix: a product of the wrong shape");
  multiply(Y.data_ptr<float>(), Y.stride(0), X.data_ptr<float>(), X.stride(0),
           Accumulate);
}

void PackedMatrix::multiply(float *Y, int64_t Ldy, const float *X, int64_t Ldx,
                            bool Accumulate) const {
  assert(P && Ldx >= P->K && Ldy >= P->N && "a product of the wrong shape");
  Context &Ctx = context();
  Product &Prod = Ctx.product({P->Rows, P->K, P->N, Ldx, Ldy, Accumulate});
  // The map's memory objects share their handles with Src and Dst.
  Prod.Src.set_data_handle(const_cast<float *>(X));
  Prod.Dst.set_data_handle(Y);
  Prod.Args[DNNL_ARG_WEIGHTS] = P->Packed;
  Prod.Primitive.execute(Ctx.Stream, Prod.Args);
  Ctx.Stream.wait();
}

} // namespace learn
} // namespace dp

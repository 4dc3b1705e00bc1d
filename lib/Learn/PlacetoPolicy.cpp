//===- PlacetoPolicy.cpp - Placeto's graph network, fused -----------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// Every buffer of the fused form is [channels, columns], one row per
// channel; a unit-level buffer has U x N columns (unit-major, N states per
// unit), the classifier's N. A linear layer is then a small weight matrix
// times a long contiguous row, done a tile of 64 columns at a time in
// registers, and a gradient of its weights a set of dot products along the
// rows.
//
//===----------------------------------------------------------------------===//

#include "PlacetoPolicy.h"

#include "FlopCount.h"

#include "oneapi/dnnl/dnnl.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace dp {
namespace learn {

//===----------------------------------------------------------------------===//
// The unit graph
//===----------------------------------------------------------------------===//

/// The adjacency [U, U] whose row To holds a 1 at From for every edge
/// (From, To) of \p Edges (as given or \p Reversed).
static torch::Tensor getMessageMatrix(const LearnTask &T, bool Reversed) {
  int64_t N = T.Edges.size(), U = T.NumUnits;
  torch::Tensor Indices = torch::empty({2, N}, torch::kLong);
  auto Idx = Indices.accessor<int64_t, 2>();
  for (int64_t K = 0; K != N; ++K) {
    const LearnTask::Edge &E = T.Edges[K];
    Idx[0][K] = Reversed ? E.From : E.To;
    Idx[1][K] = Reversed ? E.To : E.From;
  }
  return torch::sparse_coo_tensor(Indices, torch::ones({N}), {U, U}).coalesce();
}

/// Compressed rows of \p Lists into \p Begin and \p Items.
static void compress(const std::vector<std::vector<uint32_t>> &Lists,
                     std::vector<uint32_t> &Begin,
                     std::vector<uint32_t> &Items) {
  Begin.assign(1, 0);
  Items.clear();
  for (const std::vector<uint32_t> &L : Lists) {
    Items.insert(Items.end(), L.begin(), L.end());
    Begin.push_back(uint32_t(Items.size()));
  }
}

UnitGraph::UnitGraph(const LearnTask &T) : NumUnits(T.NumUnits) {
  unsigned U = T.NumUnits;
  Down = getMessageMatrix(T, /*Reversed=*/false);
  Up = getMessageMatrix(T, /*Reversed=*/true);
  std::vector<std::vector<uint32_t>> Succ(U), Pred(U);
  for (const LearnTask::Edge &E : T.Edges) {
    Succ[E.From].push_back(E.To);
    Pred[E.To].push_back(E.From);
  }
  compress(Pred, ParentBegin, Parents);
  compress(Succ, ChildBegin, Children);
  std::vector<float> Has(2 * size_t(U));
  for (unsigned V = 0; V != U; ++V) {
    Has[V] = !Pred[V].empty();
    Has[U + V] = !Succ[V].empty();
  }
  torch::Tensor Flags = torch::tensor(Has).view({2, int64_t(U), 1, 1});
  HasParents = Flags[0];
  HasChildren = Flags[1];

  // Breadth-first search from every unit, both ways. Unit graphs may have
  // cycles (colocation groups), so a unit can be both an ancestor and a
  // descendant of another; it then counts in both summaries.
  Words = (U + 63) / 64;
  Ancestors.assign(size_t(U) * Words, 0);
  Descendants.assign(size_t(U) * Words, 0);
  std::vector<uint32_t> Queue;
  Queue.reserve(U);
  auto Search = [&](uint32_t From,
                    const std::vector<std::vector<uint32_t>> &Adj,
                    uint64_t *Bits) {
    Queue.assign(1, From);
    for (size_t Head = 0; Head != Queue.size(); ++Head)
      for (uint32_t W : Adj[Queue[Head]]) {
        uint64_t Mask = uint64_t(1) << (W % 64);
        if (Bits[W / 64] & Mask)
          continue;
        Bits[W / 64] |= Mask;
        Queue.push_back(W);
      }
  };
  for (unsigned V = 0; V != U; ++V) {
    Search(V, Pred, &Ancestors[size_t(V) * Words]);
    Search(V, Succ, &Descendants[size_t(V) * Words]);
  }
}

void UnitGraph::getPools(uint32_t V, float *Rows) const {
  size_t U = NumUnits;
  const uint64_t *A = &Ancestors[V * Words], *D = &Descendants[V * Words];
  for (size_t W = 0; W != U; ++W) {
    bool IsAncestor = (A[W / 64] >> (W % 64)) & 1;
    bool IsDescendant = (D[W / 64] >> (W % 64)) & 1;
    bool Self = W == V;
    Rows[W] = IsAncestor && !Self;
    Rows[U + W] = IsDescendant && !Self;
    Rows[2 * U + W] = !IsAncestor && !IsDescendant && !Self;
  }
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

#if defined(__x86_64__)
/// AVX2 and FMA where the CPU has them, else SSE2.
#define DP_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define DP_CLONES
#endif

namespace {

/// A weight matrix read as (o, i) -> W[o * RowStride + i * ColStride], so
/// that a layer's weights and their transpose are the same memory.
struct Matrix {
  const float *W;
  int64_t RowStride, ColStride;
};

Matrix weightsOf(const torch::nn::Linear &L) {
  return {L->weight.data_ptr<float>(), L->weight.size(1), 1};
}
Matrix transposeOf(const torch::nn::Linear &L) {
  return {L->weight.data_ptr<float>(), 1, L->weight.size(1)};
}
const float *biasOf(const torch::nn::Linear &L) {
  return L->bias.data_ptr<float>();
}

/// Eight floats, one AVX register where the clone has AVX (GCC's and
/// Clang's vector extension: portable, and kept in registers). Aligned as
/// a float and aliasing floats, so that at8() reads and writes any eight
/// floats in place. No function takes or returns one by value: without
/// AVX (the default clone) that would change the calling convention,
/// which Clang refuses.
typedef float Vec8 __attribute__((vector_size(32), aligned(4), __may_alias__));

/// The eight floats at \p P, as a vector.
__attribute__((always_inline)) inline const Vec8 &at8(const float *P) {
  return *reinterpret_cast<const Vec8 *>(P);
}
__attribute__((always_inline)) inline Vec8 &at8(float *P) {
  return *reinterpret_cast<Vec8 *>(P);
}

/// What product() does with A X + B besides storing it.
/// Gated implies Relu, and Accumulate excludes both.
struct Epilogue {
  /// Y += A X + B instead of Y = A X + B.
  bool Accumulate = false;
  /// Y = relu(A X + B).
  bool Relu = false;
  /// Where set, also Gated = Base + Has Y, Has [M] 0 or 1 per column:
  /// the hop's X_{k+1} = Self + relu(g(sums)) where a unit has neighbours.
  const float *Base = nullptr, *Has = nullptr;
  float *Gated = nullptr;
};

/// One tile of product(): 64 columns of every row, in eight registers,
/// with E's flags known at compile time.
template <bool Accumulate, bool Relu, bool Gated>
__attribute__((always_inline)) inline void
productTile(Matrix A, const float *B, const float *X, float *Y, int64_t O,
            int64_t I, int64_t M0, int64_t Ld, const Epilogue &E) {
  constexpr int64_t Regs = 8;
  for (int64_t Row = 0; Row != O; ++Row) {
    float *Yr = Y + Row * Ld + M0;
    Vec8 Acc[Regs];
    Vec8 Init = Vec8{} + (B ? B[Row] : 0.0f);
    for (int64_t R = 0; R != Regs; ++R)
      Acc[R] = Accumulate ? at8(Yr + 8 * R) + Init : Init;
    for (int64_t K = 0; K != I; ++K) {
      Vec8 C = Vec8{} + A.W[Row * A.RowStride + K * A.ColStride];
      const float *Xk = X + K * Ld + M0;
      for (int64_t R = 0; R != Regs; ++R)
        Acc[R] += C * at8(Xk + 8 * R);
    }
    for (int64_t R = 0; R != Regs; ++R) {
      Vec8 V = Acc[R];
      if (Relu)
        V = V > 0 ? V : Vec8{};
      at8(Yr + 8 * R) = V;
      if (Gated) {
        int64_t At = Row * Ld + M0 + 8 * R;
        at8(E.Gated + At) = at8(E.Base + At) + at8(E.Has + M0 + 8 * R) * V;
      }
    }
  }
}

/// Columns [M0, M1) of product().
__attribute__((always_inline)) inline void
productRange(Matrix A, const float *B, const float *X, float *Y, int64_t O,
             int64_t I, int64_t M0, int64_t M1, int64_t Ld, const Epilogue &E) {
  constexpr int64_t Tile = 64;
  for (; M0 + Tile <= M1; M0 += Tile) {
    if (E.Gated)
      productTile<false, true, true>(A, B, X, Y, O, I, M0, Ld, E);
    else if (E.Accumulate)
      productTile<true, false, false>(A, B, X, Y, O, I, M0, Ld, E);
    else if (E.Relu)
      productTile<false, true, false>(A, B, X, Y, O, I, M0, Ld, E);
    else
      productTile<false, false, false>(A, B, X, Y, O, I, M0, Ld, E);
  }
  for (int64_t Row = 0; Row != O; ++Row)
    for (int64_t L = M0; L < M1; ++L) {
      int64_t At = Row * Ld + L;
      float Acc = (E.Accumulate ? Y[At] : 0.0f) + (B ? B[Row] : 0.0f);
      for (int64_t K = 0; K != I; ++K)
        Acc += A.W[Row * A.RowStride + K * A.ColStride] * X[K * Ld + L];
      Y[At] = E.Relu ? std::max(Acc, 0.0f) : Acc;
      if (E.Gated)
        E.Gated[At] = E.Base[At] + E.Has[L] * Y[At];
    }
}

/// Products of layers at least WideLayer wide (outputs and inputs) over
/// at least WideWork multiply-adds go to oneDNN's matrix product. The
/// tiles above load an operand per multiply-add and use AVX2 at most,
/// which serves the default width (the features', 9 on p100x4; its
/// classifier is 72 wide over a few states), where oneDNN's set-up per
/// call costs more than it saves (about 10 % of a BERT-Base run); at
/// hidden=128 (the equal preset's) the layers are 128 to 1024 wide and
/// the tiles reach a fraction of the core's rate.
constexpr int64_t WideLayer = 32, WideWork = int64_t(1) << 20;

bool isWide(int64_t O, int64_t I, int64_t M) {
  return O >= WideLayer && I >= WideLayer && O * I * M >= WideWork;
}

/// C [M, N] = op(A) op(B) + Beta C, row-major, by oneDNN (one thread under
/// setUpTorch(1): libtorch and oneDNN share the OpenMP runtime).
void sgemm(char TransA, char TransB, int64_t M, int64_t N, int64_t K,
           const float *A, int64_t Lda, const float *B, int64_t Ldb,
           float Beta, float *C, int64_t Ldc) {
  dnnl_status_t Status = dnnl_sgemm(TransA, TransB, M, N, K, 1.0f, A, Lda, B,
                                    Ldb, Beta, C, Ldc);
  assert(Status == dnnl_success && "oneDNN refused a product's shapes");
  (void)Status;
}

/// Y [O, M] = A X + Beta Y, rows of X and Y \p Ld floats apart.
void wideProduct(Matrix A, const float *X, float *Y, int64_t O, int64_t I,
                 int64_t M, int64_t Ld, float Beta) {
  // A is W [O, I] row-major, or W^T of a row-major [I, O].
  bool Transposed = A.ColStride != 1;
  sgemm(Transposed ? 'T' : 'N', 'N', O, M, I, A.W,
        Transposed ? A.ColStride : A.RowStride, X, Ld, Beta, Y, Ld);
}

/// Y [O, M] = A X + B, then \p E: A [O, I], X [I, M], B [O] or none. Rows
/// of X and Y are \p Ld floats apart.
DP_CLONES void product(Matrix A, const float *B, const float *X, float *Y,
                       int64_t O, int64_t I, int64_t M, int64_t Ld,
                       const Epilogue &E = {}) {
  if (!isWide(O, I, M))
    return productRange(A, B, X, Y, O, I, 0, M, Ld, E);
  // The bias first (added to Y's rows, or as their start), then the
  // product added, then the rest of the epilogue row by row.
  if (B)
    for (int64_t Row = 0; Row != O; ++Row) {
      float *Yr = Y + Row * Ld;
      if (E.Accumulate)
        for (int64_t L = 0; L != M; ++L)
          Yr[L] += B[Row];
      else
        std::fill(Yr, Yr + M, B[Row]);
    }
  wideProduct(A, X, Y, O, I, M, Ld, B || E.Accumulate ? 1.0f : 0.0f);
  if (!E.Relu && !E.Gated)
    return;
  for (int64_t Row = 0; Row != O; ++Row) {
    float *Yr = Y + Row * Ld;
    for (int64_t L = 0; L != M; ++L)
      Yr[L] = std::max(Yr[L], 0.0f);
    if (E.Gated) {
      const float *Base = E.Base + Row * Ld;
      float *Gated = E.Gated + Row * Ld;
      for (int64_t L = 0; L != M; ++L)
        Gated[L] = Base[L] + E.Has[L] * Yr[L];
    }
  }
}

/// DW's row, columns [K0, K0 + Block), += D . X_k over \p Width columns
/// (and, where \p DB is set, *DB += the sum of D): Block dot products at
/// once, eight lanes each, in registers, so that the additions do not
/// wait on one another.
template <int64_t Block>
__attribute__((always_inline)) inline void
dotBlock(const float *D, const float *X, float *DW, float *DB, int64_t K0,
         int64_t Ld, int64_t Width) {
  Vec8 Acc[Block], Bias = Vec8{};
  for (int64_t K = 0; K != Block; ++K)
    Acc[K] = Vec8{};
  int64_t L = 0;
  for (; L + 8 <= Width; L += 8) {
    Vec8 Dv = at8(D + L);
    if (DB)
      Bias += Dv;
    for (int64_t K = 0; K != Block; ++K)
      Acc[K] += Dv * at8(X + (K0 + K) * Ld + L);
  }
  for (int64_t K = 0; K != Block; ++K) {
    float Sum = 0;
    for (int64_t I = 0; I != 8; ++I)
      Sum += Acc[K][I];
    for (int64_t R = L; R < Width; ++R)
      Sum += D[R] * X[(K0 + K) * Ld + R];
    DW[K0 + K] += Sum;
  }
  if (DB) {
    float Sum = 0;
    for (int64_t I = 0; I != 8; ++I)
      Sum += Bias[I];
    for (int64_t R = L; R < Width; ++R)
      Sum += D[R];
    *DB += Sum;
  }
}

/// dotBlock() for a block of 1 to MaxBlock columns (twelve accumulators,
/// the bias's, the row's eight floats and a product fit AVX's sixteen
/// registers), dispatched at compile time so that it is inlined into the
/// caller's clone.
template <int64_t MaxBlock>
__attribute__((always_inline)) inline void
dotBlocks(const float *D, const float *X, float *DW, float *DB, int64_t K0,
          int64_t Block, int64_t Ld, int64_t Width) {
  if (Block == MaxBlock)
    return dotBlock<MaxBlock>(D, X, DW, DB, K0, Ld, Width);
  if constexpr (MaxBlock > 1)
    dotBlocks<MaxBlock - 1>(D, X, DW, DB, K0, Block, Ld, Width);
}

/// Columns [M0, M1) of DW [O, I] += DY X^T and DB [O] += DY's row sums,
/// for DY [O, M] and X [I, M] (rows \p Ld floats apart).
__attribute__((always_inline)) inline void
weightGradientRange(const float *DY, const float *X, float *DW, float *DB,
                    int64_t O, int64_t I, int64_t M0, int64_t M1, int64_t Ld) {
  constexpr int64_t MaxBlock = 12;
  // I split into blocks of at most MaxBlock, as even as can be.
  int64_t Blocks = (I + MaxBlock - 1) / MaxBlock, Wd = M1 - M0;
  for (int64_t Row = 0; Row != O; ++Row) {
    const float *D = DY + Row * Ld + M0, *Xt = X + M0;
    for (int64_t Bl = 0, K0 = 0; Bl != Blocks; ++Bl) {
      int64_t Next = I * (Bl + 1) / Blocks;
      dotBlocks<MaxBlock>(D, Xt, DW + Row * I, Bl ? nullptr : DB + Row, K0,
                          Next - K0, Ld, Wd);
      K0 = Next;
    }
  }
}

/// The backward pass of a linear layer Y = W X + B, DY [O, M] given: DW
/// += DY X^T, DB += DY's row sums and, where \p DX is set, DX [I, M] =
/// W^T DY (+= with \p Accumulate), for \p Transposed = W^T. A tile of
/// columns at a time, so that DY is read from memory once and its tile,
/// X's and DX's stay in the first-level cache.
DP_CLONES void linearBackward(Matrix Transposed, const float *DY,
                              const float *X, float *DW, float *DB, float *DX,
                              int64_t O, int64_t I, int64_t M, int64_t Ld,
                              bool Accumulate = false) {
  if (isWide(O, I, M)) {
    if (DX)
      wideProduct(Transposed, DY, DX, I, O, M, Ld, Accumulate ? 1.0f : 0.0f);
    sgemm('N', 'T', O, I, M, DY, Ld, X, Ld, 1.0f, DW, I); // DW += DY X^T
    for (int64_t Row = 0; Row != O; ++Row) {
      const float *D = DY + Row * Ld;
      float Sum = 0;
      for (int64_t L = 0; L != M; ++L)
        Sum += D[L];
      DB[Row] += Sum;
    }
    return;
  }
  constexpr int64_t Tile = 256;
  Epilogue E;
  E.Accumulate = Accumulate;
  for (int64_t M0 = 0; M0 < M; M0 += Tile) {
    int64_t M1 = std::min(M, M0 + Tile);
    if (DX)
      productRange(Transposed, nullptr, DY, DX, I, O, M0, M1, Ld, E);
    weightGradientRange(DY, X, DW, DB, O, I, M0, M1, Ld);
  }
}

/// S [C, U, N]: each unit's row the sum of its neighbours' (Begin, Items:
/// compressed rows) in \p M [C, U, N]; channels \p Ld floats apart. With
/// \p Relu, then 0 where Relu [C, U, N] is not positive (the gradient
/// through Relu's ReLU). A unit's N states are a handful: each block of
/// eight is summed in a register and stored once.
DP_CLONES void aggregate(const uint32_t *Begin, const uint32_t *Items,
                         const float *M, float *S, int64_t C, int64_t U,
                         int64_t N, int64_t Ld, const float *Relu = nullptr) {
  for (int64_t Ch = 0; Ch != C; ++Ch) {
    const float *Mc = M + Ch * Ld;
    for (int64_t V = 0; V != U; ++V) {
      int64_t At = Ch * Ld + V * N, L = 0;
      for (; L + 8 <= N; L += 8) {
        Vec8 Acc = Vec8{};
        for (uint32_t E = Begin[V]; E != Begin[V + 1]; ++E)
          Acc += at8(Mc + Items[E] * N + L);
        if (Relu)
          Acc = at8(Relu + At + L) > 0 ? Acc : Vec8{};
        at8(S + At + L) = Acc;
      }
      for (; L < N; ++L) {
        float Acc = 0;
        for (uint32_t E = Begin[V]; E != Begin[V + 1]; ++E)
          Acc += Mc[Items[E] * N + L];
        S[At + L] = !Relu || Relu[At + L] > 0 ? Acc : 0.0f;
      }
    }
  }
}

/// Sum [C, N] = the sum over the units of Mask [U, N] times F [C, U, N]
/// (channels \p Ld floats apart): a pooled summary of each state.
DP_CLONES void poolStates(const float *Mask, const float *F, float *Sum,
                          int64_t C, int64_t U, int64_t N, int64_t Ld) {
  for (int64_t Ch = 0; Ch != C; ++Ch) {
    const float *Fc = F + Ch * Ld;
    int64_t L = 0;
    for (; L + 8 <= N; L += 8) {
      // Four sums, so that the additions do not wait on one another.
      Vec8 Acc[4] = {};
      int64_t V = 0;
      for (; V + 4 <= U; V += 4)
        for (int64_t I = 0; I != 4; ++I)
          Acc[I] += at8(Mask + (V + I) * N + L) * at8(Fc + (V + I) * N + L);
      for (; V != U; ++V)
        Acc[0] += at8(Mask + V * N + L) * at8(Fc + V * N + L);
      at8(Sum + Ch * N + L) = (Acc[0] + Acc[1]) + (Acc[2] + Acc[3]);
    }
    for (; L < N; ++L) {
      float Acc = 0;
      for (int64_t V = 0; V != U; ++V)
        Acc += Mask[V * N + L] * Fc[V * N + L];
      Sum[Ch * N + L] = Acc;
    }
  }
}

/// The gradient DF [C, U, N] of poolStates()'s F = relu(f(Emb)) from
/// that of its sums, DSum [C, N]: Mask DSum where F is positive, else 0.
DP_CLONES void poolGradient(const float *Mask, const float *F,
                            const float *DSum, float *DF, int64_t C, int64_t U,
                            int64_t N, int64_t Ld) {
  for (int64_t Ch = 0; Ch != C; ++Ch)
    for (int64_t V = 0; V != U; ++V) {
      int64_t At = Ch * Ld + V * N, L = 0;
      for (; L + 8 <= N; L += 8) {
        Vec8 D = at8(Mask + V * N + L) * at8(DSum + Ch * N + L);
        at8(DF + At + L) = at8(F + At + L) > 0 ? D : Vec8{};
      }
      for (; L < N; ++L)
        DF[At + L] = F[At + L] > 0 ? Mask[V * N + L] * DSum[Ch * N + L] : 0;
    }
}

/// The start of a hop's backward pass, row by row of [C, M] (rows \p Ld
/// floats apart), from the gradient DX of its output X_{k+1} = Self +
/// Has relu(g(sums)): DSelf += DX, and DQ = Has DX where R = relu(g(sums))
/// is positive, else 0.
DP_CLONES void hopGradient(const float *DX, const float *Has, const float *R,
                           float *DSelf, float *DQ, int64_t C, int64_t M,
                           int64_t Ld) {
  for (int64_t Ch = 0; Ch != C; ++Ch) {
    const float *DXc = DX + Ch * Ld, *Rc = R + Ch * Ld;
    float *DSc = DSelf + Ch * Ld, *DQc = DQ + Ch * Ld;
    for (int64_t L = 0; L < M; ++L) {
      DSc[L] += DXc[L];
      DQc[L] = Rc[L] > 0 ? Has[L] * DXc[L] : 0.0f;
    }
  }
}

/// D = D where \p Out > 0, else 0: the gradient through Out = relu(x).
DP_CLONES void throughRelu(float *D, const float *Out, int64_t Size) {
  for (int64_t L = 0; L < Size; ++L)
    D[L] = Out[L] > 0 ? D[L] : 0.0f;
}

/// Y += X, elementwise.
DP_CLONES void addTo(float *Y, const float *X, int64_t Size) {
  for (int64_t L = 0; L < Size; ++L)
    Y[L] += X[L];
}

const Epilogue Relu{false, true};

/// 2 M K O + M O: a linear layer's product and bias over M rows.
double linearFlops(double M, double K, double O) {
  return 2 * M * K * O + M * O;
}

/// The gradient of \p P, zeros created if it has none yet.
float *gradientOf(torch::Tensor P) {
  if (!P.grad().defined())
    P.mutable_grad() = torch::zeros_like(P);
  return P.mutable_grad().data_ptr<float>();
}

} // namespace

//===----------------------------------------------------------------------===//
// The policy
//===----------------------------------------------------------------------===//

PlacetoPolicyImpl::PlacetoPolicyImpl(int64_t In, int64_t Hidden,
                                     int64_t Devices, int64_t Hops)
    : In(In), Width(Hidden), Devices(Devices), Hops(Hops) {
  NodeTransform =
      register_module("node_transform", torch::nn::Linear(In, Hidden));
  Down = register_module("down", Aggregator(Hidden));
  Up = register_module("up", Aggregator(Hidden));
  Parents = register_module("parents", Aggregator(2 * Hidden));
  Children = register_module("children", Aggregator(2 * Hidden));
  Parallel = register_module("parallel", Aggregator(2 * Hidden));
  // The classifier's hidden layer is as wide as its input, as in the
  // authors' code.
  Classifier =
      register_module("classifier", torch::nn::Linear(8 * Hidden, 8 * Hidden));
  Output = register_module("output", torch::nn::Linear(8 * Hidden, Devices));
}

void PlacetoPolicyImpl::prepare(PlacetoActivations &A, int64_t N,
                                const UnitGraph &G) const {
  int64_t Cols = int64_t(G.NumUnits) * N;
  // Rows an odd number of cache lines apart: rows a multiple of 4 KiB
  // apart would share the first-level cache's sets, and a product reads
  // and writes a dozen rows at once.
  int64_t Ld = (Cols + 15) / 16 * 16;
  if ((Ld / 16) % 2 == 0)
    Ld += 16;
  A.States = N;
  A.Stride = Ld;
  A.Input.assign(In * Ld, 0.0f);
  A.Pools.resize(3 * Cols);
  A.Current.resize(N);
  for (int Dir = 0; Dir != 2; ++Dir) {
    const std::vector<uint32_t> &Begin = Dir ? G.ChildBegin : G.ParentBegin;
    A.Has[Dir].resize(Cols);
    for (int64_t V = 0; V != int64_t(G.NumUnits); ++V)
      std::fill(&A.Has[Dir][V * N], &A.Has[Dir][V * N] + N,
                Begin[V + 1] != Begin[V] ? 1.0f : 0.0f);
  }
}

void PlacetoPolicyImpl::prepare(PlacetoActivations &A, const torch::Tensor &X,
                                const torch::Tensor &Pools,
                                const torch::Tensor &Current,
                                const UnitGraph &G) const {
  int64_t N = Current.size(0), Cols = int64_t(G.NumUnits) * N;
  prepare(A, N, G);
  torch::Tensor Xc = X.contiguous(), Pc = Pools.contiguous(),
                Cc = Current.contiguous();
  for (int64_t K = 0; K != In; ++K)
    std::copy(Xc[K].data_ptr<float>(), Xc[K].data_ptr<float>() + Cols,
              &A.Input[K * A.Stride]);
  std::copy(Pc.data_ptr<float>(), Pc.data_ptr<float>() + 3 * Cols,
            A.Pools.begin());
  std::copy(Cc.data_ptr<int64_t>(), Cc.data_ptr<int64_t>() + N,
            A.Current.begin());
}

torch::Tensor PlacetoPolicyImpl::forward(PlacetoActivations &A,
                                         const UnitGraph &G, bool Keep) {
  const int64_t N = A.States, U = G.NumUnits, Cols = U * N, H = Width;
  const int64_t Ld = A.Stride, Size = H * Ld;
  FusedFlops Flops(countForwardFlops(N, G));
  // Without Keep, every hop (summary) reuses the first one's buffers, so
  // that drawing placements works in the second-level cache.
  auto Slot = [Keep](int64_t K) { return Keep ? K : 0; };
  int64_t Slots = Keep ? Hops : std::min<int64_t>(Hops, 1);
  A.Kept = Keep;

  A.Self.resize(Size);
  product(weightsOf(NodeTransform), biasOf(NodeTransform), A.Input.data(),
          A.Self.data(), H, In, Cols, Ld);
  A.Emb.resize(2 * Size);
  for (int Dir = 0; Dir != 2; ++Dir) {
    Aggregator &Agg = Dir ? Up : Down;
    const std::vector<uint32_t> &Begin = Dir ? G.ChildBegin : G.ParentBegin;
    const std::vector<uint32_t> &Items = Dir ? G.Children : G.Parents;
    A.Hops[Dir].resize(std::max<int64_t>(Slots - 1, Keep ? 0 : 1) * Size);
    A.Messages[Dir].resize(Slots * Size);
    A.Sums[Dir].resize(Slots * Size);
    A.Gated[Dir].resize(Slots * Size);
    float *Last = &A.Emb[Dir * Size];
    const float *X = A.Self.data();
    for (int64_t K = 0; K != Hops; ++K) {
      float *M = &A.Messages[Dir][Slot(K) * Size];
      float *S = &A.Sums[Dir][Slot(K) * Size];
      float *R = &A.Gated[Dir][Slot(K) * Size];
      product(weightsOf(Agg->F), biasOf(Agg->F), X, M, H, H, Cols, Ld, Relu);
      aggregate(Begin.data(), Items.data(), M, S, H, U, N, Ld);
      // R = relu(g(sums)), and X_{k+1} = Self + R where the unit has
      // neighbours.
      float *Next = K + 1 == Hops ? Last : &A.Hops[Dir][Slot(K) * Size];
      Epilogue E = Relu;
      E.Base = A.Self.data();
      E.Has = A.Has[Dir].data();
      E.Gated = Next;
      product(weightsOf(Agg->G), biasOf(Agg->G), S, R, H, H, Cols, Ld, E);
      X = Next;
    }
    if (!Hops)
      std::memcpy(Last, A.Self.data(), Size * sizeof(float));
  }

  // The three pooled summaries, each [2H, N], then the current unit's
  // embedding: the classifier's input.
  A.Head.resize(8 * H * N);
  A.PoolSums.resize(3 * 2 * H * N);
  Aggregator *Pooled[] = {&Parents, &Children, &Parallel};
  for (int K = 0; K != 3; ++K) {
    Aggregator &Agg = *Pooled[K];
    A.Pooled[Slot(K)].resize(2 * Size);
    float *F = A.Pooled[Slot(K)].data(), *Sum = &A.PoolSums[K * 2 * H * N];
    product(weightsOf(Agg->F), biasOf(Agg->F), A.Emb.data(), F, 2 * H, 2 * H,
            Cols, Ld, Relu);
    poolStates(&A.Pools[K * Cols], F, Sum, 2 * H, U, N, Ld);
    product(weightsOf(Agg->G), biasOf(Agg->G), Sum, &A.Head[K * 2 * H * N],
            2 * H, 2 * H, N, N, Relu);
  }
  for (int64_t Ch = 0; Ch != 2 * H; ++Ch)
    for (int64_t L = 0; L != N; ++L)
      A.Head[(6 * H + Ch) * N + L] = A.Emb[Ch * Ld + A.Current[L] * N + L];

  A.Hidden.resize(8 * H * N);
  product(weightsOf(Classifier), biasOf(Classifier), A.Head.data(),
          A.Hidden.data(), 8 * H, 8 * H, N, N, Relu);
  std::vector<float> Logits(Devices * N);
  product(weightsOf(Output), biasOf(Output), A.Hidden.data(), Logits.data(),
          Devices, 8 * H, N, N);
  // A copy that owns its memory: contiguous() of a single state's logits
  // would return the view of this function's buffer.
  return torch::from_blob(Logits.data(), {Devices, N})
      .t()
      .clone(torch::MemoryFormat::Contiguous);
}

void PlacetoPolicyImpl::backward(const PlacetoActivations &A,
                                 const torch::Tensor &DLogits,
                                 const UnitGraph &G) {
  const int64_t N = A.States, U = G.NumUnits, Cols = U * N, H = Width;
  const int64_t Ld = A.Stride, Size = H * Ld;
  assert(A.Kept && "backward() after a forward pass that kept nothing");
  TrainingFlops Training;
  FusedFlops Flops(countBackwardFlops(N, G));
  auto Weight = [](torch::nn::Linear &L) { return gradientOf(L->weight); };
  auto Bias = [](torch::nn::Linear &L) { return gradientOf(L->bias); };

  // The classifier.
  torch::Tensor DL = DLogits.t().contiguous(); // [D, N]
  std::vector<float> DHidden(8 * H * N), DHead(8 * H * N);
  linearBackward(transposeOf(Output), DL.data_ptr<float>(), A.Hidden.data(),
                 Weight(Output), Bias(Output), DHidden.data(), Devices, 8 * H,
                 N, N);
  throughRelu(DHidden.data(), A.Hidden.data(), 8 * H * N);
  linearBackward(transposeOf(Classifier), DHidden.data(), A.Head.data(),
                 Weight(Classifier), Bias(Classifier), DHead.data(), 8 * H,
                 8 * H, N, N);

  // Scratch buffers kept from one call to the next; DEmb and DSelf
  // accumulate.
  std::vector<float> &DEmb = Scratch[0], &DF = Scratch[1], &DSelf = Scratch[2],
                     &DQ = Scratch[3], &DS = Scratch[4], &DM = Scratch[5];
  DEmb.assign(2 * Size, 0.0f);
  DF.resize(2 * Size);
  DSelf.assign(Size, 0.0f);
  for (std::vector<float> *B : {&DQ, &DS, &DM})
    B->resize(Size);

  // The current unit's embedding and the pooled summaries.
  for (int64_t Ch = 0; Ch != 2 * H; ++Ch)
    for (int64_t L = 0; L != N; ++L)
      DEmb[Ch * Ld + A.Current[L] * N + L] += DHead[(6 * H + Ch) * N + L];
  Aggregator *Pooled[] = {&Parents, &Children, &Parallel};
  std::vector<float> DSum(2 * H * N);
  for (int K = 0; K != 3; ++K) {
    Aggregator &Agg = *Pooled[K];
    float *DPart = &DHead[K * 2 * H * N];
    throughRelu(DPart, &A.Head[K * 2 * H * N], 2 * H * N);
    linearBackward(transposeOf(Agg->G), DPart, &A.PoolSums[K * 2 * H * N],
                   Weight(Agg->G), Bias(Agg->G), DSum.data(), 2 * H, 2 * H, N,
                   N);
    poolGradient(&A.Pools[K * Cols], A.Pooled[K].data(), DSum.data(), DF.data(),
                 2 * H, U, N, Ld);
    linearBackward(transposeOf(Agg->F), DF.data(), A.Emb.data(), Weight(Agg->F),
                   Bias(Agg->F), DEmb.data(), 2 * H, 2 * H, Cols, Ld,
                   /*Accumulate=*/true);
  }

  // The message passing, hop by hop backwards, each direction over its
  // reversed edges.
  for (int Dir = 0; Dir != 2; ++Dir) {
    Aggregator &Agg = Dir ? Up : Down;
    const std::vector<uint32_t> &RBegin = Dir ? G.ParentBegin : G.ChildBegin;
    const std::vector<uint32_t> &RItems = Dir ? G.Parents : G.Children;
    float *DX = &DEmb[Dir * Size];
    for (int64_t K = Hops - 1; K >= 0; --K) {
      const float *X = K ? &A.Hops[Dir][(K - 1) * Size] : A.Self.data();
      const float *M = &A.Messages[Dir][K * Size];
      const float *S = &A.Sums[Dir][K * Size];
      const float *R = &A.Gated[Dir][K * Size];
      hopGradient(DX, A.Has[Dir].data(), R, DSelf.data(), DQ.data(), H, Cols,
                  Ld);
      linearBackward(transposeOf(Agg->G), DQ.data(), S, Weight(Agg->G),
                     Bias(Agg->G), DS.data(), H, H, Cols, Ld);
      aggregate(RBegin.data(), RItems.data(), DS.data(), DM.data(), H, U, N, Ld,
                /*Relu=*/M);
      linearBackward(transposeOf(Agg->F), DM.data(), X, Weight(Agg->F),
                     Bias(Agg->F), DX, H, H, Cols, Ld);
    }
    addTo(DSelf.data(), DX, Size);
  }
  linearBackward(transposeOf(NodeTransform), DSelf.data(), A.Input.data(),
                 Weight(NodeTransform), Bias(NodeTransform), nullptr, H, In,
                 Cols, Ld);
}

double PlacetoPolicyImpl::countForwardFlops(int64_t States,
                                            const UnitGraph &G) const {
  double N = States, U = G.NumUnits, Cols = U * N, H = Width;
  double Edges = G.Parents.size();
  // Per hop: f, its ReLU, the sum over the edges, g, its ReLU, and the
  // masked addition to the unit's own embedding.
  double Hop = 2 * linearFlops(Cols, H, H) + 3 * Cols * H + 2 * Edges * N * H;
  // Per summary: f and its ReLU over the units, the masked sum, g and its
  // ReLU over the states.
  double Summary = linearFlops(Cols, 2 * H, 2 * H) + Cols * 2 * H +
                   2 * Cols * 2 * H + linearFlops(N, 2 * H, 2 * H) + N * 2 * H;
  return linearFlops(Cols, In, H) + 2 * Hops * Hop + 3 * Summary +
         linearFlops(N, 8 * H, 8 * H) + N * 8 * H +
         linearFlops(N, 8 * H, Devices);
}

double PlacetoPolicyImpl::countBackwardFlops(int64_t States,
                                             const UnitGraph &G) const {
  // Each product twice (the gradients of its input and of its weights),
  // the first layer's once; each ReLU, mask and accumulation once per
  // element; the sums over the edges once more.
  double N = States, U = G.NumUnits, Cols = U * N, H = Width;
  double Edges = G.Parents.size();
  // Per hop: f and g; the accumulation into Self, the neighbour mask and
  // the two ReLUs; the sum over the reversed edges.
  double Hop = 8 * Cols * H * H + 4 * Cols * H + 2 * Edges * N * H;
  // Per summary: f over the units; its ReLU, the pooling mask and the
  // accumulation into the embedding; g over the states and its ReLU.
  double Summary =
      16 * Cols * H * H + 6 * Cols * H + 16 * N * H * H + 2 * N * H;
  double Head = 256 * N * H * H + 8 * N * H + 32 * N * H * Devices;
  return 2 * Cols * In * H + Cols * H + 2 * Hops * Hop + 3 * Summary + Head;
}

//===----------------------------------------------------------------------===//
// The operator form
//===----------------------------------------------------------------------===//

torch::Tensor PlacetoPolicyImpl::propagate(const torch::Tensor &Self,
                                           const torch::Tensor &A,
                                           const torch::Tensor &Has,
                                           Aggregator &Agg) {
  int64_t U = Self.size(0), N = Self.size(1), H = Self.size(2);
  torch::Tensor X = Self;
  for (int64_t K = 0; K != Hops; ++K) {
    torch::Tensor Messages =
        torch::relu(Agg->F->forward(X)).reshape({U, N * H});
    torch::Tensor Sums = torch::mm(A, Messages).view({U, N, H});
    X = torch::addcmul(Self, torch::relu(Agg->G->forward(Sums)), Has);
  }
  return X;
}

torch::Tensor PlacetoPolicyImpl::forwardOperators(const torch::Tensor &X,
                                                  const UnitGraph &G,
                                                  const torch::Tensor &Current,
                                                  const torch::Tensor &Pools) {
  int64_t N = X.size(1);
  torch::Tensor Self = NodeTransform->forward(X);
  torch::Tensor Emb = torch::cat({propagate(Self, G.Down, G.HasParents, Down),
                                  propagate(Self, G.Up, G.HasChildren, Up)},
                                 2); // [U, N, 2H]
  Aggregator *Pooled[] = {&Parents, &Children, &Parallel};
  std::vector<torch::Tensor> Parts;
  for (int64_t K = 0; K != 3; ++K) {
    // [N, 1, U] x [N, U, 2H]: each state sums over its own set.
    torch::Tensor F =
        torch::relu((*Pooled[K])->F->forward(Emb)).transpose(0, 1);
    torch::Tensor Sum = torch::bmm(Pools[K].unsqueeze(1), F).squeeze(1);
    Parts.push_back(torch::relu((*Pooled[K])->G->forward(Sum)));
  }
  Parts.push_back(Emb.index({Current, torch::arange(N)}));
  return Output->forward(
      torch::relu(Classifier->forward(torch::cat(Parts, 1))));
}

} // namespace learn
} // namespace dp

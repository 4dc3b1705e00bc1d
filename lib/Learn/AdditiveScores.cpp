//===- AdditiveScores.cpp - The attention's v . tanh(k + q) ---------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "AdditiveScores.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cassert>
#include <iterator>

#if defined(__x86_64__)
#include <immintrin.h>
#define DP_VECTOR_SCORES 1
/// The portable loops' clones: AVX2 where the CPU has it, else SSE2.
#define DP_PORTABLE_CLONES                                                     \
  __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define DP_VECTOR_SCORES 0
#define DP_PORTABLE_CLONES
#endif

namespace dp {
namespace learn {

namespace {

//===----------------------------------------------------------------------===//
// Portable
//===----------------------------------------------------------------------===//

DP_PORTABLE_CLONES void scoresPortable(const float *K, const float *Q,
                                       const float *V, float *S, int64_t B,
                                       int64_t N, int64_t Ls, int64_t H) {
  for (int64_t I = 0; I != B; ++I) {
    const float *Kb = K + (N == 1 ? 0 : I * Ls * H), *Qb = Q + I * H;
    for (int64_t J = 0; J != Ls; ++J) {
      const float *Kj = Kb + J * H;
      float Acc = 0;
#pragma omp simd reduction(+ : Acc)
      for (int64_t L = 0; L < H; ++L)
        Acc += V[L] * tanhApprox(Kj[L] + Qb[L]);
      S[I * Ls + J] = Acc;
    }
  }
}

DP_PORTABLE_CLONES void scoresBackwardPortable(const float *K, const float *Q,
                                               const float *V, const float *DS,
                                               float *DV, float *DK, float *DQ,
                                               int64_t B, int64_t N, int64_t Ls,
                                               int64_t H) {
  for (int64_t I = 0; I != B; ++I) {
    const float *Kb = K + (N == 1 ? 0 : I * Ls * H), *Qb = Q + I * H;
    float *DKb = DK + (N == 1 ? 0 : I * Ls * H), *DQb = DQ + I * H;
    std::fill(DQb, DQb + H, 0.0f);
    for (int64_t J = 0; J != Ls; ++J) {
      const float *Kj = Kb + J * H;
      float *DKj = DKb + J * H, D = DS[I * Ls + J];
#pragma omp simd
      for (int64_t L = 0; L < H; ++L) {
        float E = tanhApprox(Kj[L] + Qb[L]);
        float P = D * V[L] * (1 - E * E);
        DV[L] += D * E;
        DKj[L] += P;
        DQb[L] += P;
      }
    }
  }
}

#if DP_VECTOR_SCORES

//===----------------------------------------------------------------------===//
// AVX-512
//===----------------------------------------------------------------------===//

#define DP_AVX512 __attribute__((target("avx512f")))

// GCC 12 warns that the placeholder operand of AVX-512 intrinsics
// (_mm512_undefined_ps() and the like, initialized from themselves by
// design) is or may be used uninitialized once they are inlined; it is
// never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

/// Independent tanh chains advanced together, a step of each at a time:
/// one tanh of 16 lanes is ~25 dependent operations (~65 cycles), and the
/// core hides that latency only if it sees several chains at once.
constexpr int Chains = 4;

/// tanh on Chains x 16 lanes, in place: tanhApprox()'s formula with the
/// sign kept instead of taken apart (t = e^{-2x} for x clamped to [-9, 9],
/// whose quotient (1 - t) / (1 + t) is as accurate on either side), the
/// argument reduction's remainder by one fused multiply-add, and the
/// quotient the reciprocal estimate's (relative error < 2^-14) refined by
/// one Newton step on the quotient itself: to within 2.5e-7.
DP_AVX512 inline void tanh16(__m512 (&X)[Chains]) {
  using namespace tanh_const;
  const __m512 One = _mm512_set1_ps(1.0f);
  const __m512 Rounder = _mm512_set1_ps(Round);
  __m512 U[Chains], P[Chains];
  __m512i Exp[Chains];
  __mmask16 IsNaN[Chains];
  for (int C = 0; C != Chains; ++C) {
    // A NaN's exponent field plus n can be a number: NaN lanes keep their
    // argument (as in tanhApprox()).
    IsNaN[C] = _mm512_cmp_ps_mask(X[C], X[C], _CMP_UNORD_Q);
    __m512 A = _mm512_max_ps(_mm512_set1_ps(-Clamp),
                             _mm512_min_ps(_mm512_set1_ps(Clamp), X[C]));
    // n = round(-2 log2(e) x), in R's low bits; u = -2x - n ln 2.
    __m512 R = _mm512_fmadd_ps(A, _mm512_set1_ps(MinusTwoLog2E), Rounder);
    __m512 N = _mm512_sub_ps(R, Rounder);
    // n << 23: R's exponent and leading mantissa bits shift out.
    Exp[C] = _mm512_slli_epi32(_mm512_castps_si512(R), 23);
    U[C] = _mm512_fnmadd_ps(N, _mm512_set1_ps(Ln2),
                            _mm512_mul_ps(A, _mm512_set1_ps(-2.0f)));
    P[C] = _mm512_set1_ps(Poly[0]);
  }
  for (size_t K = 1; K != std::size(Poly); ++K)
    for (int C = 0; C != Chains; ++C)
      P[C] = _mm512_fmadd_ps(P[C], U[C], _mm512_set1_ps(Poly[K]));
  for (int C = 0; C != Chains; ++C) {
    // t = 2^n P: n (in [-26, 26]) added to P's exponent field.
    __m512 T = _mm512_castsi512_ps(
        _mm512_add_epi32(_mm512_castps_si512(P[C]), Exp[C]));
    __m512 Num = _mm512_sub_ps(One, T), Den = _mm512_add_ps(One, T);
    __m512 Rcp = _mm512_rcp14_ps(Den);
    __m512 Y0 = _mm512_mul_ps(Num, Rcp);
    X[C] = _mm512_mask_mov_ps(
        _mm512_fmadd_ps(_mm512_fnmadd_ps(Den, Y0, Num), Rcp, Y0), IsNaN[C],
        X[C]);
  }
}

/// The lanes of [L, H) that a 16-lane step at L covers.
inline __mmask16 laneMask(int64_t L, int64_t H) {
  return H - L >= 16 ? __mmask16(0xffff) : __mmask16((1u << (H - L)) - 1);
}

/// Chains keys at a time (fewer at the end, their rows repeated and their
/// sums dropped); the partial 16 lanes at the end of h are masked (their
/// v reads as 0).
DP_AVX512 void scoresAvx512(const float *K, const float *Q, const float *V,
                            float *S, int64_t B, int64_t N, int64_t Ls,
                            int64_t H) {
  for (int64_t I = 0; I != B; ++I) {
    const float *Kb = K + (N == 1 ? 0 : I * Ls * H), *Qb = Q + I * H;
    for (int64_t J = 0; J < Ls; J += Chains) {
      const float *Kj[Chains];
      for (int C = 0; C != Chains; ++C)
        Kj[C] = Kb + std::min(J + C, Ls - 1) * H;
      __m512 Acc[Chains];
      for (int C = 0; C != Chains; ++C)
        Acc[C] = _mm512_setzero_ps();
      for (int64_t L = 0; L < H; L += 16) {
        __mmask16 M = laneMask(L, H);
        __m512 Qv = _mm512_maskz_loadu_ps(M, Qb + L);
        __m512 Vv = _mm512_maskz_loadu_ps(M, V + L);
        __m512 E[Chains];
        for (int C = 0; C != Chains; ++C)
          E[C] = _mm512_add_ps(_mm512_maskz_loadu_ps(M, Kj[C] + L), Qv);
        tanh16(E);
        for (int C = 0; C != Chains; ++C)
          Acc[C] = _mm512_fmadd_ps(Vv, E[C], Acc[C]);
      }
      for (int C = 0; C != Chains && J + C < Ls; ++C)
        S[I * Ls + J + C] = _mm512_reduce_add_ps(Acc[C]);
    }
  }
}

/// 16 lanes of h at a time over all keys, Chains keys at a time, so that
/// v, q and the gradients of v and q stay in registers across the keys.
DP_AVX512 void scoresBackwardAvx512(const float *K, const float *Q,
                                    const float *V, const float *DS, float *DV,
                                    float *DK, float *DQ, int64_t B, int64_t N,
                                    int64_t Ls, int64_t H) {
  const __m512 One = _mm512_set1_ps(1.0f);
  for (int64_t I = 0; I != B; ++I) {
    const float *Kb = K + (N == 1 ? 0 : I * Ls * H), *Qb = Q + I * H;
    float *DKb = DK + (N == 1 ? 0 : I * Ls * H), *DQb = DQ + I * H;
    const float *Di = DS + I * Ls;
    for (int64_t L = 0; L < H; L += 16) {
      __mmask16 M = laneMask(L, H);
      __m512 Qv = _mm512_maskz_loadu_ps(M, Qb + L);
      __m512 Vv = _mm512_maskz_loadu_ps(M, V + L);
      __m512 DVv = _mm512_maskz_loadu_ps(M, DV + L);
      __m512 DQv = _mm512_setzero_ps();
      for (int64_t J = 0; J < Ls; J += Chains) {
        // Past the last key, a chain repeats it with a gradient of 0.
        __m512 E[Chains], D[Chains];
        for (int C = 0; C != Chains; ++C) {
          int64_t Jc = std::min(J + C, Ls - 1);
          D[C] = _mm512_set1_ps(J + C < Ls ? Di[Jc] : 0.0f);
          E[C] = _mm512_add_ps(_mm512_maskz_loadu_ps(M, Kb + Jc * H + L), Qv);
        }
        tanh16(E);
        for (int C = 0; C != Chains && J + C < Ls; ++C) {
          __m512 P = _mm512_mul_ps(_mm512_mul_ps(D[C], Vv),
                                   _mm512_fnmadd_ps(E[C], E[C], One));
          DVv = _mm512_fmadd_ps(D[C], E[C], DVv);
          float *DKj = DKb + (J + C) * H + L;
          _mm512_mask_storeu_ps(
              DKj, M, _mm512_add_ps(_mm512_maskz_loadu_ps(M, DKj), P));
          DQv = _mm512_add_ps(DQv, P);
        }
      }
      _mm512_mask_storeu_ps(DV + L, M, DVv);
      _mm512_mask_storeu_ps(DQb + L, M, DQv);
    }
  }
}

/// Cody and Waite's ln 2 in two parts (the first exact in 9 bits), so
/// that n ln 2 subtracts exactly for |n| < 2^15.
constexpr float Ln2Hi = 0.693359375f, Ln2Lo = -2.12194440e-4f;
constexpr float Log2E = 1.44269504088896341f;

/// e^x on 16 lanes for |x| <= 2 ScoreKeys::ExpRange: x = n ln 2 + u with
/// |u| <= ln 2 / 2, e^u by its Taylor polynomial of degree 7 (remainder <
/// 6e-9), scaled by 2^n: within 2 ulp.
DP_AVX512 inline __m512 exp16(__m512 X) {
  __m512 N = _mm512_roundscale_ps(_mm512_mul_ps(X, _mm512_set1_ps(Log2E)),
                                  _MM_FROUND_TO_NEAREST_INT |
                                      _MM_FROUND_NO_EXC);
  __m512 U = _mm512_fnmadd_ps(N, _mm512_set1_ps(Ln2Hi), X);
  U = _mm512_fnmadd_ps(N, _mm512_set1_ps(Ln2Lo), U);
  __m512 P = _mm512_set1_ps(1.0f / 5040);
  for (float C : {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 1.0f / 2, 1.0f,
                  1.0f})
    P = _mm512_fmadd_ps(P, U, _mm512_set1_ps(C));
  return _mm512_scalef_ps(P, N);
}

/// e^{-2x} of \p Count floats (masked tail).
DP_AVX512 void expMinusTwo(const float *X, float *Y, int64_t Count) {
  for (int64_t L = 0; L < Count; L += 16) {
    __mmask16 M = laneMask(L, Count);
    _mm512_mask_storeu_ps(
        Y + L, M,
        exp16(_mm512_mul_ps(_mm512_maskz_loadu_ps(M, X + L),
                            _mm512_set1_ps(-2.0f))));
  }
}

/// Whether every |x| of \p Count floats is at most ScoreKeys::ExpRange.
DP_AVX512 bool inExpRange(const float *X, int64_t Count) {
  __m512 Max = _mm512_setzero_ps();
  for (int64_t L = 0; L < Count; L += 16)
    Max = _mm512_max_ps(
        Max, _mm512_abs_ps(_mm512_maskz_loadu_ps(laneMask(L, Count), X + L)));
  // max() may drop a NaN, which then goes to the product form: its
  // scores are NaN, as the other loops' are.
  return _mm512_reduce_max_ps(Max) <= ScoreKeys::ExpRange;
}

/// r = 1 / (1 + e^{-2k} e^{-2q}) from the two exponentials, so that
/// tanh(k + q) = 2r - 1: the reciprocal estimate refined by one Newton
/// step.
DP_AVX512 inline __m512 halfPlusHalfTanh(__m512 ExpK, __m512 ExpQ) {
  const __m512 One = _mm512_set1_ps(1.0f);
  __m512 Den = _mm512_fmadd_ps(ExpK, ExpQ, One);
  __m512 R = _mm512_rcp14_ps(Den);
  return _mm512_fmadd_ps(R, _mm512_fnmadd_ps(Den, R, One), R);
}

/// The product form's queries that share their keys are scored together,
/// up to this many at a time: each key's exponentials are loaded once for
/// all of them, and their chains add to the four keys' independent work.
constexpr int MaxGroup = 4;

/// The scores of G queries (their e^{-2q} rows EQ[g], [H] each; their
/// scores S[g], [Ls] each) by the product form: v . tanh = 2 (v . r) -
/// sum(v).
template <int G>
DP_AVX512 void scoresProduct(const float *EK, const float *const *EQ,
                             const float *V, float *const *S, int64_t Ls,
                             int64_t H) {
  __m512 SumV = _mm512_setzero_ps();
  for (int64_t L = 0; L < H; L += 16)
    SumV = _mm512_add_ps(SumV, _mm512_maskz_loadu_ps(laneMask(L, H), V + L));
  float SumVs = _mm512_reduce_add_ps(SumV);
  for (int64_t J = 0; J < Ls; J += Chains) {
    const float *Kj[Chains];
    for (int C = 0; C != Chains; ++C)
      Kj[C] = EK + std::min(J + C, Ls - 1) * H;
    __m512 Acc[G][Chains];
    for (int Q = 0; Q != G; ++Q)
      for (int C = 0; C != Chains; ++C)
        Acc[Q][C] = _mm512_setzero_ps();
    for (int64_t L = 0; L < H; L += 16) {
      __mmask16 M = laneMask(L, H);
      __m512 Vv = _mm512_maskz_loadu_ps(M, V + L);
      __m512 Ek[Chains];
      for (int C = 0; C != Chains; ++C)
        Ek[C] = _mm512_maskz_loadu_ps(M, Kj[C] + L);
      for (int Q = 0; Q != G; ++Q) {
        __m512 Qv = _mm512_maskz_loadu_ps(M, EQ[Q] + L);
        for (int C = 0; C != Chains; ++C)
          Acc[Q][C] =
              _mm512_fmadd_ps(Vv, halfPlusHalfTanh(Ek[C], Qv), Acc[Q][C]);
      }
    }
    for (int Q = 0; Q != G; ++Q)
      for (int C = 0; C != Chains && J + C < Ls; ++C)
        S[Q][J + C] = 2 * _mm512_reduce_add_ps(Acc[Q][C]) - SumVs;
  }
}

/// The backward pass of G queries sharing their keys by the product form
/// (DS[g] and DQ[g] their rows): with r as above, dtanh = 1 - tanh^2 =
/// 4 r (1 - r), so with w = r - r^2 the key j gains 4v sum_g ds_gj w_gj,
/// the query g gets 4v sum_j ds_gj w_gj, and v gains 2 sum_j ds_gj r_gj -
/// sum_j ds_gj; the products with 4v are taken once per key and query.
template <int G>
DP_AVX512 void scoresBackwardProduct(const float *EK, const float *const *EQ,
                                     const float *V, const float *const *DS,
                                     float *DV, float *DK, float *const *DQ,
                                     int64_t Ls, int64_t H) {
  float SumD[G];
  for (int Q = 0; Q != G; ++Q) {
    SumD[Q] = 0;
    for (int64_t J = 0; J != Ls; ++J)
      SumD[Q] += DS[Q][J];
  }
  for (int64_t L = 0; L < H; L += 16) {
    __mmask16 M = laneMask(L, H);
    __m512 V4 =
        _mm512_mul_ps(_mm512_maskz_loadu_ps(M, V + L), _mm512_set1_ps(4.0f));
    __m512 Qv[G], DR[G], DQw[G];
    for (int Q = 0; Q != G; ++Q) {
      Qv[Q] = _mm512_maskz_loadu_ps(M, EQ[Q] + L);
      DR[Q] = DQw[Q] = _mm512_setzero_ps();
    }
    for (int64_t J = 0; J < Ls; J += Chains) {
      // Past the last key, a chain repeats it with a gradient of 0.
      __m512 Ek[Chains], Acc[Chains];
      for (int C = 0; C != Chains; ++C) {
        Ek[C] = _mm512_maskz_loadu_ps(M, EK + std::min(J + C, Ls - 1) * H + L);
        Acc[C] = _mm512_setzero_ps();
      }
      for (int Q = 0; Q != G; ++Q)
        for (int C = 0; C != Chains; ++C) {
          __m512 D =
              _mm512_set1_ps(J + C < Ls ? DS[Q][std::min(J + C, Ls - 1)] : 0);
          __m512 R = halfPlusHalfTanh(Ek[C], Qv[Q]);
          __m512 W = _mm512_fnmadd_ps(R, R, R);
          Acc[C] = _mm512_fmadd_ps(D, W, Acc[C]);
          DQw[Q] = _mm512_fmadd_ps(D, W, DQw[Q]);
          DR[Q] = _mm512_fmadd_ps(D, R, DR[Q]);
        }
      for (int C = 0; C != Chains && J + C < Ls; ++C) {
        float *DKj = DK + (J + C) * H + L;
        _mm512_mask_storeu_ps(
            DKj, M, _mm512_fmadd_ps(V4, Acc[C], _mm512_maskz_loadu_ps(M, DKj)));
      }
    }
    __m512 DVv = _mm512_maskz_loadu_ps(M, DV + L);
    for (int Q = 0; Q != G; ++Q) {
      DVv = _mm512_add_ps(DVv, _mm512_fmsub_ps(DR[Q], _mm512_set1_ps(2.0f),
                                               _mm512_set1_ps(SumD[Q])));
      _mm512_mask_storeu_ps(DQ[Q] + L, M, _mm512_mul_ps(V4, DQw[Q]));
    }
    _mm512_mask_storeu_ps(DV + L, M, DVv);
  }
}

/// Runs \p F<G>(...) for G = \p Size (1 to MaxGroup).
template <template <int> class F, typename... Args>
DP_AVX512 void forGroup(int Size, Args... A) {
  switch (Size) {
  case 1:
    return F<1>::run(A...);
  case 2:
    return F<2>::run(A...);
  case 3:
    return F<3>::run(A...);
  default:
    return F<4>::run(A...);
  }
}
template <int G> struct ScoresGroup {
  DP_AVX512 static void run(const float *EK, const float *const *EQ,
                            const float *V, float *const *S, int64_t Ls,
                            int64_t H) {
    scoresProduct<G>(EK, EQ, V, S, Ls, H);
  }
};
template <int G> struct BackwardGroup {
  DP_AVX512 static void run(const float *EK, const float *const *EQ,
                            const float *V, const float *const *DS, float *DV,
                            float *DK, float *const *DQ, int64_t Ls,
                            int64_t H) {
    scoresBackwardProduct<G>(EK, EQ, V, DS, DV, DK, DQ, Ls, H);
  }
};

#pragma GCC diagnostic pop

#endif // DP_VECTOR_SCORES

bool useVector(ScoreKernel Kernel) {
  return Kernel != ScoreKernel::Portable && hasVectorScores();
}

} // namespace

bool hasVectorScores() {
#if DP_VECTOR_SCORES
  static const bool Has = __builtin_cpu_supports("avx512f");
  return Has;
#else
  return false;
#endif
}

ScoreKeys::ScoreKeys(const float *K, int64_t N, int64_t Ls, int64_t H,
                     ScoreKernel Kernel)
    : K(K), N(N), Ls(Ls), H(H), Kernel(Kernel) {
#if DP_VECTOR_SCORES
  if (Kernel == ScoreKernel::Best && hasVectorScores() &&
      inExpRange(K, N * Ls * H)) {
    Exp.resize(N * Ls * H);
    expMinusTwo(K, Exp.data(), N * Ls * H);
  }
#endif
}

#if DP_VECTOR_SCORES
namespace {
/// The queries of \p Q [B, H] that the product form can take (every one
/// within ScoreKeys::ExpRange, when \p Keys has its exponentials), their
/// e^{-2q} rows in \p EQ; the others, for the tanh loop, in \p Rest.
void splitQueries(const ScoreKeys &Keys, const float *Q, int64_t B,
                  llvm::SmallVectorImpl<int64_t> &Product,
                  llvm::SmallVectorImpl<int64_t> &Rest,
                  llvm::SmallVectorImpl<float> &EQ) {
  int64_t H = Keys.width();
  EQ.resize(B * H);
  for (int64_t I = 0; I != B; ++I) {
    if (Keys.expKeys() && inExpRange(Q + I * H, H)) {
      expMinusTwo(Q + I * H, EQ.data() + I * H, H);
      Product.push_back(I);
    } else {
      Rest.push_back(I);
    }
  }
}

/// Scores the queries of \p Q [B, H] by the vector kernels: \p Alone(I,
/// Set) for each query the tanh loop takes, with its set of keys, then
/// \p Together(Group, Set, EQ) for those the product form takes, in groups
/// that share a set of keys: up to MaxGroup at once when every query reads
/// set 0, else one at a time with its own set. EQ holds their e^{-2q}
/// rows, query I's at EQ + I * H.
template <typename AloneFn, typename TogetherFn>
void forEachQuery(const ScoreKeys &Keys, const float *Q, int64_t B,
                  AloneFn Alone, TogetherFn Together) {
  llvm::SmallVector<int64_t, 32> Product, Rest;
  llvm::SmallVector<float, 2560> EQ;
  splitQueries(Keys, Q, B, Product, Rest, EQ);
  bool Shared = Keys.sets() == 1;
  for (int64_t I : Rest)
    Alone(I, Shared ? 0 : I);
  size_t Step = Shared ? MaxGroup : 1;
  for (size_t First = 0; First < Product.size(); First += Step) {
    size_t Count = std::min(Step, Product.size() - First);
    Together(llvm::ArrayRef<int64_t>(Product).slice(First, Count),
             Shared ? 0 : Product[First], EQ.data());
  }
}

void scoresVector(const ScoreKeys &Keys, const float *Q, const float *V,
                  float *S, int64_t B) {
  const float *K = Keys.keys();
  int64_t Ls = Keys.numKeys(), H = Keys.width();
  forEachQuery(
      Keys, Q, B,
      [&](int64_t I, int64_t Set) {
        scoresAvx512(K + Set * Ls * H, Q + I * H, V, S + I * Ls, 1, 1, Ls, H);
      },
      [&](llvm::ArrayRef<int64_t> Group, int64_t Set, const float *EQ) {
        const float *EQs[MaxGroup];
        float *Ss[MaxGroup];
        for (size_t G = 0; G != Group.size(); ++G) {
          EQs[G] = EQ + Group[G] * H;
          Ss[G] = S + Group[G] * Ls;
        }
        forGroup<ScoresGroup>(Group.size(), Keys.expKeys() + Set * Ls * H,
                              (const float *const *)EQs, V, (float *const *)Ss,
                              Ls, H);
      });
}

void scoresBackwardVector(const ScoreKeys &Keys, const float *Q, const float *V,
                          const float *DS, float *DV, float *DK, float *DQ,
                          int64_t B) {
  const float *K = Keys.keys();
  int64_t Ls = Keys.numKeys(), H = Keys.width();
  forEachQuery(
      Keys, Q, B,
      [&](int64_t I, int64_t Set) {
        scoresBackwardAvx512(K + Set * Ls * H, Q + I * H, V, DS + I * Ls, DV,
                             DK + Set * Ls * H, DQ + I * H, 1, 1, Ls, H);
      },
      [&](llvm::ArrayRef<int64_t> Group, int64_t Set, const float *EQ) {
        const float *EQs[MaxGroup], *DSs[MaxGroup];
        float *DQs[MaxGroup];
        for (size_t G = 0; G != Group.size(); ++G) {
          EQs[G] = EQ + Group[G] * H;
          DSs[G] = DS + Group[G] * Ls;
          DQs[G] = DQ + Group[G] * H;
        }
        forGroup<BackwardGroup>(Group.size(), Keys.expKeys() + Set * Ls * H,
                                (const float *const *)EQs, V,
                                (const float *const *)DSs, DV,
                                DK + Set * Ls * H, (float *const *)DQs, Ls, H);
      });
}
} // namespace
#endif

void additiveScores(const ScoreKeys &Keys, const float *Q, const float *V,
                    float *S, int64_t B) {
  int64_t N = Keys.sets();
  assert((N == 1 || N == B) && "one set of keys, or one per query");
#if DP_VECTOR_SCORES
  if (useVector(Keys.kernel()))
    return scoresVector(Keys, Q, V, S, B);
#endif
  scoresPortable(Keys.keys(), Q, V, S, B, N, Keys.numKeys(), Keys.width());
}

void additiveScoresBackward(const ScoreKeys &Keys, const float *Q,
                            const float *V, const float *DS, float *DV,
                            float *DK, float *DQ, int64_t B) {
  int64_t N = Keys.sets();
  assert((N == 1 || N == B) && "one set of keys, or one per query");
#if DP_VECTOR_SCORES
  if (useVector(Keys.kernel()))
    return scoresBackwardVector(Keys, Q, V, DS, DV, DK, DQ, B);
#endif
  scoresBackwardPortable(Keys.keys(), Q, V, DS, DV, DK, DQ, B, N,
                         Keys.numKeys(), Keys.width());
}

void additiveScores(const float *K, const float *Q, const float *V, float *S,
                    int64_t B, int64_t N, int64_t Ls, int64_t H,
                    ScoreKernel Kernel) {
  additiveScores(ScoreKeys(K, N, Ls, H, Kernel), Q, V, S, B);
}

void additiveScoresBackward(const float *K, const float *Q, const float *V,
                            const float *DS, float *DV, float *DK, float *DQ,
                            int64_t B, int64_t N, int64_t Ls, int64_t H,
                            ScoreKernel Kernel) {
  additiveScoresBackward(ScoreKeys(K, N, Ls, H, Kernel), Q, V, DS, DV, DK, DQ,
                         B);
}

} // namespace learn
} // namespace dp

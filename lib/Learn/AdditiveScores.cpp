//===- AdditiveScores.cpp - The attention's v . tanh(k + q) ---------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "AdditiveScores.h"

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
// (_mm512_undefined_ps(), initialized from itself by design) may be used
// uninitialized once they are inlined; it is never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

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
  for (int C = 0; C != Chains; ++C) {
    __m512 A = _mm512_max_ps(_mm512_min_ps(X[C], _mm512_set1_ps(Clamp)),
                             _mm512_set1_ps(-Clamp));
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
    X[C] = _mm512_fmadd_ps(_mm512_fnmadd_ps(Den, Y0, Num), Rcp, Y0);
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

#pragma GCC diagnostic pop

#endif // DP_VECTOR_SCORES

bool useVector(ScoreKernel Kernel) {
  return Kernel == ScoreKernel::Best && hasVectorScores();
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

void additiveScores(const float *K, const float *Q, const float *V, float *S,
                    int64_t B, int64_t N, int64_t Ls, int64_t H,
                    ScoreKernel Kernel) {
  assert((N == 1 || N == B) && "one set of keys, or one per query");
#if DP_VECTOR_SCORES
  if (useVector(Kernel))
    return scoresAvx512(K, Q, V, S, B, N, Ls, H);
#endif
  scoresPortable(K, Q, V, S, B, N, Ls, H);
}

void additiveScoresBackward(const float *K, const float *Q, const float *V,
                            const float *DS, float *DV, float *DK, float *DQ,
                            int64_t B, int64_t N, int64_t Ls, int64_t H,
                            ScoreKernel Kernel) {
  assert((N == 1 || N == B) && "one set of keys, or one per query");
#if DP_VECTOR_SCORES
  if (useVector(Kernel))
    return scoresBackwardAvx512(K, Q, V, DS, DV, DK, DQ, B, N, Ls, H);
#endif
  scoresBackwardPortable(K, Q, V, DS, DV, DK, DQ, B, N, Ls, H);
}

} // namespace learn
} // namespace dp

//===- AdditiveScores.h - The attention's v . tanh(k + q) -------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Bahdanau's additive attention scores every key j against a query q as
/// v . tanh(k_j + q). The fused recurrence (Recurrence.h) does so at every
/// decoding step, for every placement drawn and every key of the segment,
/// forward and (recomputing the tanh) backward: at Mars's shapes it is the
/// largest share of a learned placer's run (bench/README.md, "Whole placer
/// runs"). On a CPU with AVX-512 the keys of a segment are prepared once
/// (ScoreKeys: e^{-2k} of each), and a step's tanh(k + q) is then
/// 2 / (1 + e^{-2k} e^{-2q}) - 1, one multiply-add and a reciprocal
/// estimate refined by one Newton step per element, four keys at a time,
/// 16 lanes, masked tails (3.8-5.2x the portable loop at Mars's shapes,
/// dp-bench-learn). A query or key beyond ScoreKeys::ExpRange takes the
/// AVX-512 loop that evaluates every tanh (four keys' tanh chains advanced
/// together so that the core overlaps their latency); a CPU without
/// AVX-512 the portable loop, which the compiler vectorizes (AVX2 where
/// the CPU has it). All three are tested against the C library's tanh and
/// libtorch's autograd. Their roundings differ, so a search's trajectory
/// on a CPU with AVX-512 differs from one without. Host float32 only. Only
/// lib/Learn and its tests and benchmarks include this header.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_LEARN_ADDITIVESCORES_H
#define DP_LIB_LEARN_ADDITIVESCORES_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dp {
namespace learn {

/// The constants of tanhApprox(), which the vector kernel's tanh shares.
namespace tanh_const {
constexpr float Clamp = 9.0f;                          // tanh(9) = 1 - 3e-8
constexpr float MinusTwoLog2E = -2.88539008177792681f; // -2 log2(e)
constexpr float Round = 12582912.0f; // 1.5 * 2^23: adding it rounds
constexpr float Ln2 = 0.693147180559945309f;
/// 2^f's Taylor polynomial of degree 6 in u = f ln 2, highest degree first.
constexpr float Poly[] = {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6,
                          1.0f / 2,   1.0f,       1.0f};
} // namespace tanh_const

/// tanh(x) to within 2e-7 (absolute), as (1 - t) / (1 + t) with t =
/// e^{-2|x|} = 2^n 2^f: n by rounding, 2^f on [-1/2, 1/2] by its Taylor
/// polynomial of degree 6 in f ln 2 (remainder < 2e-7). Branch-free, so
/// that loops of it vectorize; libtorch's (SLEEF's 1-ulp tanh) costs four
/// times as much.
inline float tanhApprox(float X) {
  using namespace tanh_const;
  float A = std::min(__builtin_fabsf(X), Clamp);
  float Z = A * MinusTwoLog2E;
  float R = Z + Round, N = R - Round;
  // n's bits in unsigned arithmetic, which wraps: a NaN's R is no integer,
  // and signed arithmetic on its bits would overflow.
  uint32_t Exp =
      __builtin_bit_cast(uint32_t, R) - __builtin_bit_cast(uint32_t, Round);
  float U = (Z - N) * Ln2;
  float P =
      Poly[6] +
      U * (Poly[5] +
           U * (Poly[4] +
                U * (Poly[3] + U * (Poly[2] + U * (Poly[1] + U * Poly[0])))));
  // 2^n P: n added to P's exponent field (n is in [-13, 0]; modulo 2^32,
  // n 2^23 is Exp << 23).
  float T = __builtin_bit_cast(float, __builtin_bit_cast(uint32_t, P) +
                                          (Exp << 23));
  float Y = (1 - T) / (1 + T);
  float S = __builtin_bit_cast(
      float, __builtin_bit_cast(uint32_t, Y) |
                 (__builtin_bit_cast(uint32_t, X) & 0x80000000u));
  // A NaN's exponent field plus n can be a number: the NaN is kept by a
  // select, which vectorizes as a blend.
  return X != X ? X : S;
}

/// Which loop computes the scores: the best this CPU has, the AVX-512
/// loop that evaluates every tanh (the best one's fallback, kept for tests
/// and benchmarks), or the portable one.
enum class ScoreKernel { Best, Tanh, Portable };

/// Whether ScoreKernel::Best is a vector kernel on this CPU.
bool hasVectorScores();

/// Keys K [N, Ls, H] (N = 1: shared by every query; else one set per
/// query), prepared once for the many steps that score queries against
/// them. With the best kernel on a CPU with AVX-512 it holds e^{-2k} of
/// every key, so that a step's tanh(k + q) = 2 / (1 + e^{-2k} e^{-2q}) - 1
/// is one multiply-add and a refined reciprocal per element, the query's
/// exponentials taken once per query instead of one per key (within 2.5e-7
/// like the tanh loop; both exponentials stay within float's normal range
/// while |k| and |q| are at most ExpRange, beyond which a query falls back
/// to the tanh loop). Keeps a pointer to K: K must outlive it.
class ScoreKeys {
public:
  static constexpr float ExpRange = 20.0f;
  ScoreKeys(const float *K, int64_t N, int64_t Ls, int64_t H,
            ScoreKernel Kernel = ScoreKernel::Best);

  const float *keys() const { return K; }
  int64_t sets() const { return N; }
  int64_t numKeys() const { return Ls; }
  int64_t width() const { return H; }
  ScoreKernel kernel() const { return Kernel; }
  /// e^{-2k} of every key; null when the product form is not used (another
  /// kernel, or a key outside ExpRange).
  const float *expKeys() const { return Exp.empty() ? nullptr : Exp.data(); }

private:
  const float *K;
  int64_t N, Ls, H;
  ScoreKernel Kernel;
  std::vector<float> Exp;
};

/// S[b, j] = v . tanh(K[b, j] + Q[b]) for B queries Q [B, H] over \p K's
/// keys (B sets of them, or one shared), v [H].
void additiveScores(const ScoreKeys &K, const float *Q, const float *V,
                    float *S, int64_t B);

/// additiveScores() backward from the scores' gradients \p DS [B, Ls]:
/// adds to \p DV [H] and \p DK [N, Ls, H]; sets \p DQ [B, H]. Recomputes
/// the tanh.
void additiveScoresBackward(const ScoreKeys &K, const float *Q, const float *V,
                            const float *DS, float *DV, float *DK, float *DQ,
                            int64_t B);

/// The same for keys used once (prepared for this call).
void additiveScores(const float *K, const float *Q, const float *V, float *S,
                    int64_t B, int64_t N, int64_t Ls, int64_t H,
                    ScoreKernel Kernel = ScoreKernel::Best);
void additiveScoresBackward(const float *K, const float *Q, const float *V,
                            const float *DS, float *DV, float *DK, float *DQ,
                            int64_t B, int64_t N, int64_t Ls, int64_t H,
                            ScoreKernel Kernel = ScoreKernel::Best);

} // namespace learn
} // namespace dp

#endif // DP_LIB_LEARN_ADDITIVESCORES_H

//===- HostCluster.cpp - The cluster of this machine's CPU ----------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Measures this machine's CPU for the "host" preset:
///
/// - memory bandwidth: STREAM's triad (a[i] = b[i] + s * c[i]) on every
///   hardware thread over three 64 MiB arrays, larger than the last-level
///   cache of nearly every CPU, counted as STREAM counts it (24 bytes per
///   element), best of a few runs;
/// - peak f32 FLOP/s: independent fused multiply-adds in registers on every
///   hardware thread, with the widest vectors the CPU has (AVX-512, AVX2 +
///   FMA, or what the compiler makes of plain code elsewhere), best of a few
///   runs. The f64 peak is taken as half of it (same vectors, half the
///   lanes), not measured;
/// - memory capacity: the physical memory the OS reports.
///
/// The whole measurement takes about 0.1-0.2 s.
///
//===----------------------------------------------------------------------===//

#include "HostCluster.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Host.h"
#include "llvm/Support/Threading.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#if defined(LLVM_ON_UNIX)
#include <unistd.h>
#endif

#if (defined(__x86_64__) || defined(__i386__)) &&                              \
    (defined(__GNUC__) || defined(__clang__))
#define DP_HOST_X86_KERNELS 1
#include <immintrin.h>
#endif

using namespace llvm;

namespace dp {

using Clock = std::chrono::steady_clock;

/// Runs \p Body(Thread) on \p NumThreads threads at once (the calling one
/// among them) and returns the wall time in seconds.
template <typename Fn>
static double timeOnThreads(unsigned NumThreads, const Fn &Body) {
  std::vector<std::thread> Threads;
  Clock::time_point Start = Clock::now();
  for (unsigned T = 1; T < NumThreads; ++T)
    Threads.emplace_back([&Body, T] { Body(T); });
  Body(0);
  for (std::thread &T : Threads)
    T.join();
  return std::chrono::duration<double>(Clock::now() - Start).count();
}

//===----------------------------------------------------------------------===//
// Memory bandwidth
//===----------------------------------------------------------------------===//

static double measureMemoryBandwidth(unsigned NumThreads) {
  constexpr size_t N = (size_t(64) << 20) / sizeof(double);
  constexpr unsigned Runs = 4;
  // Left uninitialized here: each thread first touches its own part, so
  // that on NUMA machines the pages are local to the thread using them.
  std::unique_ptr<double[]> A(new double[N]), B(new double[N]),
      C(new double[N]);
  auto Part = [&](unsigned T, size_t &Begin, size_t &End) {
    Begin = N * T / NumThreads;
    End = N * (T + 1) / NumThreads;
  };
  timeOnThreads(NumThreads, [&](unsigned T) {
    size_t Begin, End;
    Part(T, Begin, End);
    for (size_t I = Begin; I != End; ++I) {
      A[I] = 0;
      B[I] = 1;
      C[I] = 2;
    }
  });
  double Best = 0;
  for (unsigned R = 0; R != Runs; ++R) {
    double Seconds = timeOnThreads(NumThreads, [&](unsigned T) {
      size_t Begin, End;
      Part(T, Begin, End);
      double *__restrict Out = A.get();
      const double *__restrict X = B.get();
      const double *__restrict Y = C.get();
      for (size_t I = Begin; I != End; ++I)
        Out[I] = X[I] + 3.0 * Y[I];
    });
    Best = std::max(Best, 3.0 * sizeof(double) * N / Seconds);
  }
  // Keep the result observable so that the stores are not dropped.
  volatile double Sink = A[N / 2];
  (void)Sink;
  return Best;
}

//===----------------------------------------------------------------------===//
// Peak FLOP/s
//===----------------------------------------------------------------------===//

/// Independent accumulators per thread: enough to cover the latency of two
/// FMA units (4 cycles each on current x86 cores).
constexpr unsigned NumAccumulators = 10;
/// a = a * M + C converges to 1 and never underflows.
constexpr float MulConst = 0.9999f, AddConst = 1e-4f;

#ifdef DP_HOST_X86_KERNELS
__attribute__((target("avx512f"))) static float fmaLoopAVX512(uint64_t N) {
  __m512 M = _mm512_set1_ps(MulConst), C = _mm512_set1_ps(AddConst);
  __m512 A[NumAccumulators];
  for (unsigned K = 0; K != NumAccumulators; ++K)
    A[K] = _mm512_set1_ps(float(K));
  for (uint64_t I = 0; I != N; ++I)
    for (unsigned K = 0; K != NumAccumulators; ++K)
      A[K] = _mm512_fmadd_ps(A[K], M, C);
  alignas(64) float Lanes[16];
  float Sum = 0;
  for (unsigned K = 0; K != NumAccumulators; ++K) {
    _mm512_store_ps(Lanes, A[K]);
    for (float L : Lanes)
      Sum += L;
  }
  return Sum;
}

__attribute__((target("avx2,fma"))) static float fmaLoopAVX2(uint64_t N) {
  __m256 M = _mm256_set1_ps(MulConst), C = _mm256_set1_ps(AddConst);
  __m256 A[NumAccumulators];
  for (unsigned K = 0; K != NumAccumulators; ++K)
    A[K] = _mm256_set1_ps(float(K));
  for (uint64_t I = 0; I != N; ++I)
    for (unsigned K = 0; K != NumAccumulators; ++K)
      A[K] = _mm256_fmadd_ps(A[K], M, C);
  alignas(32) float Lanes[8];
  float Sum = 0;
  for (unsigned K = 0; K != NumAccumulators; ++K) {
    _mm256_store_ps(Lanes, A[K]);
    for (float L : Lanes)
      Sum += L;
  }
  return Sum;
}
#endif

/// Plain code, vectorized as the compiler's baseline target allows.
static float fmaLoopGeneric(uint64_t N) {
  constexpr unsigned Width = 8;
  float A[NumAccumulators][Width];
  for (unsigned K = 0; K != NumAccumulators; ++K)
    for (unsigned L = 0; L != Width; ++L)
      A[K][L] = float(K);
  for (uint64_t I = 0; I != N; ++I)
    for (unsigned K = 0; K != NumAccumulators; ++K)
      for (unsigned L = 0; L != Width; ++L)
        A[K][L] = A[K][L] * MulConst + AddConst;
  float Sum = 0;
  for (unsigned K = 0; K != NumAccumulators; ++K)
    for (unsigned L = 0; L != Width; ++L)
      Sum += A[K][L];
  return Sum;
}

namespace {
struct FmaKernel {
  float (*Loop)(uint64_t);
  /// f32 lanes per accumulator.
  unsigned Width;
};
} // namespace

static FmaKernel selectFmaKernel() {
#ifdef DP_HOST_X86_KERNELS
  StringMap<bool> Features;
  if (sys::getHostCPUFeatures(Features)) {
    if (Features.lookup("avx512f"))
      return {fmaLoopAVX512, 16};
    if (Features.lookup("avx2") && Features.lookup("fma"))
      return {fmaLoopAVX2, 8};
  }
#endif
  return {fmaLoopGeneric, 8};
}

static double measurePeakFlops(unsigned NumThreads) {
  FmaKernel Kernel = selectFmaKernel();
  double FlopsPerIteration = 2.0 * NumAccumulators * Kernel.Width;
  std::vector<float> Sinks(NumThreads);
  auto Run = [&](uint64_t N) {
    return timeOnThreads(NumThreads,
                         [&](unsigned T) { Sinks[T] = Kernel.Loop(N); });
  };
  // Size the runs to about 20 ms from a short one.
  uint64_t N = 1 << 14;
  double Seconds = Run(N);
  N = std::max<uint64_t>(N, uint64_t(N * 0.02 / std::max(Seconds, 1e-6)));
  double Best = 0;
  for (unsigned R = 0; R != 3; ++R)
    Best = std::max(Best, N * FlopsPerIteration * NumThreads / Run(N));
  volatile float Sink = Sinks[0];
  (void)Sink;
  return Best;
}

//===----------------------------------------------------------------------===//
// The preset
//===----------------------------------------------------------------------===//

static uint64_t getPhysicalMemoryBytes() {
#if defined(LLVM_ON_UNIX) && defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  long Pages = sysconf(_SC_PHYS_PAGES);
  long PageSize = sysconf(_SC_PAGESIZE);
  if (Pages > 0 && PageSize > 0)
    return uint64_t(Pages) * uint64_t(PageSize);
#endif
  return 0;
}

Expected<Cluster> getHostCluster() {
  unsigned NumThreads =
      std::max(1u, hardware_concurrency().compute_thread_count());
  DeviceType T;
  T.Name = "host-cpu";
  T.Kind = DeviceKind::CPU;
  double F32 = measurePeakFlops(NumThreads);
  T.PeakFlops[unsigned(DTypeKind::F32)] = F32;
  T.PeakFlops[unsigned(DTypeKind::F64)] = F32 / 2;
  T.MemoryBandwidth = measureMemoryBandwidth(NumThreads);
  T.MemoryBytes = getPhysicalMemoryBytes();
  if (!T.MemoryBytes)
    return makeError("cannot find out this machine's memory capacity for "
                     "the 'host' cluster");
  // The same per-op overhead as the CPUs of the other presets.
  T.LaunchOverhead = 1e-6;
  std::vector<Device> Devices{{"cpu:0", 0}};
  return Cluster::create("host", {std::move(T)}, std::move(Devices), {}, {});
}

} // namespace dp

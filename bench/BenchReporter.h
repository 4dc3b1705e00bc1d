//===- BenchReporter.h - Reporters that compare benchmarks ------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// A console reporter that also remembers each benchmark's seconds per
/// iteration (the median under --benchmark_repetitions), so that a
/// benchmark program can print ratios measured side by side in one run.
///
//===----------------------------------------------------------------------===//

#ifndef DP_BENCH_BENCHREPORTER_H
#define DP_BENCH_BENCHREPORTER_H

#include <benchmark/benchmark.h>

#include <map>
#include <string>

namespace dp {

class SecondsReporter : public benchmark::ConsoleReporter {
public:
  void ReportRuns(const std::vector<Run> &Runs) override {
    ConsoleReporter::ReportRuns(Runs);
    for (const Run &R : Runs) {
      if (R.error_occurred)
        continue;
      bool Median =
          R.run_type == Run::RT_Aggregate && R.aggregate_name == "median";
      if (R.run_type != Run::RT_Iteration && !Median)
        continue;
      // The function's name, then its arguments: "BM_F/0/1".
      std::string Name = R.run_name.function_name;
      if (!R.run_name.args.empty())
        Name += "/" + R.run_name.args;
      Seconds[Name] = R.real_accumulated_time / double(R.iterations);
    }
  }

protected:
  /// Seconds per iteration of \p Name, or null if it did not run.
  const double *seconds(const std::string &Name) const {
    auto It = Seconds.find(Name);
    return It == Seconds.end() ? nullptr : &It->second;
  }

private:
  std::map<std::string, double> Seconds;
};

} // namespace dp

#endif // DP_BENCH_BENCHREPORTER_H

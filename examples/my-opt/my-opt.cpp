// A driver of one's own (docs/dp-opt.md): dp-opt's command line plus a pass.
#include "dp/Driver/OptMain.h"
#include "dp/IR/Graph.h"
#include "dp/Passes/PassBuilder.h"

struct CountOpsPass {
  static llvm::StringRef name() { return "count-ops"; }
  static dp::GraphChange changes() { return dp::GraphChange::None; }
  llvm::Error run(dp::Graph &G, dp::PassContext &Ctx) {
    if (Ctx.Report)
      *Ctx.Report << "count-ops: " << G.getNumOps() << " ops\n";
    return llvm::Error::success();
  }
};

int main(int argc, char **argv) {
  llvm::cantFail(dp::registerPass<CountOpsPass>("print the number of ops"));
  return dp::optMain(argc, argv, "my-opt");
}

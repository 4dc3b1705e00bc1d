//===- CrashGuard.h - libonnx calls whose crashes are errors ----*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_IMPORT_CRASHGUARD_H
#define DP_LIB_IMPORT_CRASHGUARD_H

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/Twine.h"

#include "onnx/defs/schema.h"

#include <memory>
#include <string>

namespace dp {

/// Runs \p Fn, which calls into libonnx, so that a crash in it is caught:
/// a model that reaches one must fail the import, not the process. A crash
/// is a signal caught by llvm::CrashRecoveryContext; the frames below this
/// one are abandoned, with what they allocated. Returns the signal that
/// stopped \p Fn, or 0 when it returned. An exception passes through.
int runCatchingCrash(llvm::function_ref<void()> Fn);

/// "libonnx's <What> crashed (<signal>)", for a crash runCatchingCrash
/// caught.
std::string describeCrash(const llvm::Twine &What, int Signal);

/// ONNX's operator schemas, each with its shape inference and data
/// propagation functions run under runGuarded, and with dp's checks (see
/// getNodeCheck) run before the inference functions that are known to
/// crash on inconsistent inputs instead of failing.
class GuardedSchemaRegistry final : public onnx::ISchemaRegistry {
public:
  const onnx::OpSchema *GetSchema(const std::string &Key,
                                  const int MaxInclusiveVersion,
                                  const std::string &Domain) const override;

private:
  mutable llvm::DenseMap<const onnx::OpSchema *,
                         std::unique_ptr<onnx::OpSchema>>
      GuardedSchemas;
};

} // namespace dp

#endif // DP_LIB_IMPORT_CRASHGUARD_H

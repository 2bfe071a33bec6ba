#ifndef CFUZZER_H
#define CFUZZER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver (LLVM 12 and later), linked in by `-sanitize=fuzzer`. Declared here
/// because SwiftPM renames an executable's entry point and links `main` to it, so libFuzzer's
/// own `main` cannot be used: the Swift `main` calls the driver instead. Only referenced when
/// built with `-DAMK_FUZZ`.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif

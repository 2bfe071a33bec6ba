// CFuzzer only declares libFuzzer's driver (include/CFuzzer.h); SwiftPM needs one source file.
#include "CFuzzer.h"

// amk-bench: compares the engine with xz and pixz. Filled in by the benchmark issue.
print("amk-bench: no benchmarks yet")

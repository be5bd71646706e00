// The one source of the attnscope_test_pch target (CMakeLists.txt, Tests): CMake builds the
// precompiled header of GoogleTest, Eigen, nlohmann/json and the common std headers as part
// of this target, and every test program reuses it (target_precompile_headers REUSE_FROM).
// It has no code of its own.

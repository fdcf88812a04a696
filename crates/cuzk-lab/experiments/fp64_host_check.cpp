// The FP64 field's CPU check alone (issue 38), what CI runs: f64::mul
// against a 64-bit-limb Montgomery product on N random cases, every pair of
// edge values and chains of products; f64::madd against a word-level
// bucket. No CUDA needed:
//   g++ -std=c++17 -O2 -ffp-contract=off -o fp64_host_check fp64_host_check.cpp
//   ./fp64_host_check [N, default 100000]
#include "fp64_host.hpp"

int main(int argc, char** argv)
{
    return host_check(argc > 1 ? strtoull(argv[1], nullptr, 0) : 100000);
}

// The layouts the kernels share with the host. Each struct mirrored in src/cuda/abi.rs
// (the kernels' parameter structs in its submodules, src/cuda/abi/*_params.rs) states
// its size and every field's offset with these checks, next to its definition:
// the compiler checks the kernel side, and the Rust test
// `cuda::abi::tests::kernel_layouts_match_their_host_mirrors` reads the same lines and
// checks the Rust side, so a change to either one alone fails a build without a GPU.
//
// Every kernel takes one parameter struct (common/*_params.cuh) by value. Pointers come
// first and 4-byte fields fill whole 8-byte words, with an explicit `padding` field
// where they would not, so every byte is a field the host sets. The kernels' read-only
// loads say so with __ldg (common/read_only.cuh): NVRTC ignores __restrict__ on struct
// members.
#pragma once

// NVRTC serves no <cstddef> and NVRTC 12 knows no __builtin_offsetof: the offset is
// EDG's __INTADDR__ of the member's address in a null object, a constant expression
// in NVRTC 12 and 13.
#define ABI_SIZE(type, bytes) \
    static_assert(sizeof(type) == (bytes), #type ": size differs from its mirror in src/cuda/abi")
#define ABI_OFFSET(type, field, bytes) \
    static_assert(__INTADDR__(&((type*)0)->field) == (bytes), \
                  #type "." #field ": offset differs from its mirror in src/cuda/abi")

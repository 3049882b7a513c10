// Integer quotients of small numbers without an integer division, which costs tens of
// instructions (and, per tile or pass, a noticeable share of a kernel's issue slots).
#pragma once

// floor(a / b) for 0 <= a < 2^21 and b >= 1, exactly: (a + 0.5) / b lies at least
// 0.5 / b from an integer, and __fdividef's 2 ulp of a quotient under a / b + 1 stay
// below that while a < 2^21. The conversions are exact below 2^23.
__device__ __forceinline__ int small_quotient(int a, int b) {
    return (int)__fdividef((float)a + 0.5f, (float)b);
}

// SHA-256 compression with the x86 SHA extensions (SHA-NI), the payload hash
// of every pushed body runs here when the CPU has them. The sequence is the
// one Intel documents for these instructions ("Intel SHA Extensions", 2013):
// two rounds per sha256rnds2, the message schedule with sha256msg1/msg2. Each
// function carries its own target attribute, so the rest of the package is
// compiled for the baseline CPU and this code runs only after the check.
#include "csha256.h"

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <cpuid.h>
#include <immintrin.h>

int csha256_has_instructions(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    int sse41 = (ecx & bit_SSE4_1) != 0, ssse3 = (ecx & bit_SSSE3) != 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
    int sha = (ebx & bit_SHA) != 0;
    return sse41 && ssse3 && sha;
}

static const uint32_t round_constants[64] __attribute__((aligned(16))) = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define SHA_TARGET __attribute__((target("sha,sse4.1,ssse3")))

// Four rounds: the schedule words `msg` plus their constants, two rounds in
// each half of the register.
#define FOUR_ROUNDS(msg, index)                                                          \
    do {                                                                                 \
        __m128i sum = _mm_add_epi32((msg), _mm_load_si128((const __m128i *)&round_constants[(index)])); \
        state1 = _mm_sha256rnds2_epu32(state1, state0, sum);                             \
        state0 = _mm_sha256rnds2_epu32(state0, state1, _mm_shuffle_epi32(sum, 0x0E));    \
    } while (0)

SHA_TARGET void csha256_compress(uint32_t state[8], const uint8_t *data, size_t blocks) {
    const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    // The instructions want the state as (A, B, E, F) and (C, D, G, H).
    __m128i abcd = _mm_loadu_si128((const __m128i *)&state[0]);
    __m128i efgh = _mm_loadu_si128((const __m128i *)&state[4]);
    __m128i cdab = _mm_shuffle_epi32(abcd, 0xB1);
    __m128i ghef = _mm_shuffle_epi32(efgh, 0x1B);
    __m128i state0 = _mm_alignr_epi8(cdab, ghef, 8);   // ABEF
    __m128i state1 = _mm_blend_epi16(ghef, cdab, 0xF0); // CDGH

    for (size_t block = 0; block < blocks; block++, data += 64) {
        const __m128i saved0 = state0, saved1 = state1;
        __m128i m0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 0)), byte_swap);
        __m128i m1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16)), byte_swap);
        __m128i m2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 32)), byte_swap);
        __m128i m3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 48)), byte_swap);

        // Group g runs rounds 4g to 4g+3 on its schedule words; meanwhile the
        // next group's words are finished (msg2, from the previous two groups'
        // raw words) and the previous group's words start the one after (msg1).
        FOUR_ROUNDS(m0, 0);
        FOUR_ROUNDS(m1, 4);
        m0 = _mm_sha256msg1_epu32(m0, m1);
        FOUR_ROUNDS(m2, 8);
        m1 = _mm_sha256msg1_epu32(m1, m2);
        FOUR_ROUNDS(m3, 12);
        m0 = _mm_sha256msg2_epu32(_mm_add_epi32(m0, _mm_alignr_epi8(m3, m2, 4)), m3);
        m2 = _mm_sha256msg1_epu32(m2, m3);
        FOUR_ROUNDS(m0, 16);
        m1 = _mm_sha256msg2_epu32(_mm_add_epi32(m1, _mm_alignr_epi8(m0, m3, 4)), m0);
        m3 = _mm_sha256msg1_epu32(m3, m0);
        FOUR_ROUNDS(m1, 20);
        m2 = _mm_sha256msg2_epu32(_mm_add_epi32(m2, _mm_alignr_epi8(m1, m0, 4)), m1);
        m0 = _mm_sha256msg1_epu32(m0, m1);
        FOUR_ROUNDS(m2, 24);
        m3 = _mm_sha256msg2_epu32(_mm_add_epi32(m3, _mm_alignr_epi8(m2, m1, 4)), m2);
        m1 = _mm_sha256msg1_epu32(m1, m2);
        FOUR_ROUNDS(m3, 28);
        m0 = _mm_sha256msg2_epu32(_mm_add_epi32(m0, _mm_alignr_epi8(m3, m2, 4)), m3);
        m2 = _mm_sha256msg1_epu32(m2, m3);
        FOUR_ROUNDS(m0, 32);
        m1 = _mm_sha256msg2_epu32(_mm_add_epi32(m1, _mm_alignr_epi8(m0, m3, 4)), m0);
        m3 = _mm_sha256msg1_epu32(m3, m0);
        FOUR_ROUNDS(m1, 36);
        m2 = _mm_sha256msg2_epu32(_mm_add_epi32(m2, _mm_alignr_epi8(m1, m0, 4)), m1);
        m0 = _mm_sha256msg1_epu32(m0, m1);
        FOUR_ROUNDS(m2, 40);
        m3 = _mm_sha256msg2_epu32(_mm_add_epi32(m3, _mm_alignr_epi8(m2, m1, 4)), m2);
        m1 = _mm_sha256msg1_epu32(m1, m2);
        FOUR_ROUNDS(m3, 44);
        m0 = _mm_sha256msg2_epu32(_mm_add_epi32(m0, _mm_alignr_epi8(m3, m2, 4)), m3);
        m2 = _mm_sha256msg1_epu32(m2, m3);
        FOUR_ROUNDS(m0, 48);
        m1 = _mm_sha256msg2_epu32(_mm_add_epi32(m1, _mm_alignr_epi8(m0, m3, 4)), m0);
        m3 = _mm_sha256msg1_epu32(m3, m0);
        FOUR_ROUNDS(m1, 52);
        m2 = _mm_sha256msg2_epu32(_mm_add_epi32(m2, _mm_alignr_epi8(m1, m0, 4)), m1);
        FOUR_ROUNDS(m2, 56);
        m3 = _mm_sha256msg2_epu32(_mm_add_epi32(m3, _mm_alignr_epi8(m2, m1, 4)), m2);
        FOUR_ROUNDS(m3, 60);
        state0 = _mm_add_epi32(state0, saved0);
        state1 = _mm_add_epi32(state1, saved1);
    }

    // Back to (A, B, C, D) and (E, F, G, H).
    __m128i feba = _mm_shuffle_epi32(state0, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(state1, 0xB1);
    _mm_storeu_si128((__m128i *)&state[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)&state[4], _mm_alignr_epi8(dchg, feba, 8));
}

#else

int csha256_has_instructions(void) { return 0; }

void csha256_compress(uint32_t state[8], const uint8_t *data, size_t blocks) {
    (void)state;
    (void)data;
    (void)blocks;
}

#endif

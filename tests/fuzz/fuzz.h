/*
 * fuzz.h: helpers shared by the libFuzzer harnesses in tests/fuzz/ (each
 * fuzz_<target>.c defines LLVMFuzzerTestOneInput). A harness must never
 * leak, never touch the engine, and check the invariants its target
 * promises (a crash, a sanitizer report or an abort() is a finding).
 */
#ifndef MAFSBX_FUZZ_H
#define MAFSBX_FUZZ_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A NUL-terminated copy (malloc'd; embedded NULs end the string early). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/*
 * Split the input on the byte string "\n--\n" into at most `max` parts
 * (NUL-terminated copies in parts[]; the caller frees each). Returns the
 * number of parts (>= 1). Lets one input carry several strings while a
 * seed stays readable.
 */
static inline size_t fuzz_split(const uint8_t *data, size_t size, char **parts, size_t max)
{
	size_t n = 0, start = 0;
	for (size_t i = 0; i + 4 <= size && n + 1 < max; i++) {
		if (memcmp(data + i, "\n--\n", 4) == 0) {
			parts[n++] = fuzz_strndup(data + start, i - start);
			start = i + 4;
			i += 3;
		}
	}
	parts[n++] = fuzz_strndup(data + start, size - start);
	return n;
}

/*
 * The piece size a streaming harness feeds its reader in, from bits 0-5 of
 * its control byte: 1..63 bytes, or 0x3f for the whole input at once (at
 * least 1 byte). `size` is the input's size without the control byte.
 */
static inline size_t fuzz_piece_size(uint8_t ctl, size_t size)
{
	size_t bits = ctl & 0x3f;
	if (bits == 0x3f)
		return size ? size : 1;
	return bits + 1;
}

/* Fail loudly: libFuzzer records the input. */
#define FUZZ_CHECK(cond)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                           \
		}                                                                          \
	} while (0)

#endif

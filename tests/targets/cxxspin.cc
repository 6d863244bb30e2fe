// SPDX-License-Identifier: MIT
// A C++ library for the --native demangling test: cxx_spin (C linkage, for ctypes) ->
// pwtest::Spinner::spin(double), busy for the given seconds.
#include <time.h>

namespace pwtest {
volatile unsigned long sink;

class Spinner {
public:
	__attribute__((noinline)) static void spin(double seconds);
};

static double now()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void Spinner::spin(double seconds)
{
	double end = now() + seconds;
	while (now() < end)
		for (int i = 0; i < 20000; i++)
			sink += i;
}
} // namespace pwtest

extern "C" __attribute__((noinline)) void cxx_spin(double seconds)
{
	pwtest::Spinner::spin(seconds);
	pwtest::sink++;
}

// SPDX-License-Identifier: MIT
/* A C extension with a known native call chain for the --native tests:
 * nativeext.outer(cb, seconds, forge) -> ext_outer -> ext_middle -> ext_inner, which
 * busy-spins, then calls cb() back in Python; cb calls nativeext.spin(seconds) ->
 * ext_spin, which busy-spins too. The ext_* functions are static and never inlined or
 * tail-called, so each has its own activation and a stripped copy has no name for any.
 * forge: ext_middle calls ext_inner through a static function named like the eval loop
 * that runs no Python frame: the native view then has one eval activation more than the
 * Python view has entry frames, a mismatch pywalk must count, not ship.
 * nativeext.sleep(seconds) -> ext_sleep_outer -> ext_sleep_inner -> nanosleep: a thread
 * blocked in a system call made from C (off-CPU, trace's syscall probes). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static __attribute__((noinline)) void burn(double seconds)
{
	double end = now() + seconds;

	while (now() < end)
		for (int i = 0; i < 20000; i++)
			sink += (unsigned long)i;
}

static __attribute__((noinline)) PyObject *ext_inner(PyObject *cb, double seconds)
{
	PyObject *r;

	burn(seconds);
	r = PyObject_CallNoArgs(cb);
	sink++; /* keeps the call from being a tail call */
	return r;
}

/* named like a cold part of the eval loop (a static symbol, so no clash with the real one) */
static PyObject *forged_eval(PyObject *cb, double seconds) __asm__("_PyEval_EvalFrameDefault.forged");

static __attribute__((noinline)) PyObject *forged_eval(PyObject *cb, double seconds)
{
	PyObject *r = ext_inner(cb, seconds);

	sink++;
	return r;
}

static __attribute__((noinline)) PyObject *ext_middle(PyObject *cb, double seconds, int forge)
{
	PyObject *r = forge ? forged_eval(cb, seconds) : ext_inner(cb, seconds);

	sink++;
	return r;
}

static __attribute__((noinline)) PyObject *ext_outer(PyObject *cb, double seconds, int forge)
{
	PyObject *r = ext_middle(cb, seconds, forge);

	sink++;
	return r;
}

static PyObject *py_outer(PyObject *self, PyObject *args)
{
	PyObject *cb;
	double seconds;
	int forge;

	(void)self;
	if (!PyArg_ParseTuple(args, "Odp", &cb, &seconds, &forge))
		return NULL;
	return ext_outer(cb, seconds, forge);
}

static __attribute__((noinline)) void ext_spin(double seconds)
{
	burn(seconds);
	sink++;
}

static PyObject *py_spin(PyObject *self, PyObject *args)
{
	double seconds;

	(void)self;
	if (!PyArg_ParseTuple(args, "d", &seconds))
		return NULL;
	ext_spin(seconds);
	Py_RETURN_NONE;
}

static __attribute__((noinline)) void ext_sleep_inner(double seconds)
{
	struct timespec ts = { .tv_sec = (time_t)seconds,
			       .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9) };

	nanosleep(&ts, NULL);
	sink++;
}

static __attribute__((noinline)) void ext_sleep_outer(double seconds)
{
	ext_sleep_inner(seconds);
	sink++;
}

static PyObject *py_sleep(PyObject *self, PyObject *args)
{
	double seconds;

	(void)self;
	if (!PyArg_ParseTuple(args, "d", &seconds))
		return NULL;
	ext_sleep_outer(seconds);
	Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
	{ "outer", py_outer, METH_VARARGS, "ext_outer -> ext_middle -> ext_inner -> cb()" },
	{ "spin", py_spin, METH_VARARGS, "ext_spin: busy for the given seconds" },
	{ "sleep", py_sleep, METH_VARARGS, "ext_sleep_outer -> ext_sleep_inner -> nanosleep" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "nativeext", NULL, -1, methods,
				     NULL, NULL, NULL, NULL };

PyMODINIT_FUNC PyInit_nativeext(void)
{
	return PyModule_Create(&module);
}

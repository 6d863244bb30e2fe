// SPDX-License-Identifier: MIT
/* Test-only CPython extension (3.11+, built against the interpreter's internal headers)
 * that publishes inconsistent frame chains on purpose, so the tests can prove pywalk never
 * ships them. spin(mode, seconds) busy-spins in C with tstate->current_frame pointing at a
 * forged copy of the caller's frame, then restores it. native_empty(seconds) runs a C
 * thread that holds a thread state but no Python frame (3.15: current_frame == base_frame).
 * Never use outside tests: it corrupts the interpreter's view of its own stack. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#if PY_VERSION_HEX >= 0x030E0000
#include <internal/pycore_interpframe_structs.h>
#endif
#include <pthread.h>

/* where the thread's innermost frame is published, and the frame's code reference */
#if PY_VERSION_HEX >= 0x030D0000
#define CURRENT_FRAME(ts) ((ts)->current_frame)
#else
#define CURRENT_FRAME(ts) ((ts)->cframe->current_frame) /* 3.11/3.12 */
#endif
#include <string.h>
#include <time.h>

enum torn_mode {
	MODE_CONSISTENT = 0,	/* control: nothing forged */
	MODE_NULL_PREVIOUS = 1, /* copy of the top frame whose previous is NULL */
	MODE_SKIP = 2,		/* copy whose previous skips the caller's frame */
	MODE_CYCLE = 3,		/* two copies pointing at each other */
	MODE_BAD_OWNER = 4,	/* copy with an owner value no interpreter uses */
	MODE_NULL_CODE = 5,	/* copy with a NULL code reference */
};

/* forged frames live in static memory, as a torn chain's stray frame would not be on the
 * thread's data stack either */
static _PyInterpreterFrame forged[2];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned long burn(double seconds)
{
	double end = now_s() + seconds;
	volatile unsigned long x = 0;

	while (now_s() < end)
		for (int i = 0; i < 10000; i++)
			x += i;
	return x;
}

static PyObject *spin(PyObject *self, PyObject *args)
{
	PyThreadState *ts = PyThreadState_Get();
	_PyInterpreterFrame *top = CURRENT_FRAME(ts);
	int mode;
	double seconds;

	(void)self;
	if (!PyArg_ParseTuple(args, "id", &mode, &seconds))
		return NULL;
	if (!top || !top->previous || !top->previous->previous) {
		PyErr_SetString(PyExc_RuntimeError, "spin needs at least three frames");
		return NULL;
	}
	memcpy(&forged[0], top, sizeof(forged[0]));
	memcpy(&forged[1], top, sizeof(forged[1]));
	switch (mode) {
	case MODE_CONSISTENT:
		break;
	case MODE_NULL_PREVIOUS:
		forged[0].previous = NULL;
		break;
	case MODE_SKIP:
		forged[0].previous = top->previous->previous;
		break;
	case MODE_CYCLE:
		forged[0].previous = &forged[1];
		forged[1].previous = &forged[0];
		break;
	case MODE_BAD_OWNER:
		forged[0].owner = 7;
		break;
	case MODE_NULL_CODE:
#if PY_VERSION_HEX >= 0x030E0000
		forged[0].f_executable.bits = 0;
#elif PY_VERSION_HEX >= 0x030D0000
		forged[0].f_executable = NULL;
#else
		forged[0].f_code = NULL;
#endif
		break;
	default:
		PyErr_SetString(PyExc_ValueError, "unknown mode");
		return NULL;
	}
	if (mode != MODE_CONSISTENT)
		CURRENT_FRAME(ts) = &forged[0];
	/* spin without the GIL, as C code often does: the forged chain stays published in
	 * this thread state while other Python threads run */
	Py_BEGIN_ALLOW_THREADS
	burn(seconds);
	Py_END_ALLOW_THREADS
	CURRENT_FRAME(ts) = top;
	Py_RETURN_NONE;
}

static void *empty_thread(void *arg)
{
	double seconds = *(double *)arg;
	PyGILState_STATE g = PyGILState_Ensure();
	PyThreadState *saved = PyEval_SaveThread();

	/* a thread state with no Python frame, running native code without the GIL */
	burn(seconds);
	PyEval_RestoreThread(saved);
	PyGILState_Release(g);
	return NULL;
}

static double empty_seconds;

static PyObject *native_empty(PyObject *self, PyObject *args)
{
	pthread_t t;

	(void)self;
	if (!PyArg_ParseTuple(args, "d", &empty_seconds))
		return NULL;
	if (pthread_create(&t, NULL, empty_thread, &empty_seconds)) {
		PyErr_SetString(PyExc_OSError, "pthread_create failed");
		return NULL;
	}
	pthread_detach(t);
	Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
	{ "spin", spin, METH_VARARGS, "spin(mode, seconds): busy-spin with a forged chain" },
	{ "native_empty", native_empty, METH_VARARGS,
	  "native_empty(seconds): C thread with a thread state and no frames" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "tornext", NULL, -1, methods };

PyMODINIT_FUNC PyInit_tornext(void)
{
	return PyModule_Create(&module);
}
